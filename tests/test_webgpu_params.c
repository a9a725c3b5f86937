/* Kernel Params declared once and the element type of a kernel
 * (src/backend/webgpu/wg_params.c):
 *  - a `//!params` declaration becomes the WGSL struct, and its word
 *    layout has the padding WGSL's uniform rules put before vec4s and
 *    arrays of vec4 (no GPU needed);
 *  - a dispatch whose words disagree with its kernel's declaration (a
 *    field missing, an f32 where an integer is declared, a word too many,
 *    no padding before an array) fails at pipeline creation with
 *    RLX_ERR_INTERNAL naming the kernel and the field;
 *  - kernels written against T (cumsum for f32, i32, u32, f16; batchnorm
 *    and global_pool for f32, f16; f16 where the adapter has shader-f16)
 *    compile, one pipeline per type; the results of cumsum's f32, i32
 *    and u32 instances are checked against the CPU in test_webgpu_index.c
 *    (CumSum). */
#include "test.h"

#include <string.h>

#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu_device.h"

static void test_expand(void) {
    static const char src[] = "// a kernel\n"
                              "//!params x_off: u32, n: u32, alpha: f32,\n"
                              "  //!params dims: array<vec4<u32>, 2>, scale: vec4<f32>, last: i32\n"
                              "@group(0) @binding(0) var<uniform> P: Params;\n";
    char *out = NULL;
    wg_layout lay;
    CHECK_OK(wg_params_expand("k", src, WG_ELEM_I32, &out, &lay));
    CHECK(out && strstr(out, "alias T = i32;\n") == out);
    CHECK(out && strstr(out, "\nstruct Params { x_off: u32, n: u32, alpha: f32,\n dims: array<vec4<u32>, 2>, "
                             "scale: vec4<f32>, last: i32 };\n@group(0)"));
    CHECK(out && !strstr(out, "//!params"));
    /* words: x_off n alpha pad | dims (8) | scale (4) | last */
    CHECK(lay.n_words == 17);
    static const unsigned char want[17] = { WG_WORD_INT, WG_WORD_INT, WG_WORD_F32, WG_WORD_PAD,
                                            WG_WORD_INT, WG_WORD_INT, WG_WORD_INT, WG_WORD_INT,
                                            WG_WORD_INT, WG_WORD_INT, WG_WORD_INT, WG_WORD_INT,
                                            WG_WORD_F32, WG_WORD_F32, WG_WORD_F32, WG_WORD_F32, WG_WORD_INT };
    CHECK(memcmp(lay.kind, want, sizeof want) == 0);
    CHECK(strcmp(lay.names[lay.field[16]], "last") == 0);
    free(out);
    CHECK_OK(wg_params_expand("k", "//!params a: u32\n", WG_ELEM_F16, &out, &lay));
    CHECK(out && strcmp(out, "enable f16;\nalias T = f16;\nstruct Params { a: u32 };\n") == 0);
    free(out);
    /* an unknown type is the kernel's bug: named */
    CHECK(wg_params_expand("bad_kernel", "//!params a: vec3<f32>\n", WG_ELEM_F32, &out, &lay) == RLX_ERR_INTERNAL);
    CHECK(out == NULL && strstr(rlx_last_error(), "bad_kernel") && strstr(rlx_last_error(), "vec3"));
}

/* fill.wgsl declares y_off, n, value, value_hi (four integer words). */
static rlx_status get_fill(wg_backend *b, int variant) {
    wg_lower L;
    memset(&L, 0, sizeof L);
    wg_dispatch *d = wg_emit(&L, "fill");
    wg_bind(&L, d, 0, 0, 4);
    wg_p_u32(&L, d, 4);
    if (variant == 1) wg_p_f32(&L, d, 1.0f); /* an f32 where value: u32 is declared */
    else wg_p_u32(&L, d, 7);
    if (variant != 2) wg_p_u32(&L, d, 7); /* 2: value_hi missing */
    if (variant == 3) wg_p_u32(&L, d, 1); /* a word too many */
    WGPUComputePipeline pipe = NULL;
    rlx_status st = wg_pipeline_get(b, d, "test", &pipe);
    CHECK(st != RLX_OK || pipe != NULL);
    wg_lower_free(&L);
    return st;
}

