/* Kernel Params declared once and the element type of a kernel
 * (src/backend/webgpu/wg_params.c):
 *  - a `//!params` declaration becomes the WGSL struct, and its word
 *    layout has the padding WGSL's uniform rules put before vec4s and
 *    arrays of vec4 (no GPU needed);
 *  - a dispatch whose words disagree with its kernel's declaration (a
 *    field missing, an f32 where an integer is declared, a word too many,
 *    no padding before an array, two fields of one kind swapped, a field
 *    written under another name) fails at pipeline creation with
 *    RLX_ERR_INTERNAL naming the kernel, the field's position, its
 *    declared and its written name;
 *  - kernels written against T (cumsum for f32, i32, u32, f16; batchnorm
 *    and global_pool for f32, f16; f16 where the adapter has shader-f16)
 *    compile, one pipeline per type; the results of cumsum's f32, i32
 *    and u32 instances are checked against the CPU in test_webgpu_index.c
 *    (CumSum);
 *  - float selections (README.md, "Signed zeros"): the elementwise
 *    vocabulary's WGSL and ew_lib.wgsl choose between float values only
 *    through pick_ (a select of the bits), never a float select, min,
 *    max, clamp or sign, which a Vulkan driver may make a hardware
 *    min/max that orders -0 and +0 and NaN its own way (the H200 did),
 *    and no pick_ on a float comparison of its own values (lt_ compares
 *    on the bits); no embedded kernel but the listed tolerant ones has a
 *    select of min/max shape, select(a, b, a < b) and the like (no GPU
 *    needed). */
#include "test.h"

#include <string.h>

#ifdef RLX_HAVE_WEBGPU
#include "backend/webgpu/webgpu_device.h"
#include "backend/webgpu/lower_gemm.h"
#include "backend/webgpu/wg_codes.h"
#include "backend/webgpu/wgsl_gen.h"
#include "backend/webgpu/wgsl_sources.h"
#include "ir/ew.h"
#include "rlx/half.h"

static void test_expand(void) {
    static const char src[] = "// a kernel\n"
                              "//!elem f32 i32\n"
                              "//!params x_off: u32, n: u32, alpha: f32,\n"
                              "  //!params dims: array<vec4<u32>, 2>, scale: vec4<f32>, last: i32\n"
                              "@group(0) @binding(0) var<uniform> P: Params;\n";
    char *out = NULL;
    wg_layout lay;
    CHECK_OK(wg_params_expand("k", src, WG_ELEM_I32, &out, &lay));
    CHECK(out && strstr(out, "alias T = i32;\nalias TACC = i32;\nconst T_INT = true;\n") == out);
    /* the lines' fields in one struct at the end (the source writes binding 0 itself) */
    CHECK(out && strstr(out, "\nstruct Params { x_off: u32, n: u32, alpha: f32, dims: array<vec4<u32>, 2>, "
                             "scale: vec4<f32>, last: i32 };\n") &&
          strstr(out, "last: i32 };\n")[strlen("last: i32 };\n")] == 0);
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
    CHECK_OK(wg_params_expand("k", "//!elem f16\n//!params a: u32\n", WG_ELEM_F16, &out, &lay));
    CHECK(out && strstr(out, "enable f16;\nalias T = f16;\nalias TACC = f32;\n") == out &&
          strstr(out, "\nstruct Params { a: u32 };\n"));
    free(out);
    /* an unknown type is the kernel's bug: named */
    CHECK(wg_params_expand("bad_kernel", "//!params a: vec3<f32>\n", WG_ELEM_F32, &out, &lay) == RLX_ERR_INTERNAL);
    CHECK(out == NULL && strstr(rlx_last_error(), "bad_kernel") && strstr(rlx_last_error(), "vec3"));
    /* //!bind numbers storage bindings in order; //!main1d opens the 1-D
     * entry point with its flat index and bound */
    CHECK_OK(wg_params_expand("k", "//!params a: u32\n//!bind X: array<T>, S: array<atomic<u32>>\n//!bind Y: array<T>\n"
                                   "//!main1d i < P.a {\n}\n",
                              WG_ELEM_F32, &out, &lay));
    CHECK(out && strstr(out, "@group(0) @binding(1) var<storage, read_write> X: array<T>;\n"
                             "@group(0) @binding(2) var<storage, read_write> S: array<atomic<u32>>;\n"
                             "@group(0) @binding(3) var<storage, read_write> Y: array<T>;\n@compute @workgroup_size(64)\n"
                             "fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {\n"
                             "    let i = gid.x + gid.y * nwg.x * 64u;\n    if (i >= P.a) { return; }\n}\n"
                             "struct Params { a: u32 };\n@group(0) @binding(0) var<uniform> P: Params;\n"));
    free(out);
    /* fields declared apart (a snippet's after its includer's code: the
     * QDQ chain of kernels/qepi.wgsl's replacement) join the one struct,
     * in order, and the layout counts them all */
    CHECK_OK(wg_params_expand("k", "//!params a: u32\n//!bind X: array<T>\nfn f() {}\n//!params b: f32, c: u32\n",
                              WG_ELEM_F32, &out, &lay));
    CHECK(out && strstr(out, "struct Params { a: u32, b: f32, c: u32 };\n@group(0) @binding(0) var<uniform> P: Params;\n") &&
          strstr(out, "fn f() {}\n"));
    CHECK(lay.n_words == 3 && lay.kind[1] == WG_WORD_F32 && strcmp(lay.names[lay.field[2]], "c") == 0);
    free(out);
    /* a kernel is instantiated only for the types of its //!elem line (f32
     * without one); the first is the default */
    CHECK(wg_params_expand("f32_only", "//!params a: u32\n", WG_ELEM_F16, &out, &lay) == RLX_ERR_INTERNAL);
    CHECK(out == NULL && strstr(rlx_last_error(), "f32_only") && strstr(rlx_last_error(), "f16"));
    CHECK(wg_params_expand("k", "// x\n//!elem f32 i32\n", WG_ELEM_U32, &out, &lay) == RLX_ERR_INTERNAL);
    CHECK(wg_kernel_elem("copy") == WG_ELEM_U32 && wg_kernel_elem("unary") == WG_ELEM_F32);
}

