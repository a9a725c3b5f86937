/* The WebGPU backend: supports / compile / run over wgpu-native.
 *
 * compile() builds everything once: the lowering of each GPU step into
 * dispatches, pipelines (cached in the backend per kernel and override
 * constants), the arena buffer laid out by the memory plan, constant
 * (weight) buffers uploaded once, one uniform buffer holding every
 * dispatch's Params, one bind group per dispatch, a scratch buffer sized to
 * the largest step's need, and one staging buffer for read-backs.
 *
 * The runtime (runtime/exec.c) schedules the program's segments (planned
 * by plan/segments.c) and owns the host side of the transfers: upload()
 * writes host bytes into the arena (queue writes, ordered before the next
 * submit); run_segment() runs one GPU segment: one command encoder, one
 * compute pass, the copies of its read-backs into the staging buffers, one
 * submit and one map, after which the read-backs go to the host memory the
 * runtime names. CPU segments run on the CPU backend. A plan without CPU
 * steps is exactly one segment: one encoder, one pass, one submit. Nothing
 * is allocated on the GPU per run.
 * Kernels that detect bad run-time input (index kernels: an index out of
 * range) raise the status words (WG_STATUS in webgpu.h), which their
 * segment clears first and reads back with its outputs; a raised status
 * fails the run naming the node (status_error).
 *
 * Binding convention (see README.md): every storage operand is its own
 * read_write binding window, bound at its byte offset aligned down to
 * minStorageBufferOffsetAlignment; the remaining element offset goes into
 * the dispatch's Params. Binding 0 is the Params uniform. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/webgpu/webgpu_device.h"
#include "backend/webgpu/wgsl_gen.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/options.h"
#include "base/platform.h"
#include "base/runctl.h"
#include "base/tensor.h"
#include "rlx/half.h"

/* ------------------------------------------------------------ types */

typedef struct rdisp {
    WGPUComputePipeline pipe; /* borrowed from the backend's cache */
    WGPUBindGroup bg;
    uint32_t groups[3];
    int step;
    const char *kernel;
    bool reports; /* binds the status words (wg_bind_status) */
} rdisp;

/* The GPU side of a program segment (p->segs[k]): its dispatches, where
 * its read-backs land in the staging buffers, and its recorded commands. */
typedef struct segment {
    bool gpu;
    size_t s0, s1; /* steps [s0, s1) */
    size_t d0, d1; /* dispatches [d0, d1) */
    const rlx_xfer *rd; /* read-backs after the segment (the program's down list) */
    size_t n_rd;
    uint64_t *rd_off;   /* per read-back: byte offset in its staging buffer */
    size_t *rd_buf;     /* per read-back: which staging buffer */
    uint64_t *staging_used; /* bytes used in each staging buffer, n_staging of them */
    size_t n_staging;
    /* the next run's commands, recorded while this run's ran on the GPU
     * (steady state without timing: the commands never change) */
    WGPUCommandBuffer next_cb;
    /* a dispatch binds the status words: the segment's commands clear them
     * first and copy them to staging buffer status_buf at status_off last */
    bool status;
    size_t status_buf;
    uint64_t status_off;
} segment;

struct rlx_backend_exe {
    wg_backend *b;
    const rlx_program *p;
    /* the arena: n_arena buffers of arena_chunk bytes (the last may be
     * shorter); the memory plan keeps every tensor inside one of them */
    WGPUBuffer *arena;
    uint64_t *arena_len;
    size_t n_arena;
    uint64_t arena_chunk;
    WGPUBuffer scratch, params;
    uint64_t arena_size, scratch_size;
    /* WG_STATUS_WORDS u32 that kernels raise on bad run-time input (an
     * index out of range); NULL when no dispatch binds them */
    WGPUBuffer status;
    /* the steps' host tables (wg_table): step s's words at byte
     * table_off[s]; NULL when no step has one */
    WGPUBuffer tables;
    uint64_t tables_size, *table_off;
    /* read-backs land in staging buffers of at most maxBufferSize bytes */
    WGPUBuffer *staging;
    uint64_t *staging_len;
    size_t n_staging;
    WGPUBuffer *weights;
    uint64_t *weight_size;
    size_t n_weights;
    int *konst_buf;        /* per (value, format) at 2 * value + fmt: weight buffer index or -1 */
    uint64_t *konst_off;   /* per (value, format): byte offset in it */
    rdisp *disp;
    size_t n_disp;
    char checks_note[192]; /* stats.checks_note */
    segment *seg;          /* per program segment */
    size_t n_seg;
    size_t last_gpu;       /* the last GPU segment */
    /* a run with error scopes succeeded: later runs record the same
     * commands and skip the scopes (RLX_GPU_VALIDATE=1 keeps them) */
    bool validated;
    rlx_exe_stats stats;
    /* timing (set_timing): timestamp queries, their resolve and read-back
     * buffers (the slices go to the runtime's rlx_prof) */
    int timing;
    bool ts_inside; /* per-dispatch timestamps inside one pass (else a pass per dispatch) */
    WGPUQuerySet qset;
    uint32_t q_cap;
    WGPUBuffer q_resolve, q_read;
    bool prerecord; /* record the next run's commands during this one (RLX_GPU_PRERECORD, default on) */
    wg_src notes;   /* the lowerings' notes, one line per step ("node 'g' (Gemm): ..."), for stats.notes */
};

static const char *step_desc(const rlx_program *p, int s) {
    return rlx_node_desc(&p->g->nodes[p->steps[s]]);
}

static uint64_t up4(uint64_t x) { return (x + 3) & ~(uint64_t)3; }
static uint64_t up_to(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* ------------------------------------------------------------ supports */

static bool node_has_f16(const rlx_graph *g, const rlx_node *n) {
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const rlx_value *v = i < n->n_in ? rlx_node_input(g, n, i) : rlx_node_output(g, n, i - n->n_in);
        if (v && v->dtype == RLX_DTYPE_F16) return true;
    }
    return false;
}

/* A node runs natively when its lowering succeeds. Option gpu.trace prints
 * why a node falls back to the CPU. */
static bool wg_supports(rlx_backend *be, const rlx_graph *g, const rlx_node *n) {
    wg_backend *b = (wg_backend *)be;
    /* string elements are host pointers: nodes with string values run on
     * the CPU (their bytes still travel unchanged where a transfer moves them) */
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        const rlx_value *v = i < n->n_in ? rlx_node_input(g, n, i) : rlx_node_output(g, n, i - n->n_in);
        if (v && v->dtype == RLX_DTYPE_STRING) {
            if (b->caps.cfg->gpu_trace)
                rlx_log(RLX_LOG_DEBUG, "webgpu: %s runs on the CPU: string values stay on the host", rlx_node_desc(n));
            return false;
        }
    }
    wg_lower L;
    rlx_status st = wg_lower_node(g, n, &b->caps, &L);
    if (st && b->caps.cfg->gpu_trace)
        rlx_log(RLX_LOG_DEBUG, "webgpu: %s runs on the CPU: %s", rlx_node_desc(n),
                st == RLX_ERR_UNSUPPORTED && L.why[0] ? L.why : rlx_last_error());
    wg_lower_free(&L);
    return st == RLX_OK;
}

/* ------------------------------------------------------------ buffers */

/* Creates a buffer in an error scope of its own: a device that refuses it
 * (out of memory, or a validation error such as a size past its
 * maxBufferSize) fails here with RLX_ERR_OUT_OF_MEMORY, the buffer's label
 * and size named, instead of at its first use. */