static void test_check(wg_backend *b) {
    CHECK_OK(get_fill(b, 0));
    static const char *const field[4] = { NULL, "'value'", "'value_hi'", "declares 4" };
    for (int v = 1; v < 4; v++) {
        CHECK(get_fill(b, v) == RLX_ERR_INTERNAL);
        CHECK(strstr(rlx_last_error(), "kernel 'fill'") && strstr(rlx_last_error(), field[v]));
        if (!strstr(rlx_last_error(), field[v])) fprintf(stderr, "  message: %s\n", rlx_last_error());
    }
    /* copy.wgsl: threads, then padding before dims (array<vec4<u32>, 2>):
     * a writer that forgets wg_p_align16 is caught */
    wg_lower L;
    memset(&L, 0, sizeof L);
    wg_dispatch *d = wg_emit(&L, "copy");
    wg_bind(&L, d, 0, 0, 4);
    wg_bind(&L, d, 0, 0, 4);
    for (int i = 0; i < 5; i++) wg_p_u32(&L, d, 0);
    for (int i = 0; i < 24; i++) wg_p_u32(&L, d, 1);
    WGPUComputePipeline pipe = NULL;
    CHECK(wg_pipeline_get(b, d, "test", &pipe) == RLX_ERR_INTERNAL);
    CHECK(strstr(rlx_last_error(), "kernel 'copy'") && strstr(rlx_last_error(), "padding of field 'dims'"));
    wg_lower_free(&L);
}

/* Kernels written against T, each instantiated for every type it takes:
 * one module and pipeline per type. */
static void test_elem(wg_backend *b) {
    static const struct { const char *kernel; int n_bind, n_int, n_f32; bool ints; } k_cases[] = {
        { "cumsum", 2, 3, 0, true },     /* x, y; lines, a, inner */
        { "batchnorm", 6, 3, 1, false }, /* x, s, b, m, v, y; total, c, inner; eps */
        { "global_pool", 2, 2, 0, false },
    };
    wg_elem elems[4] = { WG_ELEM_F32, WG_ELEM_F16, WG_ELEM_I32, WG_ELEM_U32 };
    int made = 0;
    for (size_t c = 0; c < sizeof k_cases / sizeof k_cases[0]; c++) {
        WGPUComputePipeline pipes[4] = { NULL };
        for (int k = 0; k < 4; k++) {
            if ((elems[k] == WG_ELEM_F16 && !b->caps.shader_f16) || (k >= 2 && !k_cases[c].ints)) continue;
            wg_lower L;
            memset(&L, 0, sizeof L);
            wg_dispatch *d = wg_emit(&L, k_cases[c].kernel);
            d->elem = elems[k];
            for (int i = 0; i < k_cases[c].n_bind; i++) wg_bind(&L, d, 0, 0, 4);
            for (int i = 0; i < k_cases[c].n_int; i++) wg_p_u32(&L, d, 1);
            for (int i = 0; i < k_cases[c].n_f32; i++) wg_p_f32(&L, d, 1e-5f);
            CHECK_OK(wg_pipeline_get(b, d, "test", &pipes[k]));
            for (int j = 0; j < k; j++) CHECK(!pipes[j] || pipes[j] != pipes[k]);
            made += pipes[k] != NULL;
            wg_lower_free(&L);
        }
    }
    fprintf(stderr, "  %d instances of cumsum, batchnorm, global_pool%s\n", made,
            b->caps.shader_f16 ? " (f16 with shader-f16)" : " (no shader-f16 on this adapter: no f16)");
}
#endif

int main(void) {
#ifdef RLX_HAVE_WEBGPU
    test_expand();
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu_params: no GPU adapter: pipeline checks skipped; set RLX_TEST_REQUIRE_GPU=1 to make "
                        "this a failure\n");
        TEST_MAIN_END();
    }
    rlx_session_options o = { .device = "gpu" };
    rlx_backend *be = NULL;
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, &be));
    if (be) {
        test_check((wg_backend *)be);
        test_elem((wg_backend *)be);
        be->destroy(be);
    }
#endif
    TEST_MAIN_END();
}