/* ------------------------------------------------------------ float selections */

static bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

/* The arguments of the call whose '(' is at p: up to 3, trimmed, into
 * arg[i] (cap bytes each); the count, or -1 if the parentheses do not
 * close. */
static int call_args(const char *p, char arg[3][96], size_t cap) {
    int n = 0, depth = 0;
    const char *a0 = p + 1;
    for (const char *q = p; *q; q++) {
        depth += *q == '(' ? 1 : *q == ')' ? -1 : 0;
        bool end = depth == 0 && *q == ')';
        if ((depth == 1 && *q == ',') || end) {
            if (n < 3) {
                while (*a0 == ' ' || *a0 == '\n') a0++;
                size_t len = (size_t)(q - a0);
                while (len && (a0[len - 1] == ' ' || a0[len - 1] == '\n')) len--;
                snprintf(arg[n], cap, "%.*s", (int)len, a0);
            }
            n++;
            a0 = q + 1;
        }
        if (end) return n;
    }
    return -1;
}

/* 1 when the expression `s` is a u32: it starts with a bitcast to u32 or
 * holds an unsigned integer literal ("0u", "0x80000000u"). */
static bool u32_operand(const char *s) {
    if (strncmp(s, "bitcast<u32>", 12) == 0) return true;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || (p > s && ident_char(p[-1]))) continue;
        const char *q = p + (p[0] == '0' && p[1] == 'x' ? 2 : 0);
        while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f')) q++;
        if (q[-1] == 'u' || (*q == 'u' && !ident_char(q[1]))) return true;
    }
    return false;
}

/* The first float selection of `src` that is not pick_: a call of min,
 * max, clamp or sign, or a select none of whose two values is a u32;
 * NULL when none (the text, with "$x"-style operands, of a vocabulary
 * row or of ew_lib.wgsl, which works on f32). */
static const char *float_select(const char *src, char *what, size_t cap) {
    static const char *const k_calls[] = { "min(", "max(", "clamp(", "sign(", "select(" };
    for (const char *p = src; *p; p++) {
        if (p > src && (ident_char(p[-1]) || p[-1] == '$')) continue;
        for (size_t k = 0; k < sizeof k_calls / sizeof k_calls[0]; k++) {
            size_t n = strlen(k_calls[k]);
            if (strncmp(p, k_calls[k], n) != 0) continue;
            char arg[3][96];
            if (k == 4 && call_args(p + n - 1, arg, sizeof arg[0]) == 3 && (u32_operand(arg[0]) || u32_operand(arg[1])))
                continue;
            snprintf(what, cap, "%.60s", p);
            return p;
        }
    }
    return NULL;
}