static rlx_status make_buffer(wg_backend *b, uint64_t size, WGPUBufferUsage usage, const char *label,
                              WGPUBuffer *out) {
    *out = NULL;
    if (size > b->caps.max_buffer)
        return rlx_fail(RLX_ERR_UNSUPPORTED,
                        "the %s buffer needs %llu bytes, more than the adapter's maxBufferSize of %llu bytes "
                        "(splitting it is not implemented yet)",
                        label, (unsigned long long)size, (unsigned long long)b->caps.max_buffer);
    WGPUBufferDescriptor d;
    memset(&d, 0, sizeof d);
    d.label = wg_sv(label);
    d.size = up_to(size ? size : 16, 16);
    d.usage = usage;
    if (strcmp(label, "arena") == 0 && wg_fault_take(WG_FAULT_BUFFER)) /* tests: past the device's limit */
        d.size = up_to(b->limits.maxBufferSize + 1, 16);
    char what[160];
    snprintf(what, sizeof what, "compiling: creating the %llu-byte %s buffer", (unsigned long long)d.size, label);
    wg_scope_push(b);
    *out = wgpuDeviceCreateBuffer(b->dev, &d);
    rlx_status st = wg_scope_pop(b, what);
    /* the size is the only thing that varies: a buffer the device refuses
     * is memory it cannot give */
    if (st == RLX_ERR_DEVICE) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", rlx_last_error());
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s", msg);
    }
    if (!st && !*out) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "%s: no buffer returned", what);
    return st;
}

static void release_buffer(WGPUBuffer *buf) {
    if (!*buf) return;
    wgpuBufferDestroy(*buf);
    wgpuBufferRelease(*buf);
    *buf = NULL;
}

/* queue write of `bytes` host bytes; the tail is padded to 4 bytes */
static rlx_status write_padded(struct rlx_backend_exe *e, WGPUBuffer buf, uint64_t off, const void *src, uint64_t bytes) {
    if (!bytes) return RLX_OK;
    uint64_t body = bytes & ~(uint64_t)3;
    if (body) wgpuQueueWriteBuffer(e->b->queue, buf, off, src, (size_t)body);
    if (body != bytes) {
        unsigned char tail[4] = { 0, 0, 0, 0 };
        memcpy(tail, (const unsigned char *)src + body, (size_t)(bytes - body));
        wgpuQueueWriteBuffer(e->b->queue, buf, off + body, tail, 4);
    }
    return RLX_OK;
}

/* The arena buffer holding arena byte offset `off`, and the offset in it. */
static WGPUBuffer arena_at(const struct rlx_backend_exe *e, uint64_t off, uint64_t *local, uint64_t *len) {
    size_t k = (size_t)(off / e->arena_chunk);
    if (k >= e->n_arena) k = e->n_arena - 1;
    *local = off - (uint64_t)k * e->arena_chunk;
    if (len) *len = e->arena_len[k];
    return e->arena[k];
}

/* Writes host bytes to the arena at byte offset off (inside one buffer). */
static rlx_status arena_write(struct rlx_backend_exe *e, uint64_t off, const void *src, uint64_t bytes) {
    uint64_t local;
    WGPUBuffer buf = arena_at(e, off, &local, NULL);
    return write_padded(e, buf, local, src, bytes);
}

/* ------------------------------------------------------------ operands */

/* Resolves operand i of dispatch d to a binding window; writes the element
 * remainder into the Params word. */
static rlx_status resolve(struct rlx_backend_exe *e, int step, wg_dispatch *d, int i, WGPUBindGroupEntry *entry) {
    const rlx_program *p = e->p;
    const wg_caps *c = &e->b->caps;
    wg_operand o = d->bind[i];
    WGPUBuffer buf;
    uint64_t base, cap;
    const char *vname = "scratch";
    if (o.value == WG_SCRATCH) {
        buf = e->scratch;
        base = 0;
        cap = e->scratch_size;
    } else if (o.value == WG_TABLE) {
        if (!e->tables) return rlx_fail(RLX_ERR_INTERNAL, "%s: kernel '%s': no table buffer", step_desc(p, step), d->kernel);
        vname = "table";
        buf = e->tables;
        base = e->table_off[step];
        cap = e->tables_size;
    } else if (o.value == WG_STATUS) {
        if (!e->status) return rlx_fail(RLX_ERR_INTERNAL, "%s: kernel '%s': no status buffer", step_desc(p, step), d->kernel);
        vname = "status";
        buf = e->status;
        base = 0;
        cap = WG_STATUS_WORDS * 4;
    } else {
        if (o.value < 0 || (size_t)o.value >= p->g->n_values)
            return rlx_fail(RLX_ERR_INTERNAL, "%s: kernel '%s': operand %d has no value", step_desc(p, step), d->kernel, i);
        const rlx_value *v = &p->g->values[o.value];
        vname = v->name;
        if (v->konst) {
            int wb = e->konst_buf[2 * o.value + o.fmt];
            if (wb < 0)
                return rlx_fail(RLX_ERR_INTERNAL, "%s: constant '%s' was not uploaded", step_desc(p, step), v->name);
            buf = e->weights[wb];
            base = e->konst_off[2 * o.value + o.fmt];
            cap = e->weight_size[wb];
        } else {
            uint64_t off = p->mem.offset[o.value];
            if (off == RLX_NO_OFFSET)
                return rlx_fail(RLX_ERR_INTERNAL, "%s: value '%s' has no arena offset", step_desc(p, step), v->name);
            buf = arena_at(e, off, &base, &cap);
        }
    }
    uint64_t es = (uint64_t)wg_operand_esize(p->g, d, i); /* 2: halves of an f16 value (array<f16>) */
    uint64_t pos = base + o.elem_off * es;
    uint64_t aligned = pos - pos % c->storage_align;
    /* whole 16-byte units: kernels may declare operands as arrays of vec4
     * (buffers and tensor placements are 16-byte multiples, so the rounded
     * window stays inside the buffer; max_binding is a multiple of 16, so
     * the rounding never makes a window that wg_lower_node accepted too
     * large) */
    uint64_t size = up_to((pos - aligned) + (o.elems ? o.elems : 1) * es, 16);
    if (size > c->max_binding) /* wg_lower_node declines such windows */
        return rlx_fail(RLX_ERR_INTERNAL,
                        "%s: kernel '%s': operand %d ('%s') needs a %llu-byte storage binding, more than the limit of "
                        "%llu bytes (maxStorageBufferBindingSize, or RLX_MAX_BINDING_BYTES)",
                        step_desc(p, step), d->kernel, i, vname, (unsigned long long)size,
                        (unsigned long long)c->max_binding);
    if (aligned + size > cap)
        return rlx_fail(RLX_ERR_INTERNAL, "%s: kernel '%s': operand %d ('%s') window [%llu, +%llu) is outside its buffer",
                        step_desc(p, step), d->kernel, i, vname, (unsigned long long)aligned, (unsigned long long)size);
    d->params[d->off_slot[i]] = (uint32_t)((pos - aligned) / es);
    memset(entry, 0, sizeof *entry);
    entry->binding = (uint32_t)(i + 1);
    entry->buffer = buf;
    entry->offset = aligned;
    entry->size = size;
    return RLX_OK;
}

/* ------------------------------------------------------------ staging */

/* The GPU side of the program's segments: dispatch ranges, status words,
 * and the staging layout of the read-backs: in order, a new staging buffer
 * when one would pass maxBufferSize (no tensor is larger: the plan sees to
 * it), the status words after them. */
/* Records every dispatch of e once, with zero workgroups (no invocation
 * runs, nothing is written), submits and waits: a driver that compiles a
 * pipeline's shader at its first dispatch rather than at creation does it
 * now, inside compile, and the first run finds it done. lavapipe does
 * (llvmpipe JIT-compiles a compute shader when it is first launched, and
 * again for each set of Params values it inlines into branch conditions,
 * hence every dispatch and not one per pipeline); NVIDIA's driver compiles
 * at pipeline creation, and there this costs one empty submit. */
