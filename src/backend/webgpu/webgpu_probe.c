/* The self-test behind the cooperative-matrix GEMM (gemm_coop_gen.c): an
 * adapter that reports wgpu-native's CooperativeMatrix feature may lack a
 * fragment form (wgpu-native 0.32 accepts only 8 x 8 f32 fragments; the
 * driver lists its own configurations), use another subgroup size than the
 * kernel assumes, address fragments in the other memory order, or
 * miscompile. So before the kernel is used, each form of wg_coop_forms is
 * tried in order until one passes: one product of odd size (70 x 50 x 40, every tile
 * edge case) runs through the very lowering the models use (wg_emit_gemm),
 * once with f32 and once with f16 tensors (the T = f16 instance), through
 * wg_run_dispatch, and is compared with a C reference of the f16-rounded
 * operands; any
 * device error or a wrong value turns the kernel off, with the reason kept
 * for reports.
 * The integer GEMM's dot4I8Packed gets a self-test likewise (wg_dot4_probe):
 * whether naga and the driver compile it, and compute it right. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/lower_gemm.h"
#include "backend/webgpu/lower_qgemm.h"
#include "backend/webgpu/webgpu_device.h"
#include "base/log.h"
#include "base/options.h"
#include "base/platform.h"
#include "rlx/half.h"

enum { PM = 70, PN = 50, PK = 40 };

static float f16r(float x) { return rlx_f16_to_f32(rlx_f32_to_f16(x)); }

rlx_status wg_run_dispatch(wg_backend *b, wg_dispatch *d, void *const *host, const size_t *bytes, int out,
                           const char *what) {
    WGPUComputePipeline pipe = NULL;
    RLX_TRY(wg_pipeline_get(b, d, what, &pipe));
    /* every binding starts at its buffer's start: the offsets are 0 */
    for (int i = 0; i < d->n_bind; i++) d->params[d->off_slot[i]] = 0;
    int nb = d->n_bind;
    WGPUBuffer buf[WG_MAX_BINDINGS + 2] = { NULL }; /* bindings, then Params, then staging */
    WGPUBindGroupEntry ent[WG_MAX_BINDINGS + 1];
    memset(ent, 0, sizeof ent);
    uint64_t rb = ((uint64_t)bytes[out] + 15) & ~(uint64_t)15;
    wg_scope_push(b);
    for (int i = 0; i <= nb + 1; i++) {
        bool params = i == nb, staging = i == nb + 1;
        WGPUBufferDescriptor bd;
        memset(&bd, 0, sizeof bd);
        bd.size = params ? (uint64_t)((d->n_params * 4 + 15) & ~15) : staging ? rb : ((uint64_t)bytes[i] + 15) & ~(uint64_t)15;
        if (!bd.size) bd.size = 16;
        bd.usage = params ? WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst
                 : staging ? WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst
                           : WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst | WGPUBufferUsage_CopySrc;
        buf[i] = wgpuDeviceCreateBuffer(b->dev, &bd);
        if (staging) continue;
        const void *src = params ? (const void *)d->params : host[i];
        size_t n = params ? (size_t)d->n_params * 4 : bytes[i];
        if (src && n) wgpuQueueWriteBuffer(b->queue, buf[i], 0, src, n);
        int e = params ? 0 : i + 1;
        ent[e].binding = (uint32_t)e;
        ent[e].buffer = buf[i];
        ent[e].size = bd.size;
    }
    WGPUBindGroupLayout lay = wgpuComputePipelineGetBindGroupLayout(pipe, 0);
    WGPUBindGroupDescriptor bgd;
    memset(&bgd, 0, sizeof bgd);
    bgd.layout = lay;
    bgd.entryCount = (size_t)nb + 1;
    bgd.entries = ent;
    WGPUBindGroup bg = wgpuDeviceCreateBindGroup(b->dev, &bgd);
    if (lay) wgpuBindGroupLayoutRelease(lay);
    WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(b->dev, NULL);
    WGPUComputePassEncoder pass = wgpuCommandEncoderBeginComputePass(enc, NULL);
    wgpuComputePassEncoderSetPipeline(pass, pipe);
    wgpuComputePassEncoderSetBindGroup(pass, 0, bg, 0, NULL);
    wgpuComputePassEncoderDispatchWorkgroups(pass, d->groups[0], d->groups[1], d->groups[2]);
    wgpuComputePassEncoderEnd(pass);
    wgpuComputePassEncoderRelease(pass);
    wgpuCommandEncoderCopyBufferToBuffer(enc, buf[out], 0, buf[nb + 1], 0, rb);
    WGPUCommandBuffer cb = wgpuCommandEncoderFinish(enc, NULL);
    wgpuCommandEncoderRelease(enc);
    rlx_status st = wg_scope_pop(b, what);
    if (!st && !cb) st = rlx_fail(RLX_ERR_DEVICE, "%s: no command buffer", what);
    /* wgpu-native aborts on a submit to a lost device: find out first */
    if (!st && wg_device_check_lost(b)) st = wg_lost_error(b, what);
    if (!st) {
        wgpuQueueSubmit(b->queue, 1, &cb);
        wgpuCommandBufferRelease(cb); /* the handle outlives the submit */
        cb = NULL;
        st = wg_map_read(b, buf[nb + 1], rb, what);
        if (!st) {
            const void *m = wgpuBufferGetConstMappedRange(buf[nb + 1], 0, (size_t)rb);
            if (m) memcpy(host[out], m, bytes[out]);
            else st = rlx_fail(RLX_ERR_DEVICE, "%s: the staging buffer has no mapped range", what);
            wgpuBufferUnmap(buf[nb + 1]);
        }
    }
    if (cb) wgpuCommandBufferRelease(cb);
    if (bg) wgpuBindGroupRelease(bg);
    for (int i = 0; i <= nb + 1; i++)
        if (buf[i]) wgpuBufferDestroy(buf[i]), wgpuBufferRelease(buf[i]);
    return st;
}