/* A choice of min/max shape in `src`: fn(a, b, c) (fn "select" or
 * "pick_") with c comparing a and b by <, >, <= or >=, which a driver may
 * make a hardware min or max when they are floats; NULL when none. */
static const char *minmax_select(const char *src, const char *fn, char *what, size_t cap) {
    static const char *const k_ops[] = { " <= ", " >= ", " < ", " > " };
    size_t fl = strlen(fn);
    for (const char *p = strstr(src, fn); p; p = strstr(p + 1, fn)) {
        if ((p > src && ident_char(p[-1])) || p[fl] != '(') continue;
        char arg[3][96];
        if (call_args(p + fl, arg, sizeof arg[0]) != 3) continue;
        for (size_t k = 0; k < sizeof k_ops / sizeof k_ops[0]; k++) {
            const char *op = strstr(arg[2], k_ops[k]);
            if (!op) continue;
            char l[96], r[96];
            snprintf(l, sizeof l, "%.*s", (int)(op - arg[2]), arg[2]);
            snprintf(r, sizeof r, "%s", op + strlen(k_ops[k]));
            if ((strcmp(l, arg[0]) == 0 && strcmp(r, arg[1]) == 0) || (strcmp(l, arg[1]) == 0 && strcmp(r, arg[0]) == 0)) {
                snprintf(what, cap, "%.80s", p);
                return p;
            }
            break;
        }
    }
    return NULL;
}

/* src without its // comments (free() it); NULL on OOM. */
static char *code_only(const char *src) {
    wg_src b = { 0 };
    for (const char *p = src; *p;) {
        size_t n = strcspn(p, "\n");
        const char *c = strstr(p, "//");
        wg_src_printf(&b, "%.*s\n", (int)(c && c < p + n ? (size_t)(c - p) : n), p);
        p += n;
        p += *p == '\n';
    }
    if (b.oom) wg_src_free(&b);
    return b.s;
}

static void test_float_selects(void) {
    char what[128];
    /* the checks can fail: each flags what it is for */
    CHECK(float_select("fn f(x: f32) -> f32 { return select(x, 0.0, x < 0.0); }", what, sizeof what));
    CHECK(float_select("($x * clamp($x / 6.0 + 0.5, 0.0, 1.0))", what, sizeof what));
    CHECK(float_select("sign($x)", what, sizeof what) && float_select("max(0.0, $x)", what, sizeof what));
    CHECK(!float_select("pick_(pick_($x, 0.0, $x < 0.0), $x, isnan_($x)) + max_($x, $y) + clamp_($x, $a, $b)", what,
                        sizeof what));
    CHECK(!float_select("q = (q << 1u) | select(0u, 1u, ge); bitcast<f32>(select(bitcast<u32>(f), bitcast<u32>(t), c))",
                        what, sizeof what));
    CHECK(minmax_select("mx = select(mx, v, v > mx);", "select", what, sizeof what));
    CHECK(minmax_select("return select(y, x, x >= y);", "select", what, sizeof what));
    CHECK(minmax_select("pick_(pick_($x, 0.0, $x < 0.0), $x, isnan_($x))", "pick_", what, sizeof what));
    CHECK(!minmax_select("let lo = select(c - P.before, 0u, c < P.before); select(t, -t, x < 0.0)", "select", what,
                         sizeof what));
    CHECK(!minmax_select("pick_(pick_($x, 0.0, lt_($x, 0.0)), $x, isnan_($x))", "pick_", what, sizeof what));

    /* the vocabulary's WGSL (every unary, binary and chain kernel, the
     * GEMM, conv and RNN epilogues) and ew_lib.wgsl */
    for (int f = 0; f < RLX_EW_COUNT; f++) {
        const rlx_ew_info *r = rlx_ew_info_of(f);
        if (!r->wgsl) continue;
        CHECK_MSG(!float_select(r->wgsl, what, sizeof what), "vocabulary %s: a float choice not through pick_: %s", r->id,
                  what);
        CHECK_MSG(!minmax_select(r->wgsl, "pick_", what, sizeof what),
                  "vocabulary %s: pick_ on a float comparison of its values (use lt_): %s", r->id, what);
    }
    const char *lib = wg_wgsl_source("ew_lib");
    CHECK(lib != NULL);
    char *code = lib ? code_only(lib) : NULL; /* (pick_'s own select is on u32 bits) */
    CHECK(code != NULL);
    CHECK_MSG(code && !float_select(code, what, sizeof what), "ew_lib.wgsl: a float choice not through pick_: %s", what);
    CHECK_MSG(code && !minmax_select(code, "pick_", what, sizeof what),
              "ew_lib.wgsl: pick_ on a float comparison of its values (use lt_): %s", what);
    free(code);

    /* the embedded kernels: a select of min/max shape only in the kernels
     * whose results do not depend on how it orders zeros and NaN (their
     * finish steps take the CPU's bits: pool.wgsl's max_finish,
     * global_max.wgsl, reduce.wgsl's finish) */
    static const char *const k_tolerant[] = { "pool", "pool2d", "global_pool", "global_pool_wg", "reduce" };
    for (size_t k = 0; k < rlx_wgsl_source_count; k++) {
        const char *name = rlx_wgsl_sources[k].name;
        bool tolerant = false;
        for (size_t t = 0; t < sizeof k_tolerant / sizeof k_tolerant[0]; t++) tolerant |= strcmp(name, k_tolerant[t]) == 0;
        if (tolerant) continue;
        code = code_only(rlx_wgsl_sources[k].source);
        CHECK_MSG(code && !minmax_select(code, "select", what, sizeof what),
                  "kernel %s: a select of min/max shape (floats: t_pick on t_lt; integers: min, max): %s",
                  name, what);
        free(code);
    }
}