static rlx_status warm_pipelines(struct rlx_backend_exe *e) {
    wg_backend *b = e->b;
    if (!e->n_disp) return RLX_OK;
    static const char what[] = "compile: the first dispatch of each kernel (option gpu.warm_pipelines)";
    wg_scope_push(b);
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(b->dev, NULL);
    WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(enc, NULL);
    WGPUComputePipeline cur = NULL;
    for (size_t i = 0; i < e->n_disp; i++) {
        const rdisp *r = &e->disp[i];
        if (r->pipe != cur) wgpuComputePassEncoderSetPipeline(pass, r->pipe);
        cur = r->pipe;
        wgpuComputePassEncoderSetBindGroup(pass, 0, r->bg, 0, NULL);
        wgpuComputePassEncoderDispatchWorkgroups(pass, 0, 0, 0);
    }
    wgpuComputePassEncoderEnd(pass);
    wgpuComputePassEncoderRelease(pass);
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
    wgpuCommandEncoderRelease(enc);
    rlx_status st = wg_scope_pop(b, what);
    if (!st && !cb) st = rlx_fail(RLX_ERR_DEVICE, "%s: no command buffer", what);
    /* wgpu-native aborts on a submit to a lost device: find out first */
    if (!st && wg_device_check_lost(b)) st = wg_lost_error(b, what);
    if (st) {
        if (cb) wgpuCommandBufferRelease(cb);
        return st;
    }
    wg_scope_push(b);
    wgpuQueueSubmit(b->queue, 1, &cb);
    wgpuCommandBufferRelease(cb);
    RLX_TRY(wg_scope_pop(b, what));
    return wg_queue_wait(b, what);
}

static rlx_status plan_staging(struct rlx_backend_exe *e, const size_t *step_d0, const size_t *step_d1) {
    const rlx_program *p = e->p;
    e->n_seg = p->n_segs;
    e->seg = calloc(p->n_segs + 1, sizeof *e->seg);
    if (!e->seg) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    uint64_t limit = e->b->caps.max_buffer ? e->b->caps.max_buffer : UINT64_MAX;
    for (size_t k = 0; k < e->n_seg; k++) {
        const rlx_segment *ps = &p->segs[k];
        segment *sg = &e->seg[k];
        sg->gpu = ps->on == RLX_STEP_GPU;
        sg->s0 = ps->s0;
        sg->s1 = ps->s1;
        if (!sg->gpu) continue;
        e->last_gpu = k;
        sg->d0 = step_d0[ps->s0];
        sg->d1 = step_d1[ps->s1 - 1];
        sg->rd = ps->down;
        sg->n_rd = ps->n_down;
        for (size_t i = sg->d0; i < sg->d1; i++) sg->status |= e->disp[i].reports;
        if (!sg->n_rd && !sg->status) continue;
        sg->staging_used = calloc(sg->n_rd + 1, sizeof *sg->staging_used);
        sg->rd_off = calloc(sg->n_rd + 1, sizeof *sg->rd_off);
        sg->rd_buf = calloc(sg->n_rd + 1, sizeof *sg->rd_buf);
        if (!sg->staging_used || !sg->rd_off || !sg->rd_buf) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        size_t buf = 0;
        uint64_t off = 0;
        for (size_t i = 0; i < sg->n_rd; i++) {
            uint64_t sz = up_to(sg->rd[i].bytes ? sg->rd[i].bytes : 4, 16);
            if (off && off + sz > limit) {
                buf++;
                off = 0;
            }
            sg->rd_buf[i] = buf;
            sg->rd_off[i] = off;
            off += sz;
            sg->staging_used[buf] = off;
        }
        if (sg->status) { /* the status words, after the read-backs */
            if (off && off + WG_STATUS_WORDS * 4 > limit) {
                buf++;
                off = 0;
            }
            sg->status_buf = buf;
            sg->status_off = off;
            off += WG_STATUS_WORDS * 4;
            sg->staging_used[buf] = off;
        }
        sg->n_staging = buf + 1;
        if (sg->n_staging > e->n_staging) {
            uint64_t *len = realloc(e->staging_len, sg->n_staging * sizeof *len);
            if (!len) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
            for (size_t j = e->n_staging; j < sg->n_staging; j++) len[j] = 0;
            e->staging_len = len;
            e->n_staging = sg->n_staging;
        }
        for (size_t j = 0; j < sg->n_staging; j++)
            if (sg->staging_used[j] > e->staging_len[j]) e->staging_len[j] = sg->staging_used[j];
    }
    return RLX_OK;
}

/* ------------------------------------------------------------ compile */

static void wg_destroy_exe(rlx_backend_exe *e);

/* Submits the queued buffer writes (an empty command buffer carries them)
 * and waits until the queue is idle, which frees their staging memory.
 * Skipped on a lost device (wgpu-native aborts on a submit to one); the
 * next step reports the loss. */
static void flush_uploads(wg_backend *b) {
    if (wg_device_check_lost(b)) return;
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(b->dev, NULL);
    if (!enc) return;
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
    wgpuCommandEncoderRelease(enc);
    if (!cb) return;
    wgpuQueueSubmit(b->queue, 1, &cb);
    wgpuCommandBufferRelease(cb);
    wgpuDevicePoll(b->dev, true, NULL);
}

static rlx_status upload_konsts(struct rlx_backend_exe *e, const wg_lower *low, size_t n_low) {
    wg_backend *b = e->b;
    const rlx_graph *g = e->p->g;
    uint64_t cap = b->caps.max_buffer;
    /* place every constant operand: 256-byte aligned, buffers up to maxBufferSize */
    uint64_t cur = 0;
    int nb = 0;
    for (size_t s = 0; s < n_low; s++)
        for (size_t k = 0; k < low[s].n_d; k++) {
            const wg_dispatch *d = &low[s].d[k];
            for (int i = 0; i < d->n_bind; i++) {
                int v = d->bind[i].value, fmt = d->bind[i].fmt;
                if (v < 0 || !g->values[v].konst || e->konst_buf[2 * v + fmt] >= 0) continue;
                const rlx_tensor *t = g->values[v].konst;
                if (fmt == WG_FMT_F16 && t->dtype != RLX_DTYPE_F32)
                    return rlx_fail(RLX_ERR_INTERNAL, "constant '%s' (%s) bound as f16", g->values[v].name,
                                    rlx_dtype_name(t->dtype));
                uint64_t raw = fmt == WG_FMT_F16 ? t->nbytes / 2 : t->nbytes;
                /* 16-byte multiples: kernels may read operands as vec4 */
                uint64_t bytes = up_to(raw ? raw : 4, 16);
                if (bytes > cap)
                    return rlx_fail(RLX_ERR_UNSUPPORTED, "constant '%s' (%llu bytes) exceeds maxBufferSize (%llu bytes)",
                                    g->values[v].name, (unsigned long long)bytes, (unsigned long long)cap);
                uint64_t off = up_to(cur, RLX_ARENA_ALIGN);
                if (nb == 0 || off + bytes > cap) {
                    if (nb) e->weight_size[nb - 1] = cur;
                    nb++;
                    off = 0;
                }
                e->konst_buf[2 * v + fmt] = nb - 1;
                e->konst_off[2 * v + fmt] = off;
                cur = off + bytes;
            }
        }
    if (nb) e->weight_size[nb - 1] = cur;
    e->n_weights = (size_t)nb;
    for (int i = 0; i < nb; i++) {
        /* whole 16-byte vec4s (constants are placed as 16-byte multiples,
         * cap is a multiple of 256), so that vec4 windows stay inside */
        e->weight_size[i] = up_to(e->weight_size[i] ? e->weight_size[i] : 16, 16);
        RLX_TRY(make_buffer(b, e->weight_size[i], WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst, "weights",
                            &e->weights[i]));
    }
    /* wgpuQueueWriteBuffer copies into staging memory that lives until the
     * next submit completes: all weights written at once would stage a
     * second copy of them. Every UPLOAD_CHUNK bytes the writes are flushed
     * and waited for, so staging stays below that bound. The host tensors
     * stay: they are the model's (shared by its sessions, and needed by
     * CPU steps, other plans and new shapes). */
    enum { UPLOAD_CHUNK = 64 << 20 };
    uint64_t staged = 0;
    uint16_t *half = NULL;
    size_t half_cap = 0;
    for (size_t v = 0; v < g->n_values; v++) {
        const rlx_tensor *t = g->values[v].konst;
        if (staged >= UPLOAD_CHUNK) {
            flush_uploads(b);
            staged = 0;
        }
        if (e->konst_buf[2 * v] >= 0 || e->konst_buf[2 * v + 1] >= 0) staged += t->nbytes;
        if (e->konst_buf[2 * v] >= 0)
            RLX_TRY(write_padded(e, e->weights[e->konst_buf[2 * v]], e->konst_off[2 * v], t->data, t->nbytes));
        if (e->konst_buf[2 * v + 1] >= 0) {
            size_t n = t->nbytes / 4;
            if (n > half_cap) {
                uint16_t *nh = realloc(half, (n + 1) * sizeof *half);
                if (!nh) {
                    free(half);
                    return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory converting '%s' to f16", g->values[v].name);
                }
                half = nh;
                half_cap = n;
            }
            const float *f = t->data;
            for (size_t i = 0; i < n; i++) half[i] = rlx_f32_to_f16(f[i]);
            rlx_status st = write_padded(e, e->weights[e->konst_buf[2 * v + 1]], e->konst_off[2 * v + 1], half, n * 2);
            if (st) {
                free(half);
                return st;
            }
        }
    }
    free(half);
    return RLX_OK;
}