/* A lowering context L with capabilities *caps over a graph *out of n
 * values of dtypes dt[] and no node (ids in ids[]), for the lowering helpers
 * of a self-test; free with wg_lower_free(L) and rlx_graph_destroy(*out). */
static rlx_status probe_lower(int n, const rlx_dtype *dt, const wg_caps *caps, rlx_graph **out, wg_lower *L,
                              int *ids) {
    rlx_graph *g = NULL;
    RLX_TRY(rlx_graph_create(13, &g));
    rlx_status st = RLX_OK;
    for (int i = 0; i < n && !st; i++) {
        st = rlx_graph_add_value(g, NULL, &ids[i]);
        if (!st) g->values[ids[i]].dtype = dt[i];
    }
    if (st) {
        rlx_graph_destroy(g);
        return st;
    }
    memset(L, 0, sizeof *L);
    L->g = *out = g;
    L->caps = caps;
    return RLX_OK;
}

/* The self-tests' operands: xorshift64 (the next state, also the value). */
static uint64_t probe_rand(uint64_t *seed) {
    *seed ^= *seed << 13, *seed ^= *seed >> 7, *seed ^= *seed << 17;
    return *seed;
}

/* One product of the self-test in form `form`, with f32 tensors (the
 * operands rounded to binary16 inside the kernel) or f16 tensors (half:
 * the T = f16 instance). */