/* fill.wgsl declares y_off, n, value, value_hi (four integer words). */
static rlx_status get_fill(wg_backend *b, int variant) {
    wg_lower L;
    memset(&L, 0, sizeof L);
    wg_dispatch *d = wg_emit(&L, "fill");
    wg_bind(&L, d, "y_off", 0, 0, 4);
    wg_p_u32(&L, d, variant == 5 ? "value" : "n", 4); /* 5: a field written under another's name */
    if (variant == 1) wg_p_f32(&L, d, "value", 1.0f); /* an f32 where value: u32 is declared */
    else if (variant == 4) wg_p_u32(&L, d, "value_hi", 7); /* 4: value and value_hi swapped */
    else wg_p_u32(&L, d, "value", 7);
    if (variant == 4) wg_p_u32(&L, d, "value", 7);
    else if (variant != 2) wg_p_u32(&L, d, "value_hi", 7); /* 2: value_hi missing */
    if (variant == 3) wg_p_u32(&L, d, "extra", 1); /* a word too many */
    WGPUComputePipeline pipe = NULL;
    rlx_status st = wg_pipeline_get(b, d, "test", &pipe);
    CHECK(st != RLX_OK || pipe != NULL);
    wg_lower_free(&L);
    return st;
}

static void test_check(wg_backend *b) {
    CHECK_OK(get_fill(b, 0));
    static const char *const field[6] = {
        NULL,
        "field 2 (word 2) is 'value' (i32/u32) in the kernel's declaration (//!params), but the lowering wrote "
        "'value' (f32) there",
        "field 3 (word 3) is 'value_hi' (i32/u32) in the kernel's declaration (//!params), but the lowering wrote "
        "nothing there",
        "writes 5 Params words, the kernel declares 4 (//!params); word 4 is 'extra' (i32/u32)",
        "field 2 (word 2) is 'value' (i32/u32) in the kernel's declaration (//!params), but the lowering wrote "
        "'value_hi' (i32/u32) there",
        "field 1 (word 1) is 'n' (i32/u32) in the kernel's declaration (//!params), but the lowering wrote "
        "'value' (i32/u32) there",
    };
    for (int v = 1; v < 6; v++) {
        CHECK(get_fill(b, v) == RLX_ERR_INTERNAL);
        CHECK_MSG(strstr(rlx_last_error(), "kernel 'fill'") && strstr(rlx_last_error(), field[v]), "variant %d: %s",
                  v, rlx_last_error());
    }
    /* copy.wgsl: threads, then padding before dims (array<vec4<u32>, 2>):
     * a writer that forgets wg_p_align16 is caught */
    wg_lower L;
    memset(&L, 0, sizeof L);
    wg_dispatch *d = wg_emit(&L, "copy");
    wg_bind(&L, d, "x_off", 0, 0, 4);
    wg_bind(&L, d, "y_off", 0, 0, 4);
    static const char *const head[5] = { "n", "rank", "src_base", "dst_base", "threads" };
    for (int i = 0; i < 5; i++) wg_p_u32(&L, d, head[i], 0);
    for (int i = 0; i < 24; i++) wg_p_u32(&L, d, i < 8 ? "dims" : i < 16 ? "ss" : "ds", 1);
    WGPUComputePipeline pipe = NULL;
    CHECK(wg_pipeline_get(b, d, "test", &pipe) == RLX_ERR_INTERNAL);
    CHECK(strstr(rlx_last_error(), "kernel 'copy'") &&
          strstr(rlx_last_error(), "is padding before 'dims' in the kernel's declaration (//!params), but the lowering "
                                   "wrote 'dims' (i32/u32)"));
    wg_lower_free(&L);
    /* the words of an array field carry its name: one word short of dims
     * is caught at the first word of ss */
    memset(&L, 0, sizeof L);
    d = wg_emit(&L, "copy");
    wg_bind(&L, d, "x_off", 0, 0, 4);
    wg_bind(&L, d, "y_off", 0, 0, 4);
    for (int i = 0; i < 5; i++) wg_p_u32(&L, d, head[i], 0);
    wg_p_align16(&L, d);
    for (int i = 0; i < 24; i++) wg_p_u32(&L, d, i < 7 ? "dims" : i < 16 ? "ss" : "ds", 1);
    CHECK(wg_pipeline_get(b, d, "test", &pipe) == RLX_ERR_INTERNAL);
    CHECK_MSG(strstr(rlx_last_error(), "field 7 (word 15) is 'dims' (i32/u32) in the kernel's declaration (//!params), "
                                       "but the lowering wrote 'ss' (i32/u32)"), "%s", rlx_last_error());
    wg_lower_free(&L);
}