/* The steps' wg_table words in one constant buffer, each step's at a
 * 256-byte aligned offset (a multiple of minStorageBufferOffsetAlignment). */
static rlx_status upload_tables(struct rlx_backend_exe *e, const wg_lower *low, size_t n_low) {
    uint64_t cur = 0;
    e->table_off = calloc(n_low + 1, sizeof *e->table_off);
    if (!e->table_off) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t s = 0; s < n_low; s++) {
        if (!low[s].n_table) continue;
        e->table_off[s] = up_to(cur, RLX_ARENA_ALIGN);
        cur = e->table_off[s] + up_to(low[s].n_table * 4, 16);
    }
    if (!cur) return RLX_OK;
    if (cur > e->b->caps.max_buffer)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "the steps' tables (%llu bytes) exceed maxBufferSize", (unsigned long long)cur);
    e->tables_size = cur;
    RLX_TRY(make_buffer(e->b, cur, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst, "tables", &e->tables));
    for (size_t s = 0; s < n_low; s++)
        if (low[s].n_table) RLX_TRY(write_padded(e, e->tables, e->table_off[s], low[s].table, low[s].n_table * 4));
    return RLX_OK;
}

static rlx_status poison(struct rlx_backend_exe *e, WGPUBuffer buf, uint64_t size) {
    enum { CHUNK = 1 << 20 };
    uint32_t *nan = malloc(CHUNK);
    if (!nan) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    /* a NaN whose four bytes are each neither 0 nor 1, so that an unwritten bool (one byte per
     * element) shows too: 0x7fc00000 has bytes 00 00 c0 7f, and a bool left at byte 0 or 1 of a
     * word read as false */
    for (size_t i = 0; i < CHUNK / 4; i++) nan[i] = 0x7fffffffu;
    for (uint64_t off = 0; off < size; off += CHUNK) {
        uint64_t n = size - off < CHUNK ? size - off : CHUNK;
        wgpuQueueWriteBuffer(e->b->queue, buf, off, nan, (size_t)(n & ~(uint64_t)3));
    }
    free(nan);
    return RLX_OK;
}

