/* bench/dawn_probe's pieces that both ABI paths share: entry-point lookup,
 * callback bookkeeping and the checked shaders (docs/dawn.md). */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dawn_probe.h"

void *dp_dlsym(void *lib, const char *name) { return dlsym(lib, name); }

bool dp_resolve(dp_sym_fn sym, void *cx, const dp_sym *t, size_t n, const char *abi) {
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        *t[i].slot = sym(cx, t[i].name);
        if (!*t[i].slot) {
            fprintf(stderr, "dawn_probe: %s missing: not %s\n", t[i].name, abi);
            ok = false;
        }
    }
    return ok;
}

size_t dp_sv_len(const char *data, size_t length) {
    return !data ? 0 : length == SIZE_MAX ? strlen(data) : length;
}

void dp_done(dp_waiter *w, uint32_t status, void *obj, const char *data, size_t length) {
    size_t n = dp_sv_len(data, length);
    if (n >= sizeof w->message) n = sizeof w->message - 1;
    if (n) memcpy(w->message, data, n);
    w->message[n] = 0;
    w->status = status;
    w->obj = obj;
    w->done = true;
}

/* ------------------------------------------------ checks (both ABIs) */

enum { N = 1024 }; /* vec4 elements (4096 scalars) */

static const char *wgsl_add_f32 =
    "@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;\n"
    "@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;\n"
    "@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;\n"
    "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "  if (g.x < arrayLength(&c)) { c[g.x] = a[g.x] + b[g.x]; }\n}\n";

static const char *wgsl_add_f16 =
    "enable f16;\n"
    "@group(0) @binding(0) var<storage, read> a: array<vec4<f16>>;\n"
    "@group(0) @binding(1) var<storage, read> b: array<vec4<f16>>;\n"
    "@group(0) @binding(2) var<storage, read_write> c: array<vec4<f16>>;\n"
    "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "  if (g.x < arrayLength(&c)) { c[g.x] = a[g.x] + b[g.x]; }\n}\n";

/* a - b = 1 everywhere: each invocation stores 1000 * subgroupAdd(1) + subgroup size */
static const char *wgsl_subgroup =
    "enable subgroups;\n"
    "@group(0) @binding(0) var<storage, read> a: array<u32>;\n"
    "@group(0) @binding(1) var<storage, read> b: array<u32>;\n"
    "@group(0) @binding(2) var<storage, read_write> c: array<u32>;\n"
    "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>,\n"
    "                                     @builtin(subgroup_size) s: u32) {\n"
    "  let n = subgroupAdd(a[g.x] - b[g.x]);\n"
    "  c[g.x] = n * 1000u + s;\n}\n";

uint16_t dp_to_half(float v) {
    if (v == 0) return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    float m = v < 0 ? -v : v;
    int e = 0;
    while (m >= 2.0f) m /= 2.0f, e++;
    while (m < 1.0f) m *= 2.0f, e--;
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((m - 1.0f) * 1024.0f + 0.5f));
}

int dp_checks(dp_run_fn run, void *ctx, bool f16, bool subgroups) {
    static float a[4 * N], b[4 * N], c[4 * N];
    for (int i = 0; i < 4 * N; i++) {
        a[i] = (float)(i % 97) - 40.0f;
        b[i] = (float)(i % 89) * 0.5f + 1.0f;
        c[i] = -12345.0f; /* poison */
    }
    int bad = 0;
    bool ran = run(ctx, wgsl_add_f32, a, b, c, sizeof a, N / 64);
    for (int i = 0; i < 4 * N; i++) bad += c[i] != a[i] + b[i];
    printf("vec4<f32> add: %s (%d of %d wrong)\n", ran && !bad ? "ok" : "FAILED", bad, 4 * N);
    int rc = ran && !bad ? 0 : 1;
    if (f16) {
        static uint16_t ha[4 * N], hb[4 * N], hc[4 * N];
        for (int i = 0; i < 4 * N; i++) {
            ha[i] = dp_to_half((float)(i % 97) - 40.0f);
            hb[i] = dp_to_half((float)(i % 89));
            hc[i] = 0x7e00; /* NaN poison */
        }
        int hbad = 0;
        bool hran = run(ctx, wgsl_add_f16, ha, hb, hc, sizeof ha, N / 64);
        for (int i = 0; i < 4 * N; i++)
            hbad += hc[i] != dp_to_half((float)(i % 97) - 40.0f + (float)(i % 89));
        printf("vec4<f16> add: %s (%d of %d wrong)\n", hran && !hbad ? "ok" : "FAILED", hbad, 4 * N);
    }
    if (subgroups) {
        static uint32_t ua[N], ub[N], uc[N];
        for (int i = 0; i < N; i++) ua[i] = (uint32_t)i + 1, ub[i] = (uint32_t)i, uc[i] = 0xdeadbeef;
        bool sran = run(ctx, wgsl_subgroup, ua, ub, uc, sizeof ua, N / 64);
        uint32_t sz = uc[0] % 1000;
        int sbad = 0;
        for (int i = 0; i < N; i++) sbad += uc[i] != sz * 1000u + sz;
        printf("subgroupAdd: %s (subgroup size %u, %d of %d wrong)\n",
               sran && !sbad && sz ? "ok" : "FAILED", sz, sbad, N);
    }
    return rc;
}


float dp_from_half(uint16_t h) {
    int e = (h >> 10) & 0x1f;
    float m = (float)(h & 0x3ff);
    float v = e == 0 ? m / 16777216.0f /* 2^-24 */ : (1.0f + m / 1024.0f);
    for (int i = 15; e && i < e; i++) v *= 2.0f;
    for (int i = e; e && i < 15; i++) v /= 2.0f;
    if (e == 0x1f) v = m ? NAN : INFINITY;
    return h & 0x8000 ? -v : v;
}