/* Writes the words lay declares, each under its field's name: 1 in
 * integer fields, 1.0 in f32 ones. */
static void write_declared(wg_lower *L, wg_dispatch *d, const wg_layout *lay) {
    for (int i = 0; i < lay->n_words; i++) {
        const char *name = lay->names[lay->field[i]];
        if (lay->kind[i] == WG_WORD_PAD) wg_p_align16(L, d), i = d->n_params - 1;
        else if (lay->kind[i] == WG_WORD_F32) wg_p_f32(L, d, name, 1.0f);
        else wg_p_u32(L, d, name, 1);
    }
}

/* Kernels written against T, each instantiated for every type it takes:
 * one module and pipeline per type. */
static void test_elem(wg_backend *b) {
    static const struct { const char *kernel; bool ints; } k_cases[] = {
        { "cumsum", true }, /* x_off, y_off; lines, a, inner */
        { "batchnorm", false }, /* x_off, s_off, b_off, m_off, v_off, y_off; total, c, inner; eps */
        { "global_pool", false },
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
            char *code = NULL;
            wg_layout lay;
            CHECK_OK(wg_params_expand(k_cases[c].kernel, wg_wgsl_source(k_cases[c].kernel), elems[k], &code, &lay));
            free(code);
            write_declared(&L, d, &lay);
            CHECK_OK(wg_pipeline_get(b, d, "test", &pipes[k]));
            for (int j = 0; j < k; j++) CHECK(!pipes[j] || pipes[j] != pipes[k]);
            made += pipes[k] != NULL;
            wg_lower_free(&L);
        }
    }
    fprintf(stderr, "  %d instances of cumsum, batchnorm, global_pool%s\n", made,
            b->caps.shader_f16 ? " (f16 with shader-f16)" : " (no shader-f16 on this adapter: no f16)");
}

/* Creates the pipeline of kernel `name` (source src, generated when
 * `generated`) for elem, from a dispatch that writes the words its
 * declaration asks for, override constants at their defaults: 1 when
 * made, 0 when elem is not a type of the kernel (or f16 without
 * shader-f16); a failure to compile is a failed check. */
static int instantiate(wg_backend *b, const char *name, const char *src, bool generated, wg_elem elem) {
    char *code = NULL;
    wg_layout lay;
    if ((elem == WG_ELEM_F16 && !b->caps.shader_f16) || wg_params_expand(name, src, elem, &code, &lay)) return 0;
    free(code);
    wg_lower L;
    memset(&L, 0, sizeof L);
    wg_dispatch *d = generated ? wg_emit_source(&L, name, src) : wg_emit(&L, name);
    d->elem = elem;
    write_declared(&L, d, &lay);
    WGPUComputePipeline pipe = NULL;
    rlx_status st = wg_pipeline_get(b, d, "test", &pipe);
    CHECK_MSG(st == RLX_OK && pipe, "kernel %s for element type %d: %s", name, (int)elem, rlx_last_error());
    wg_lower_free(&L);
    return pipe != NULL;
}