static rlx_status compile_locked(rlx_backend *be, const rlx_program *p, rlx_backend_exe **out) {
    *out = NULL;
    wg_backend *b = (wg_backend *)be;
    if (b->sh->lost) return wg_lost_error(b, "compiling");
    const rlx_graph *g = p->g;
    struct rlx_backend_exe *e = calloc(1, sizeof *e);
    if (!e) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    e->b = b;
    e->p = p;
    e->prerecord = b->caps.cfg->gpu_prerecord;
    rlx_status st = RLX_OK;
    wg_lower *low = calloc(p->n_steps + 1, sizeof *low);
    size_t *d0 = calloc(p->n_steps + 1, sizeof *d0), *d1 = calloc(p->n_steps + 1, sizeof *d1);
    uint8_t *params_host = NULL;
    e->konst_buf = malloc((2 * g->n_values + 2) * sizeof *e->konst_buf);
    e->konst_off = calloc(2 * g->n_values + 2, sizeof *e->konst_off);
    e->weights = calloc(g->n_values + 1, sizeof *e->weights);
    e->weight_size = calloc(g->n_values + 1, sizeof *e->weight_size);
    if (!low || !d0 || !d1 || !e->konst_buf || !e->konst_off || !e->weights || !e->weight_size) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (size_t v = 0; v < 2 * g->n_values + 2; v++) e->konst_buf[v] = -1;

    /* 1. lower every GPU step */
    double t_phase = rlx_now_seconds();
    double pipes_s0 = b->sh->pipelines_s;
    size_t pipes_n0 = b->sh->pipes_created;
    uint64_t scratch = 0;
    bool need_status = false;
    for (size_t s = 0; s < p->n_steps; s++) {
        d0[s] = d1[s] = e->n_disp;
        if (p->step_on[s] != RLX_STEP_GPU) continue;
        const rlx_node *n = &g->nodes[p->steps[s]];
        st = wg_lower_node(g, n, &b->caps, &low[s]);
        if (st == RLX_ERR_UNSUPPORTED) st = rlx_fail(RLX_ERR_INTERNAL, "%s: lowering declined at compile: %s", rlx_node_desc(n), low[s].why);
        if (st) goto done;
        e->n_disp += low[s].n_d;
        d1[s] = e->n_disp;
        if (low[s].note[0]) wg_src_printf(&e->notes, "%s: %s\n", rlx_node_desc(n), low[s].note);
        if (b->caps.cfg->gpu_trace) {
            wg_src line = { 0 };
            wg_src_printf(&line, "webgpu: step %zu %s:", s, rlx_node_desc(n));
            for (size_t k = 0; k < low[s].n_d; k++)
                wg_src_printf(&line, " %s[%u,%u]", low[s].d[k].kernel, low[s].d[k].groups[0], low[s].d[k].groups[1]);
            if (low[s].scratch_elems)
                wg_src_printf(&line, " (scratch %llu elements)", (unsigned long long)low[s].scratch_elems);
            rlx_log(RLX_LOG_DEBUG, "%s", line.s ? line.s : "");
            wg_src_free(&line);
        }
        if (low[s].scratch_elems > scratch) scratch = low[s].scratch_elems;
        for (size_t k = 0; k < low[s].n_d; k++) need_status |= low[s].d[k].reports;
    }
    e->disp = calloc(e->n_disp + 1, sizeof *e->disp);
    if (!e->disp) {
        st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }

    e->stats.lower_s = rlx_now_seconds() - t_phase;
    t_phase = rlx_now_seconds();
    wg_scope_push(b);
    /* 2. buffers: arena (split where the plan says; host-only values, past
     * mem.device_bytes, have no device copy), scratch, weights */
    e->arena_size = up_to(p->mem.device_bytes ? p->mem.device_bytes : 256, 256);
    e->arena_chunk = p->mem.buffer_limit ? p->mem.buffer_limit : e->arena_size;
    if (e->arena_chunk > e->arena_size) e->arena_chunk = e->arena_size;
    e->n_arena = (size_t)((e->arena_size + e->arena_chunk - 1) / e->arena_chunk);
    e->arena = calloc(e->n_arena, sizeof *e->arena);
    e->arena_len = calloc(e->n_arena, sizeof *e->arena_len);
    if (!e->arena || !e->arena_len) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t k = 0; k < e->n_arena && !st; k++) {
        uint64_t at = (uint64_t)k * e->arena_chunk;
        e->arena_len[k] = e->arena_size - at < e->arena_chunk ? e->arena_size - at : e->arena_chunk;
        st = make_buffer(b, e->arena_len[k], WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst,
                         "arena", &e->arena[k]);
    }
    if (!st && e->n_arena > 1 && b->caps.cfg->gpu_trace)
        rlx_log(RLX_LOG_DEBUG, "webgpu: the %llu-byte arena is split into %zu buffers of up to %llu bytes",
                (unsigned long long)e->arena_size, e->n_arena, (unsigned long long)e->arena_chunk);
    if (!st && scratch) {
        e->scratch_size = up_to(scratch * 4, 256);
        st = make_buffer(b, e->scratch_size, WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst, "scratch", &e->scratch);
    }
    if (!st && need_status)
        st = make_buffer(b, WG_STATUS_WORDS * 4, WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst,
                         "status", &e->status);
    if (!st) st = upload_tables(e, low, p->n_steps);
    if (!st) st = upload_konsts(e, low, p->n_steps);
    if (!st && b->caps.cfg->gpu_poison) {
        for (size_t k = 0; k < e->n_arena && !st; k++) st = poison(e, e->arena[k], e->arena_len[k]);
        if (!st && e->scratch) st = poison(e, e->scratch, e->scratch_size);
    }
    /* 3. the Params of every dispatch in one uniform buffer */
    uint64_t ua = b->caps.uniform_align, params_size = 0;
    for (size_t s = 0; s < p->n_steps && !st; s++)
        for (size_t k = 0; k < low[s].n_d; k++) params_size = up_to(params_size, ua) + up_to((uint64_t)low[s].d[k].n_params * 4, 16) + (low[s].d[k].n_params ? 0 : 16);
    params_size = up_to(params_size ? params_size : 16, 16);
    if (!st) params_host = calloc(1, (size_t)params_size);
    if (!st && !params_host) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    if (!st) st = make_buffer(b, params_size, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "params", &e->params);
    rlx_status sst = wg_scope_pop(b, "allocating GPU buffers");
    if (!st) st = sst;
    if (st) goto done;
    e->stats.buffers_s = rlx_now_seconds() - t_phase;
    t_phase = rlx_now_seconds();

    /* 4. pipelines and bind groups (each in an error scope that names the
     * step and kernel) */
    uint64_t poff = 0;
    bool progress = rlx_config_progress(b->caps.cfg);
    for (size_t s = 0; s < p->n_steps && !st; s++) {
        for (size_t k = 0; k < low[s].n_d && !st; k++) {
            wg_dispatch *d = &low[s].d[k];
            rdisp *r = &e->disp[d0[s] + k];
            if (progress && (d0[s] + k) % 16 == 0)
                rlx_log(RLX_LOG_PROGRESS, "rlx: compiling: GPU kernels %zu/%zu", d0[s] + k, e->n_disp);
            r->step = (int)s;
            r->kernel = d->kernel;
            r->reports = d->reports;
            if (d->reports) d->params[d->tag_slot] = 0xffffffffu - (uint32_t)s;
            memcpy(r->groups, d->groups, sizeof r->groups);
            if (wg_fault_take(WG_FAULT_DISPATCH)) r->groups[0] = b->caps.max_groups_per_dim + 1; /* tests */
            WGPUBindGroupEntry ent[WG_MAX_BINDINGS + 1];
            for (int i = 0; i < d->n_bind && !st; i++) st = resolve(e, (int)s, d, i, &ent[i + 1]);
            if (st) break;
            poff = up_to(poff, ua);
            uint64_t psz = d->n_params ? up_to((uint64_t)d->n_params * 4, 16) : 16;
            memcpy(params_host + poff, d->params, (size_t)d->n_params * 4);
            memset(&ent[0], 0, sizeof ent[0]);
            ent[0].binding = 0;
            ent[0].buffer = e->params;
            ent[0].offset = poff;
            ent[0].size = psz;
            poff += psz;
            /* a stop (time limit, terminate) between pipeline creations;
             * one creation (the driver's shader compile) is not interrupted */
            if (rlx_run_stopped(b->caps.cfg->run)) {
                st = rlx_fail_prefix(rlx_run_stop_error(b->caps.cfg->run),
                                     "compiling a plan (GPU pipelines, before kernel %zu of %zu, %s): ", d0[s] + k + 1,
                                     e->n_disp, step_desc(p, (int)s));
                break;
            }
            st = wg_pipeline_get(b, d, step_desc(p, (int)s), &r->pipe);
            if (st) break;
            char what[400];
            snprintf(what, sizeof what, "%s: kernel '%s': creating its bind group", step_desc(p, (int)s), d->kernel);
            wg_scope_push(b);
            WGPUBindGroupLayout lay = wgpuComputePipelineGetBindGroupLayout(r->pipe, 0);
            WGPUBindGroupDescriptor bd;
            memset(&bd, 0, sizeof bd);
            bd.label = wg_sv(d->kernel);
            bd.layout = lay;
            bd.entryCount = (size_t)d->n_bind + 1;
            bd.entries = ent;
            r->bg = wgpuDeviceCreateBindGroup(b->dev, &bd);
            if (lay) wgpuBindGroupLayoutRelease(lay);
            st = wg_scope_pop(b, what);
        }
    }
    if (st) goto done;
    wgpuQueueWriteBuffer(b->queue, e->params, 0, params_host, (size_t)params_size);
    e->stats.pipelines_s = b->sh->pipelines_s - pipes_s0;
    e->stats.n_pipelines_new = b->sh->pipes_created - pipes_n0;
    e->stats.bind_groups_s = rlx_now_seconds() - t_phase - e->stats.pipelines_s;
    size_t n_distinct = 0;
    for (size_t i = 0; i < e->n_disp; i++) { /* distinct pipelines used */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) seen = e->disp[j].pipe == e->disp[i].pipe;
        e->stats.n_pipelines_reused += !seen;
        n_distinct += !seen;
        e->stats.n_pipelines_unchecked += !seen && wg_pipeline_unchecked(b, e->disp[i].pipe);
    }
    wg_runtime_checks_note(b, n_distinct, e->stats.n_pipelines_unchecked, e->checks_note, sizeof e->checks_note);
    e->stats.checks_note = e->checks_note;
    e->stats.n_pipelines_reused -= e->stats.n_pipelines_new < e->stats.n_pipelines_reused ? e->stats.n_pipelines_new
                                                                                          : e->stats.n_pipelines_reused;
    if (b->caps.cfg->gpu_warm_pipelines && rlx_run_stopped(b->caps.cfg->run)) {
        st = rlx_fail_prefix(rlx_run_stop_error(b->caps.cfg->run), "compiling a plan (before the first dispatch of each GPU kernel): ");
        goto done;
    }
    if (b->caps.cfg->gpu_warm_pipelines) { /* one submit: not interrupted */
        t_phase = rlx_now_seconds();
        st = warm_pipelines(e);
        if (st) goto done;
        e->stats.driver_s = rlx_now_seconds() - t_phase;
        e->stats.pipelines_s += e->stats.driver_s;
    }

    /* 5. the segments' dispatches and staging */
    st = plan_staging(e, d0, d1);
    if (st) goto done;
    wg_scope_push(b);
    if (e->n_staging) {
        e->staging = calloc(e->n_staging, sizeof *e->staging);
        if (!e->staging) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t j = 0; j < e->n_staging && !st; j++)
        st = make_buffer(b, e->staging_len[j] ? e->staging_len[j] : 16, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst,
                         "staging", &e->staging[j]);
    sst = wg_scope_pop(b, "allocating the staging buffer");
    if (!st) st = sst;

    e->stats.n_dispatches = e->n_disp;
    for (size_t k = 0; k < e->n_seg; k++) e->stats.n_gpu_segments += e->seg[k].gpu;
    for (size_t s = 0; s < p->n_steps; s++) e->stats.n_cpu_steps += p->step_on[s] == RLX_STEP_CPU;
    if (!b->caps.shader_f16) { /* the f16 policy (README.md, "Element types"): said once, in the report */
        size_t n16 = 0;
        for (size_t s = 0; s < p->n_steps; s++)
            if (p->step_on[s] == RLX_STEP_CPU && node_has_f16(g, &g->nodes[p->steps[s]])) n16++;
        if (n16)
            wg_src_printf(&e->notes, "%zu node(s) with f16 values run on the CPU: this adapter has no shader-f16, "
                                     "which f16 tensors on the GPU need\n", n16);
    }
    e->stats.arena_bytes = e->arena_size;
    e->stats.scratch_bytes = e->scratch_size;
    for (size_t i = 0; i < e->n_weights; i++) e->stats.weight_bytes += e->weight_size[i];
    e->stats.gpu_timing = b->has_timestamp;
    e->stats.f16_mode = b->caps.f16;
    e->stats.gemm_note = b->coop_note;
    e->stats.int8_note = b->dot4_note;
    e->stats.timing_inside_passes = b->has_ts_inside;
    if (e->notes.oom) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    e->stats.notes = e->notes.s;
    e->validated = false;