static rlx_status probe_run(wg_backend *b, uint32_t form, bool half) {
    /* a three-value graph (a, b, y) */
    rlx_dtype et = half ? RLX_DTYPE_F16 : RLX_DTYPE_F32, dt[3] = { et, et, et };
    rlx_graph *g = NULL;
    int ids[3];
    wg_caps caps = b->caps;
    caps.coop = true;
    caps.coop_form = form;
    wg_lower L;
    RLX_TRY(probe_lower(3, dt, &caps, &g, &L, ids));
    wg_gemm m = { .M = PM, .N = PN, .K = PK, .alpha = 1.0f, .a_sm = PK, .a_sk = 1, .b_sk = PN, .b_sn = 1,
                  .a = ids[0], .b = ids[1], .y = ids[2], .bias = -1,
                  .a_n = PM * PK, .b_n = PK * PN, .y_n = PM * PN };
    rlx_status st = wg_emit_gemm_coop(&L, &m);
    if (!st && (L.n_d != 1 || strcmp(L.d[0].kernel, "gemm_coop") != 0))
        st = rlx_fail(RLX_ERR_INTERNAL, "the lowering did not choose gemm_coop");
    enum { NA = PM * PK, NB = PK * PN, NY = PM * PN };
    float *host = calloc(NA + NB + NY, sizeof *host);
    uint16_t *h16 = calloc(NA + NB + NY, sizeof *h16);
    if (!st && (!host || !h16)) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    if (st) goto done;
    float *ha = host, *hb = host + NA, *y = hb + NB;
    uint64_t seed = 0x2545F4914F6CDD1DULL;
    for (int i = 0; i < NA + NB; i++) {
        host[i] = (float)((double)(probe_rand(&seed) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
        h16[i] = rlx_f32_to_f16(host[i]);
    }
    for (int i = 0; i < NY; i++) y[i] = NAN, h16[NA + NB + i] = 0x7e00; /* poisoned */
    /* each binding gets its own buffer: a, b and y (y twice: the unused
     * bias placeholder of one element, then the output) */
    wg_dispatch *d = &L.d[0];
    void *hosts[WG_MAX_BINDINGS];
    size_t bytes[WG_MAX_BINDINGS], es = half ? 2 : 4;
    int out = -1;
    for (int i = 0; i < d->n_bind && !st; i++) {
        int v = d->bind[i].value, k = v == ids[0] ? 0 : v == ids[1] ? 1 : v == ids[2] ? 2 : -1;
        size_t off = k == 0 ? 0 : k == 1 ? NA : NA + NB, n = k == 0 ? NA : k == 1 ? NB : NY;
        if (k < 0) st = rlx_fail(RLX_ERR_INTERNAL, "the self-test's GEMM binds an unknown operand");
        else if (k == 2 && d->bind[i].elems < NY) hosts[i] = NULL, bytes[i] = 16; /* the placeholder */
        else hosts[i] = half ? (void *)(h16 + off) : (void *)(host + off), bytes[i] = n * es;
        if (k == 2 && hosts[i]) out = i;
    }
    if (!st && out < 0) st = rlx_fail(RLX_ERR_INTERNAL, "the self-test's GEMM does not bind its output");
    if (!st) st = wg_run_dispatch(b, d, hosts, bytes, out, "cooperative-matrix self-test");
    if (st) goto done;
    double worst = 0;
    int bad = -1;
    for (int i = 0; i < PM; i++)
        for (int j = 0; j < PN; j++) {
            double s = 0;
            for (int k = 0; k < PK; k++) s += (double)f16r(ha[i * PK + k]) * f16r(hb[k * PN + j]);
            float got = half ? rlx_f16_to_f32(h16[NA + NB + i * PN + j]) : y[i * PN + j];
            /* f16 tensors: plus one rounding of the result to binary16 */
            double e = fabs(got - s) - (half ? 1e-3 * fabs(s) : 0);
            if (!(e <= worst)) worst = e, bad = i * PN + j; /* NaN counts as worst */
        }
    if (!(worst <= 1e-3))
        st = rlx_fail(RLX_ERR_DEVICE,
                      "wrong result with %s tensors: element %d off by %.3g beyond the tolerance (1e-3%s; subgroup "
                      "size %u assumed)",
                      half ? "f16" : "f32", bad, worst, half ? " + 1e-3 relative" : "", caps.coop_sg);
done:
    free(host);
    free(h16);
    wg_lower_free(&L);
    rlx_graph_destroy(g);
    return st;
}

void wg_coop_probe(wg_backend *b) {
    b->caps.coop = b->caps.coop16 = false;
    const char *env = b->caps.cfg->gpu_coop;
    if (env && strcmp(env, "0") == 0) {
        snprintf(b->coop_note, sizeof b->coop_note, "off (RLX_GPU_COOP=0)");
        return;
    }
    /* gpu.coop=force runs the self-test even without the feature (it
     * then fails cleanly: tests of the fallback) */
    bool force = env && strcmp(env, "force") == 0;
    if (!b->has_coop_matrix && !force) {
        if (b->sh->coop_refused[0])
            snprintf(b->coop_note, sizeof b->coop_note,
                     "off (the adapter offers cooperative matrices, but wgpu-native refused the feature: %.120s)",
                     b->sh->coop_refused);
        else snprintf(b->coop_note, sizeof b->coop_note, "off (the adapter has no cooperative-matrix feature)");
        return;
    }
    if (!b->has_f16 && !force) {
        snprintf(b->coop_note, sizeof b->coop_note, "off (the adapter has no shader-f16)");
        return;
    }
    /* once per shared device (and subgroup size): later sessions reuse
     * the result */
    wg_shared *sh = b->sh;
    wg_device_lock(b);
    if (sh->coop_state == 0 || sh->coop_sg != b->caps.coop_sg) {
        double t0 = rlx_now_seconds();
        rlx_status st = RLX_ERR_UNSUPPORTED;
        char first[140] = "";
        for (uint32_t f = 0; f < wg_coop_form_count && st; f++) {
            st = probe_run(b, f, false);
            if (!st) st = probe_run(b, f, true);
            sh->coop_form = f;
            if (!st) break;
            const wg_coop_form *cf = &wg_coop_forms[f];
            if (b->caps.cfg->gpu_trace) /* the whole message (the note keeps 130 characters) */
                rlx_log(RLX_LOG_DEBUG, "rlx: cooperative-matrix self-test, %s %ux%u %s fragments: %s",
                        cf->ab_f16 ? "f16" : "f32", cf->n, cf->n, cf->col_major ? "column-major" : "row-major",
                        rlx_last_error());
            if (!first[0]) snprintf(first, sizeof first, "%s", rlx_last_error());
            rlx_clear_error();
        }
        sh->coop_sg = b->caps.coop_sg;
        if (st) {
            sh->coop_state = -1;
            snprintf(sh->coop_result, sizeof sh->coop_result, "self-test failed in every form; first: %.110s", first);
            for (char *c = sh->coop_result; *c; c++)
                if (*c == '\n' || *c == '\r') *c = ' ';
            rlx_clear_error();
        } else {
            sh->coop_state = 1;
            snprintf(sh->coop_result, sizeof sh->coop_result, "self-test passed in %.0f ms",
                     (rlx_now_seconds() - t0) * 1e3);
        }
    }
    bool ok = sh->coop_state > 0;
    wg_device_unlock(b);
    if (!ok) {
        snprintf(b->coop_note, sizeof b->coop_note, "off (%s)", sh->coop_result);
        return;
    }
    /* f16 products whatever f16 mode says; f32 products in f16 mode only */
    b->caps.coop16 = true;
    b->caps.coop = b->caps.f16;
    b->caps.coop_form = sh->coop_form;
    const wg_coop_form *cf = &wg_coop_forms[sh->coop_form];
    snprintf(b->coop_note, sizeof b->coop_note, "on (%s; %ux%u %s fragments -> f32, %s, subgroup %u; %s)",
             b->caps.f16 ? "f32 and f16 products" : "f16 products only: f16 mode is off", cf->n, cf->n,
             cf->ab_f16 ? "f16" : "f32", cf->col_major ? "column-major" : "row-major", b->caps.coop_sg,
             sh->coop_result);
}

/* ------------------------------------------------------------ dot4I8Packed */

enum { QM = 5, QN = 7, QK = 11, QPAD = 8 }; /* QPAD: the host arrays' sizes are multiples of 4 */

/* One uint8 x int8 product with zero points (a per row, b per column) of
 * odd sizes through wg_emit_qgemm with dot4 on, against C. */
static rlx_status dot4_run(wg_backend *b) {
    static const rlx_dtype dt[5] = { RLX_DTYPE_U8, RLX_DTYPE_I8, RLX_DTYPE_U8, RLX_DTYPE_I8, RLX_DTYPE_I32 };
    rlx_graph *g = NULL;
    int ids[5];
    wg_caps caps = b->caps;
    caps.dot4 = true;
    /* the register-block kernel whatever gpu.qgemm_tile says (the result
     * is kept for every later session on this device) */
    struct rlx_config cfg = *b->caps.cfg;
    cfg.gpu_qgemm_tile = "reg";
    caps.cfg = &cfg;
    wg_lower L;
    RLX_TRY(probe_lower(5, dt, &caps, &g, &L, ids));
    /* a [QM, QK], b [QK, QN], za [QM], zb [QN], y [QM, QN] */
    static const int rank[5] = { 2, 2, 1, 1, 2 };
    static const int64_t dims[5][2] = { { QM, QK }, { QK, QN }, { QM, 0 }, { QN, 0 }, { QM, QN } };
    for (int i = 0; i < 5; i++) {
        rlx_value *v = &g->values[ids[i]];
        v->rank = rank[i];
        for (int d = 0; d < rank[i]; d++) v->dims[d] = dims[i][d];
    }
    wg_qgemm q = { .a = ids[0], .b = ids[1], .za = ids[2], .zb = ids[3], .y = ids[4], .b_signed = true,
                   .m = QM, .n = QN, .k = QK, .za_step = 1, .zb_step = 1 };
    rlx_status st = wg_emit_qgemm(&L, &q);
    if (st && L.why[0]) st = rlx_fail(st, "the integer GEMM's lowering declined: %s", L.why);
    if (!st && (L.n_d != 1 || strcmp(L.d[0].kernel, "qgemm_dp4") != 0))
        st = rlx_fail(RLX_ERR_INTERNAL, "the lowering did not choose qgemm_dp4");
    uint8_t ha[(QM * QK + QPAD) & ~3], hb[(QK * QN + QPAD) & ~3], hza[(QM + QPAD) & ~3], hzb[(QN + QPAD) & ~3];
    int32_t y[QM * QN];
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    uint8_t *fill[4] = { ha, hb, hza, hzb };
    size_t len[4] = { sizeof ha, sizeof hb, sizeof hza, sizeof hzb };
    for (int i = 0; i < 4; i++)
        for (size_t j = 0; j < len[i]; j++) fill[i][j] = (uint8_t)(probe_rand(&seed) >> 24);
    for (int i = 0; i < QM * QN; i++) y[i] = 0x7fffffff; /* poisoned */
    void *host[WG_MAX_BINDINGS] = { ha, hb, hza, hzb, y, ha };
    size_t bytes[WG_MAX_BINDINGS] = { sizeof ha, sizeof hb, sizeof hza, sizeof hzb, sizeof y, 4 };
    if (!st) st = wg_run_dispatch(b, &L.d[0], host, bytes, 4, "dot4I8Packed self-test");
    for (int m = 0; m < QM && !st; m++)
        for (int n = 0; n < QN && !st; n++) {
            int32_t acc = 0;
            for (int k = 0; k < QK; k++) acc += (ha[m * QK + k] - hza[m]) * ((int8_t)hb[k * QN + n] - (int8_t)hzb[n]);
            if (acc != y[m * QN + n])
                st = rlx_fail(RLX_ERR_DEVICE, "wrong result: element (%d, %d) is %d, not %d", m, n, (int)y[m * QN + n],
                              (int)acc);
        }
    wg_lower_free(&L);
    rlx_graph_destroy(g);
    return st;
}

void wg_dot4_probe(wg_backend *b) {
    b->caps.dot4 = false;
    const char *env = b->caps.cfg->gpu_dot4;
    if (env && strcmp(env, "0") == 0) {
        snprintf(b->dot4_note, sizeof b->dot4_note, "off (gpu.dot4=0)");
        return;
    }
    wg_shared *sh = b->sh;
    wg_device_lock(b);
    if (sh->dot4_state == 0) {
        rlx_status st = dot4_run(b);
        sh->dot4_state = st ? -1 : 1;
        if (st) {
            if (b->caps.cfg->gpu_trace) rlx_log(RLX_LOG_DEBUG, "rlx: dot4I8Packed self-test: %s", rlx_last_error());
            snprintf(sh->dot4_result, sizeof sh->dot4_result, "%s", rlx_last_error());
            for (char *c = sh->dot4_result; *c; c++)
                if (*c == '\n' || *c == '\r') *c = ' ';
            rlx_clear_error();
        }
    }
    bool ok = sh->dot4_state > 0;
    if (ok) snprintf(b->dot4_note, sizeof b->dot4_note, "dot4I8Packed (self-test passed)");
    else
        snprintf(b->dot4_note, sizeof b->dot4_note, "off (dot4I8Packed failed its self-test: %.100s; unpacked products)",
                 sh->dot4_result);
    wg_device_unlock(b);
    b->caps.dot4 = ok;
}