/* Every embedded kernel (a source with an entry point; snippets are not
 * kernels) compiles for every element type of its //!elem line. */
static void test_all_instances(wg_backend *b) {
    int made = 0, kernels = 0;
    for (size_t k = 0; k < rlx_wgsl_source_count; k++) {
        const char *name = rlx_wgsl_sources[k].name, *src = rlx_wgsl_sources[k].source;
        if (!strstr(src, "@compute") && !strstr(src, "//!main1d")) continue;
        kernels++;
        for (int e = 0; e < WG_ELEM_COUNT; e++) made += instantiate(b, name, src, false, (wg_elem)e);
    }
    fprintf(stderr, "  %d instances of %d kernels, each for the types it declares%s\n", made, kernels,
            b->caps.shader_f16 ? "" : " (no shader-f16 on this adapter: not f16)");
}

/* The generated kernels are templates over T too: the tiled GEMM (a
 * vec4 and a scalar configuration, with residual and split-K; with f16
 * sums (hblock, gpu.f16_accumulate=f16) flushed inside a k tile,
 * unrolled, and every two tiles, looped, with split-K) and the depthwise
 * conv compile for f32 and f16 (with shader-f16; the f16-sum kernels
 * need it for both). The f16-sum kernels do their products as f16 FMAs
 * into f16 partial sums; block lengths that neither divide the k step nor
 * are a multiple of it, and f16 sums of f32 operands, are refused. */
static void test_generated_instances(wg_backend *b) {
    static const wg_gemm_kernel k_gemm[4] = {
        { .tm = 4, .tn = 4, .wgx = 16, .wgy = 16, .bk = 8, .amode = 1, .bmode = 1, .act = RLX_EW_RELU, .yvec = true,
          .res = true },
        { .tm = 8, .tn = 4, .wgx = 8, .wgy = 8, .bk = 16, .amode = 0, .bmode = 4, .ckh = 3, .ckw = 3, .splitk = true },
        { .tm = 8, .tn = 8, .wgx = 16, .wgy = 16, .bk = 16, .amode = 1, .bmode = 1, .a16 = true, .b16 = true,
          .yvec = true, .unroll_k = true, .hblock = 8, .act = RLX_EW_RELU },
        { .tm = 4, .tn = 4, .wgx = 16, .wgy = 8, .bk = 16, .amode = 0, .bmode = 3, .a16 = true, .b16 = true,
          .splitk = true, .hblock = 32 },
    };
    char *src[5] = { wg_gen_gemm_source(&k_gemm[0]), wg_gen_gemm_source(&k_gemm[1]), wg_gen_gemm_source(&k_gemm[2]),
                     wg_gen_gemm_source(&k_gemm[3]), wg_gen_dwconv_source(3, 3, 4, RLX_EW_RELU, true) };
    int made = 0;
    for (int g = 0; g < 5; g++) {
        CHECK(src[g] != NULL);
        if (src[g] && (g == 2 || g == 3)) {
            CHECK(strstr(src[g], "h0 = fma(vec4<TILE_T>(a0.x), b0, h0);") && strstr(src[g], "alias TILE_T = f16;"));
            CHECK(strstr(src[g], "c0 = c0 + vec4<f32>(h0);") && !strstr(src[g], "c0 = fma("));
        }
        if (src[g] && g < 2) CHECK(strstr(src[g], "alias TILE_T = f32;") && !strstr(src[g], "f16>"));
        bool needs_f16 = g == 2 || g == 3;
        for (int e = 0; src[g] && e < 2 && (b->caps.shader_f16 || !needs_f16); e++)
            made += instantiate(b, g < 4 ? "gemm_gen" : "dwconv_gen", src[g], true, e ? WG_ELEM_F16 : WG_ELEM_F32);
        free(src[g]);
    }
    CHECK(made == (b->caps.shader_f16 ? 10 : 3));
    wg_gemm_kernel bad = k_gemm[2];
    bad.hblock = 12; /* neither divides 16 nor is a multiple of it */
    char *s = wg_gen_gemm_source(&bad);
    CHECK(s == NULL);
    free(s);
    bad = k_gemm[2];
    bad.b16 = false; /* f16 sums of an f32 operand */
    s = wg_gen_gemm_source(&bad);
    CHECK(s == NULL);
    free(s);
    /* the int8 instance (WG_GEMM_ELEM_Q8): 4 x 4 and 8 x 8 blocks, a
     * partial last round of loads (32 x 64 tiles of 128 invocations), the
     * emulated 4x8 products and dot4I8Packed where the device has it */
    static const wg_gemm_kernel k_q8[3] = {
        { .tm = 4, .tn = 4, .wgx = 16, .wgy = 16, .bk = 16, .elem = WG_GEMM_ELEM_Q8 },
        { .tm = 8, .tn = 8, .wgx = 16, .wgy = 16, .bk = 16, .elem = WG_GEMM_ELEM_Q8 },
        { .tm = 4, .tn = 4, .wgx = 16, .wgy = 8, .bk = 12, .elem = WG_GEMM_ELEM_Q8 },
    };
    int made_q8 = 0, want_q8 = 0;
    for (int g = 0; g < 3; g++)
        for (int d4 = 0; d4 < 2; d4++) {
            if (d4 && !b->caps.dot4) continue;
            wg_gemm_kernel q = k_q8[g];
            q.dot4 = d4;
            char *qs = wg_gen_gemm_source(&q);
            CHECK(qs != NULL);
            if (!qs) continue;
            /* the product form: kernels/qdot_dp4.wgsl (dot4I8Packed) or qdot.wgsl (written out) */
            CHECK(strstr(qs, d4 ? "//!include qdot_dp4\n" : "//!include qdot\n") != NULL);
            CHECK(strstr(qs, g == 1 ? "c15 = c15 + vec4<i32>(qdot(a1.w, b1.x)" : "c3 = c3 + vec4<i32>(qdot(a0.w, b0.x)"));
            want_q8++;
            made_q8 += instantiate(b, "qgemm_gen", qs, true, WG_ELEM_F32);
            free(qs);
        }
    CHECK(made_q8 == want_q8);
    wg_gemm_kernel bad_q8 = k_q8[0];
    bad_q8.tm = 6;
    s = wg_gen_gemm_source(&bad_q8);
    CHECK(s == NULL);
    free(s);
    fprintf(stderr, "  %d instances of generated GEMM and depthwise kernels, %d of the int8 GEMM\n", made, made_q8);
}