done:
    for (size_t s = 0; low && s < p->n_steps; s++) wg_lower_free(&low[s]);
    free(low);
    free(d0);
    free(d1);
    free(params_host);
    if (st) {
        wg_destroy_exe(e);
        return st;
    }
    *out = e;
    return RLX_OK;
}

/* The device may be shared with other sessions (threads): compile, run and
 * destroy hold its lock. */
static rlx_status wg_compile(rlx_backend *be, const rlx_program *p, rlx_backend_exe **out) {
    wg_device_lock((wg_backend *)be);
    rlx_status st = compile_locked(be, p, out);
    wg_device_unlock((wg_backend *)be);
    return st;
}

/* ------------------------------------------------------------ run */

/* ------------------------------------------------------------ timing */

/* Queries one GPU segment needs at timing level `lv`. */
static uint32_t seg_queries(const struct rlx_backend_exe *e, const segment *sg, int lv) {
    size_t nd = sg->d1 - sg->d0;
    if (!nd || lv == RLX_TIMING_OFF) return 0;
    if (lv == RLX_TIMING_TOTAL) return 2;
    return e->ts_inside ? (uint32_t)nd + 1 : 2 * (uint32_t)nd;
}

static rlx_status set_timing_locked(rlx_backend_exe *e, int level) {
    wg_backend *b = e->b;
    if (level == RLX_TIMING_OFF) {
        e->timing = level;
        return RLX_OK;
    }
    if (level != RLX_TIMING_TOTAL && level != RLX_TIMING_DISPATCH)
        return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "timing level %d", level);
    if (!b->has_timestamp)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "adapter %s has no timestamp queries (WebGPU feature timestamp-query)",
                        b->info.name);
    /* gpu.timing_passes: a pass per dispatch even where timestamps inside
     * passes exist (tests that path) */
    e->ts_inside = b->has_ts_inside && !b->caps.cfg->gpu_timing_passes;
    uint32_t need = 0;
    for (size_t k = 0; k < e->n_seg; k++)
        if (e->seg[k].gpu) {
            uint32_t q = seg_queries(e, &e->seg[k], level);
            if (q > need) need = q;
        }
    /* a query set holds at most 4096 queries: per-dispatch timing of a
     * segment with more dispatches than that is refused */
    if (need > 4096)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "per-dispatch timing of %u queries in one segment (at most 4096)", need);
    if (need > e->q_cap) {
        if (e->qset) wgpuQuerySetRelease(e->qset);
        release_buffer(&e->q_resolve);
        release_buffer(&e->q_read);
        e->qset = NULL;
        e->q_cap = 0;
        wg_scope_push(b);
        WGPUQuerySetDescriptor qd;
        memset(&qd, 0, sizeof qd);
        qd.label = wg_sv("timestamps");
        qd.type = WGPUQueryType_Timestamp;
        qd.count = need;
        e->qset = wgpuDeviceCreateQuerySet(b->dev, &qd);
        rlx_status st = make_buffer(b, (uint64_t)need * 8, WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc,
                                    "timestamp resolve", &e->q_resolve);
        if (!st)
            st = make_buffer(b, (uint64_t)need * 8, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst,
                             "timestamp read-back", &e->q_read);
        rlx_status sst = wg_scope_pop(b, "creating timestamp queries");
        if (!st) st = sst;
        if (st) return st;
        e->q_cap = need;
    }
    e->timing = level;
    return RLX_OK;
}

/* Creates the query set on the (shared) device: holds its lock. */
static rlx_status wg_set_timing(rlx_backend_exe *e, int level) {
    wg_device_lock(e->b);
    rlx_status st = set_timing_locked(e, level);
    wg_device_unlock(e->b);
    return st;
}

static void wg_exe_stats(rlx_backend_exe *e, rlx_exe_stats *out) { *out = e->stats; }

/* Reads the timestamps of segment k after its submit: per-dispatch slices
 * (level DISPATCH) and the segment's GPU time. host_off_us places the
 * segment on the run's time line. */
static rlx_status read_timestamps(struct rlx_backend_exe *e, const segment *sg, uint32_t nq, double host_off_us,
                                  rlx_prof *prof, const char *what) {
    wg_backend *b = e->b;
    RLX_TRY(wg_map_read(b, e->q_read, (uint64_t)nq * 8, what));
    const uint64_t *t = wgpuBufferGetConstMappedRange(e->q_read, 0, (size_t)nq * 8);
    if (!t) {
        wgpuBufferUnmap(e->q_read);
        return rlx_fail(RLX_ERR_DEVICE, "%s: the timestamp buffer has no mapped range", what);
    }
    double ns = wgpuQueueGetTimestampPeriod(b->queue);
    if (!(ns > 0)) ns = 1.0;
    uint64_t first = t[0], last = t[0];
    for (uint32_t i = 0; i < nq; i++) {
        if (t[i] < first) first = t[i];
        if (t[i] > last) last = t[i];
    }
    prof->gpu_total_us += (double)(last - first) * ns * 1e-3;
    rlx_status st = RLX_OK;
    if (e->timing == RLX_TIMING_DISPATCH) {
        size_t nd = sg->d1 - sg->d0;
        for (size_t i = 0; i < nd && !st; i++) {
            uint64_t a = e->ts_inside ? t[i] : t[2 * i], z = e->ts_inside ? t[i + 1] : t[2 * i + 1];
            double t0 = a >= first ? (double)(a - first) * ns * 1e-3 : 0.0;
            double dur = z >= a ? (double)(z - a) * ns * 1e-3 : 0.0;
            const rdisp *r = &e->disp[sg->d0 + i];
            st = rlx_prof_add(prof, r->step, r->kernel, host_off_us + t0, dur, true);
        }
    } else {
        const rdisp *r = &e->disp[sg->d0];
        st = rlx_prof_add(prof, r->step, "segment", host_off_us, (double)(last - first) * ns * 1e-3, true);
    }
    wgpuBufferUnmap(e->q_read);
    return st;
}

/* ------------------------------------------------------------ run */

/* Records the dispatches of a segment: one compute pass (with timestamps
 * at its ends, or between dispatches), or one pass per dispatch when
 * per-dispatch timing has no timestamps inside passes. */
static void encode_dispatches(struct rlx_backend_exe *e, const segment *sg, WGPUCommandEncoder enc, uint32_t nq) {
    int lv = nq ? e->timing : RLX_TIMING_OFF;
    bool pass_per_dispatch = lv == RLX_TIMING_DISPATCH && !e->ts_inside;
    WGPUComputePassEncoder pass = NULL;
    WGPUComputePipeline cur = NULL;
    WGPUPassTimestampWrites tw;
    WGPUComputePassDescriptor pd;
    memset(&pd, 0, sizeof pd);
    for (size_t i = sg->d0; i < sg->d1; i++) {
        const rdisp *r = &e->disp[i];
        if (!pass) {
            const WGPUComputePassDescriptor *pdp = NULL;
            if (lv == RLX_TIMING_TOTAL || pass_per_dispatch) {
                memset(&tw, 0, sizeof tw);
                tw.querySet = e->qset;
                tw.beginningOfPassWriteIndex = pass_per_dispatch ? (uint32_t)(2 * (i - sg->d0)) : 0;
                tw.endOfPassWriteIndex = pass_per_dispatch ? (uint32_t)(2 * (i - sg->d0) + 1) : 1;
                pd.timestampWrites = &tw;
                pdp = &pd;
            }
            pass = wgpuCommandEncoderBeginComputePass(enc, pdp);
            cur = NULL;
        }
        if (lv == RLX_TIMING_DISPATCH && e->ts_inside)
            wgpuComputePassEncoderWriteTimestamp(pass, e->qset, (uint32_t)(i - sg->d0));
        if (r->pipe != cur) wgpuComputePassEncoderSetPipeline(pass, r->pipe);
        cur = r->pipe;
        wgpuComputePassEncoderSetBindGroup(pass, 0, r->bg, 0, NULL);
        wgpuComputePassEncoderDispatchWorkgroups(pass, r->groups[0], r->groups[1], r->groups[2]);
        if (pass_per_dispatch || i + 1 == sg->d1) {
            if (lv == RLX_TIMING_DISPATCH && e->ts_inside)
                wgpuComputePassEncoderWriteTimestamp(pass, e->qset, (uint32_t)(i + 1 - sg->d0));
            wgpuComputePassEncoderEnd(pass);
            wgpuComputePassEncoderRelease(pass);
            pass = NULL;
        }
    }
    if (nq) {
        wgpuCommandEncoderResolveQuerySet(enc, e->qset, 0, nq, e->q_resolve, 0);
        wgpuCommandEncoderCopyBufferToBuffer(enc, e->q_resolve, 0, e->q_read, 0, (uint64_t)nq * 8);
    }
}

/* After a failed segment: encodes its dispatches one by one, each in its own
 * error scope, to name the step and kernel that the device rejected. */
static rlx_status diagnose(struct rlx_backend_exe *e, const segment *sg, rlx_status st) {
    wg_backend *b = e->b;
    if (st == RLX_ERR_DEVICE_LOST || b->sh->lost) return st;
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", rlx_last_error());
    for (size_t k = sg->d0; k < sg->d1; k++) {
        const rdisp *r = &e->disp[k];
        wg_scope_push(b);
        segment one = { .d0 = k, .d1 = k + 1 };
        WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(b->dev, NULL);
        encode_dispatches(e, &one, enc, 0);
        WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
        if (cb) wgpuCommandBufferRelease(cb);
        wgpuCommandEncoderRelease(enc);
        char what[400];
        snprintf(what, sizeof what, "forward pass, step %d, %s: kernel '%s'", r->step, step_desc(e->p, r->step),
                 r->kernel);
        rlx_status s2 = wg_scope_pop(b, what);
        if (s2) return s2;
    }
    return rlx_fail(st, "%s", saved);
}

/* The commands of segment sg: its dispatches (with nq timestamp queries)
 * and the copies of its read-backs into the staging buffers. NULL when
 * wgpu gives no buffer (the caller reports it). */
static WGPUCommandBuffer record_segment(struct rlx_backend_exe *e, const segment *sg, uint32_t nq) {
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(e->b->dev, NULL);
    if (sg->status) wgpuCommandEncoderClearBuffer(enc, e->status, 0, WG_STATUS_WORDS * 4);
    if (sg->d1 > sg->d0) encode_dispatches(e, sg, enc, nq);
    for (size_t i = 0; i < sg->n_rd; i++) {
        uint64_t local;
        WGPUBuffer src = arena_at(e, sg->rd[i].off, &local, NULL);
        wgpuCommandEncoderCopyBufferToBuffer(enc, src, local, e->staging[sg->rd_buf[i]], sg->rd_off[i],
                                             up4(sg->rd[i].bytes ? sg->rd[i].bytes : 4));
    }
    if (sg->status)
        wgpuCommandEncoderCopyBufferToBuffer(enc, e->status, 0, e->staging[sg->status_buf], sg->status_off,
                                             WG_STATUS_WORDS * 4);
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
    wgpuCommandEncoderRelease(enc);
    return cb;
}

/* The error that the status words of segment sg report (word 0 non-zero;
 * layout at WG_STATUS_WORDS in webgpu.h): the CPU's message for the same
 * input, naming the first step whose kernel found an index out of range. */
static rlx_status status_error(const struct rlx_backend_exe *e, const segment *sg, const uint32_t *w) {
    uint32_t step = 0xffffffffu - w[0];
    if (step < sg->s0 || step >= sg->s1)
        return rlx_fail(RLX_ERR_INTERNAL, "forward pass, steps %zu..%zu: the GPU reported bad input at step %u, "
                        "outside the segment", sg->s0, sg->s1 - 1, step);
    uint64_t bits = ((uint64_t)w[2] << 32) | w[1];
    int64_t v;
    memcpy(&v, &bits, sizeof v);
    long long a = (long long)w[3];
    return rlx_fail(RLX_ERR_INVALID_ARGUMENT, "%s: index %lld is out of range [%lld, %lld)", step_desc(e->p, (int)step),
                    (long long)v, -a, a);
}