/* f16 instances run on f16 data (binary16 in memory, two to a word)
 * against the CPU: Tanh (unary.wgsl: f32 math, one rounding to f16),
 * Add with a broadcast operand (binary.wgsl), a transposing copy
 * (copy.wgsl) and Gather (gather.wgsl), both exact. Outputs start as
 * NaN. */
static void test_f16_runs(wg_backend *b) {
    if (!b->caps.shader_f16) {
        fprintf(stderr, "  no shader-f16 on this adapter: f16 runs skipped\n");
        return;
    }
    enum { R = 6, C = 10, N = R * C };
    uint16_t x[N], x2[C], y[N];
    float xf[N], x2f[C];
    for (int i = 0; i < N; i++) xf[i] = rlx_f16_to_f32(x[i] = rlx_f32_to_f16(test_rand_uniform(-3.0f, 3.0f)));
    for (int i = 0; i < C; i++) x2f[i] = rlx_f16_to_f32(x2[i] = rlx_f32_to_f16(test_rand_uniform(-3.0f, 3.0f)));
    for (int op = 0; op < 4; op++) {
        for (int i = 0; i < N; i++) y[i] = 0x7e00; /* NaN */
        wg_lower L;
        memset(&L, 0, sizeof L);
        L.caps = &b->caps;
        static const char *const kernel[4] = { "unary", "binary", "copy", "gather" };
        wg_dispatch *d = wg_emit(&L, kernel[op]);
        d->elem = WG_ELEM_F16;
        int32_t idx[R] = { 5, 0, -1, 2, 3, -6 }; /* rows of x, negative from the end */
        void *host[4] = { x, op == 1 ? (void *)x2 : op == 3 ? (void *)idx : y, y, y };
        size_t bytes[4] = { sizeof x, op == 1 ? sizeof x2 : op == 3 ? sizeof idx : sizeof y, sizeof y, 16 };
        static const char *const bind[4][4] = { { "x_off", "y_off" }, { "a_off", "b_off", "y_off" },
                                                { "x_off", "y_off" }, { "x_off", "i_off", "y_off", "s_off" } };
        int nb = op == 1 ? 3 : op == 3 ? 4 : 2;
        for (int i = 0; i < nb; i++) wg_bind(&L, d, bind[op][i], i, 0, 4);
        if (op == 0) {
            wg_spec(&L, d, "OP", RLX_EW_TANH);
            WG_P(&L, d, wg_pu("n", N), wg_pf("alpha", 0.0f), wg_pf("beta", 0.0f), wg_pf("s", 0.0f));
        } else if (op == 1) { /* y[r, c] = x[r, c] + x2[c] */
            wg_spec(&L, d, "OP", RLX_EW_ADD);
            WG_P(&L, d, wg_pu("n", N), wg_pu("rank", 2));
            wg_p_align16(&L, d);
            const uint32_t w[24] = { R, C, 1, 1, 1, 1, 1, 1, C, 1, 0, 0, 0, 0, 0, 0, 0, 1 };
            for (int i = 0; i < 24; i++) wg_p_u32(&L, d, i < 8 ? "dims" : i < 16 ? "a_str" : "b_str", w[i]);
        } else if (op == 2) { /* y[c, r] = x[r, c] */
            WG_P(&L, d, wg_pu("n", N), wg_pu("rank", 2), wg_pi("src_base", 0), wg_pi("dst_base", 0),
                 wg_pu("threads", N));
            wg_p_align16(&L, d);
            const uint32_t dims[8] = { R, C, 1, 1, 1, 1, 1, 1 }, ss[8] = { C, 1 }, ds[8] = { 1, R };
            for (int i = 0; i < 8; i++) wg_p_u32(&L, d, "dims", dims[i]);
            for (int i = 0; i < 8; i++) wg_p_u32(&L, d, "ss", ss[i]);
            for (int i = 0; i < 8; i++) wg_p_u32(&L, d, "ds", ds[i]);
        } else { /* y[i, c] = x[idx[i], c]; status words bound, REPORT off */
            WG_P(&L, d, wg_pu("tag", 0), wg_pu("n", N), wg_pu("inner", C), wg_pu("n_idx", R), wg_pu("a", R),
                 wg_pu("ne", N));
        }
        CHECK_OK(wg_grid_1d(&L, d, N));
        CHECK_OK(wg_run_dispatch(b, d, host, bytes, 2 - (op == 0 || op == 2), "test"));
        int bad = 0;
        for (int i = 0; i < N; i++) {
            int r = i / C, c = i % C;
            float got = rlx_f16_to_f32(y[i]), want;
            if (op == 0) want = (float)tanh((double)xf[i]);
            else if (op == 1) want = rlx_f16_to_f32(rlx_f32_to_f16(xf[i] + x2f[c]));
            else if (op == 2) got = rlx_f16_to_f32(y[c * R + r]), want = xf[i];
            else want = xf[(idx[r] + R) % R * C + c];
            float tol = op == 0 ? 2e-3f : op == 1 ? fabsf(want) * 2e-3f : 0.0f;
            if (!(fabsf(got - want) <= tol)) {
                if (!bad) fprintf(stderr, "  %s f16: element %d is %g, want %g\n", kernel[op], i, got, want);
                bad++;
            }
        }
        CHECK_MSG(bad == 0, "%s for f16: %d of %d elements wrong", kernel[op], bad, N);
        wg_lower_free(&L);
    }
}
#endif

int main(void) {
#ifdef RLX_HAVE_WEBGPU
    test_expand();
    test_float_selects();
    if (!test_have_gpu()) {
        fprintf(stderr, "test_webgpu_params: no GPU adapter: pipeline checks skipped; set RLX_TEST_REQUIRE_GPU=1 to make "
                        "this a failure\n");
        TEST_MAIN_END();
    }
    rlx_session_options o = { .device = "gpu" };
    rlx_backend *be = NULL;
    CHECK_OK(rlx_backend_webgpu_create("gpu", &o, NULL, &be));
    if (be) {
        test_check((wg_backend *)be);
        test_elem((wg_backend *)be);
        test_all_instances((wg_backend *)be);
        test_generated_instances((wg_backend *)be);
        test_f16_runs((wg_backend *)be);
        be->destroy(be);
    }
#endif
    TEST_MAIN_END();
}