static rlx_status run_gpu_segment(struct rlx_backend_exe *e, size_t k, void *const *down_dst, rlx_prof *prof) {
    wg_backend *b = e->b;
    segment *sg = &e->seg[k];
    char what[200];
    /* the message is only needed on failure: formatted lazily below */
    what[0] = 0;
#define WHAT() (what[0] ? what : (sg->s1 > sg->s0 + 1 ? (snprintf(what, sizeof what, "forward pass, steps %zu..%zu", sg->s0, sg->s1 - 1), what) \
                                                     : (snprintf(what, sizeof what, "forward pass, step %zu", sg->s0), what)))
    if (b->sh->lost) return wg_lost_error(b, WHAT());
    uint32_t nq = e->timing && prof ? seg_queries(e, sg, e->timing) : 0;
    /* The first run records inside error scopes: encoding errors surface at
     * finish, and wgpu-native 0.32 aborts on submitting an invalid command
     * buffer, so a failed buffer is never submitted. Later runs record the
     * very same commands (only the timestamp writes can differ, and those
     * were validated with the query set) and skip the scopes; an error
     * then still arrives through the uncaptured-error callback, checked at
     * the end (the device lock is held, so it is this segment's). */
    bool scoped = !e->validated || nq || b->caps.cfg->gpu_validate;
    if (scoped) wg_scope_push(b);
    else b->sh->uncaptured[0] = 0;
    WGPUCommandBuffer cb;
    if (sg->next_cb && !scoped) { /* recorded during the previous run */
        cb = sg->next_cb;
        sg->next_cb = NULL;
    } else {
        cb = record_segment(e, sg, nq);
    }
    rlx_status st = scoped ? wg_scope_pop(b, WHAT()) : RLX_OK;
    if (!st && !cb) st = rlx_fail(RLX_ERR_DEVICE, "%s: no command buffer", WHAT());
    if (st) {
        if (cb) wgpuCommandBufferRelease(cb);
        return diagnose(e, sg, st);
    }
    /* wgpu-native aborts on a submit to a lost device: find out first */
    if (wg_device_check_lost(b)) {
        wgpuCommandBufferRelease(cb);
        return wg_lost_error(b, WHAT());
    }
    double host_off_us = nq ? (rlx_now_seconds() - prof->t0) * 1e6 : 0.0;
    if (scoped) wg_scope_push(b);
    wgpuQueueSubmit(b->queue, 1, &cb);
    wgpuCommandBufferRelease(cb);
    if (scoped) RLX_TRY(wg_scope_pop(b, WHAT()));
    /* Steady state: record the next run's commands while the GPU runs
     * these (the commands do not change between runs; the next run's
     * uploads are queue writes, which the queue orders before its submit).
     * RLX_GPU_PRERECORD=0 turns this off. */
    if (!scoped && !sg->next_cb && e->prerecord) sg->next_cb = record_segment(e, sg, 0);
    uint32_t status[WG_STATUS_WORDS] = { 0 };
    for (size_t j = 0; (sg->n_rd || sg->status) && j < sg->n_staging; j++) {
        WGPUBuffer sb = e->staging[j];
        uint64_t used = sg->staging_used[j];
        if (!used) continue;
        RLX_TRY(wg_map_read(b, sb, used, WHAT()));
        const unsigned char *m = wgpuBufferGetConstMappedRange(sb, 0, (size_t)used);
        if (!m) {
            wgpuBufferUnmap(sb);
            return rlx_fail(RLX_ERR_DEVICE, "%s: the staging buffer has no mapped range", WHAT());
        }
        for (size_t i = 0; i < sg->n_rd; i++)
            if (sg->rd_buf[i] == j) memcpy(down_dst[i], m + sg->rd_off[i], (size_t)sg->rd[i].bytes);
        if (sg->status && sg->status_buf == j) memcpy(status, m + sg->status_off, sizeof status);
        wgpuBufferUnmap(sb);
    }
    if (nq) RLX_TRY(read_timestamps(e, sg, nq, host_off_us, prof, WHAT()));
    if (!scoped && b->sh->uncaptured[0]) {
        rlx_status err = rlx_fail(RLX_ERR_DEVICE, "%s: GPU error: %s", WHAT(), b->sh->uncaptured);
        b->sh->uncaptured[0] = 0;
        return err;
    }
    if (status[0]) return status_error(e, sg, status);
#undef WHAT
    return RLX_OK;
}

/* A failed segment: whatever failed, the next run records afresh. */
static void drop_recorded(struct rlx_backend_exe *e) {
    for (size_t k = 0; k < e->n_seg; k++)
        if (e->seg[k].next_cb) wgpuCommandBufferRelease(e->seg[k].next_cb), e->seg[k].next_cb = NULL;
}

static rlx_status wg_run_segment(rlx_backend_exe *e, size_t k, void *const *down_dst, rlx_prof *prof) {
    wg_device_lock(e->b);
    rlx_status st = run_gpu_segment(e, k, down_dst, prof);
    if (st) drop_recorded(e);
    else if (k == e->last_gpu) e->validated = true;
    wg_device_unlock(e->b);
    return st;
}

static rlx_status wg_upload(rlx_backend_exe *e, uint64_t off, const void *src, uint64_t bytes) {
    wg_backend *b = e->b;
    wg_device_lock(b);
    rlx_status st = b->sh->lost ? wg_lost_error(b, "uploading an input") : arena_write(e, off, src, bytes);
    b->sh->touched = true; /* the write reached the device: a lost one has said so */
    wg_device_unlock(b);
    return st;
}

/* ------------------------------------------------------------ destroy */

static void wg_destroy_exe(rlx_backend_exe *e) {
    if (!e) return;
    wg_backend *b = e->b;
    wg_device_lock(b);
    for (size_t i = 0; e->disp && i < e->n_disp; i++) /* (no disp when a lowering failed at compile) */
        if (e->disp[i].bg) wgpuBindGroupRelease(e->disp[i].bg);
    free(e->disp);
    for (size_t k = 0; k < e->n_arena; k++) release_buffer(&e->arena[k]);
    free(e->arena);
    free(e->arena_len);
    release_buffer(&e->scratch);
    release_buffer(&e->params);
    release_buffer(&e->status);
    release_buffer(&e->tables);
    free(e->table_off);
    for (size_t j = 0; e->staging && j < e->n_staging; j++) release_buffer(&e->staging[j]);
    free(e->staging);
    free(e->staging_len);
    for (size_t i = 0; i < e->n_weights; i++) release_buffer(&e->weights[i]);
    free(e->weights);
    free(e->weight_size);
    free(e->konst_buf);
    free(e->konst_off);
    for (size_t k = 0; k < e->n_seg; k++) {
        if (e->seg[k].next_cb) wgpuCommandBufferRelease(e->seg[k].next_cb);
        free(e->seg[k].rd_off);
        free(e->seg[k].rd_buf);
        free(e->seg[k].staging_used);
    }
    free(e->seg);
    if (e->qset) wgpuQuerySetRelease(e->qset);
    release_buffer(&e->q_resolve);
    release_buffer(&e->q_read);
    wg_src_free(&e->notes);
    free(e);
    wg_device_unlock(b);
}

static void wg_destroy(rlx_backend *be) {
    wg_backend *b = (wg_backend *)be;
    if (!b) return;
    wg_device_close(b);
    rlx_config_destroy(b->own_cfg);
    free(b);
}

rlx_status rlx_backend_webgpu_create(const char *device, const rlx_session_options *opt, const rlx_options *options,
                                     rlx_backend **out) {
    *out = NULL;
    rlx_config *cfg;
    RLX_TRY(rlx_config_resolve(options, opt, &cfg));
    rlx_status st = rlx_backend_webgpu_open(device, opt, cfg, out);
    if (st) rlx_config_destroy(cfg);
    else ((wg_backend *)*out)->own_cfg = cfg;
    return st;
}

rlx_status rlx_backend_webgpu_open(const char *device, const rlx_session_options *opt, const rlx_config *cfg,
                                   rlx_backend **out) {
    *out = NULL;
    wg_backend *b = calloc(1, sizeof *b);
    if (!b) return rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    b->caps.cfg = cfg;
    rlx_status st = wg_device_open(b, device ? device : "gpu");
    if (st) {
        wg_device_close(b);
        free(b);
        return st;
    }
    b->caps.conv_direct = opt && opt->gpu_conv_direct;
    /* f16 weights are packed two per 32-bit word and read with the core
     * builtin unpack2x16float: no shader-f16 needed. gpu.f16=0 (or
     * RLX_GPU_F16=0) forces f32 even when rlx_session_options asks for f16
     * (resolved in base/options.c). */
    b->caps.f16 = cfg->gpu_f16;
    b->caps.coop_sg = (uint32_t)atoi(cfg->gpu_coop_sg);
    wg_coop_probe(b);
    wg_dot4_probe(b);
    rlx_backend *be = &b->base;
    be->name = "webgpu";
    be->kind = RLX_DEVICE_GPU;
    snprintf(be->device_name, sizeof be->device_name, "%s (%s, %s)", b->info.name, b->info.backend, b->info.type);
    be->max_buffer_bytes = b->caps.max_buffer / RLX_ARENA_ALIGN * RLX_ARENA_ALIGN;
    be->supports = wg_supports;
    be->compile = wg_compile;
    be->upload = wg_upload;
    be->run_segment = wg_run_segment;
    be->destroy_exe = wg_destroy_exe;
    be->destroy = wg_destroy;
    be->exe_stats = wg_exe_stats;
    be->set_timing = wg_set_timing;
    *out = be;
    return RLX_OK;
}
