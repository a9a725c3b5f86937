/* Kernel Params declared once, and the element type of a kernel.
 *
 * A kernel source declares its uniform Params with one or more lines
 *     //!params x_off: u32, y_off: u32, n: u32, alpha: f32, dims: array<vec4<u32>, 2>
 * (fields in order; the lines concatenate, wherever they stand: an
 * included snippet may add fields after its includer's). At pipeline
 * creation they become `struct Params { ... };` and binding 0 at the end
 * of the text (WGSL declarations may come in any order);
 * the same text gives the word layout that WGSL's uniform rules imply
 * (scalars 4 bytes, vec4 and arrays of vec4 16-byte aligned, padding
 * where alignment needs it), against which compile checks the words each
 * dispatch wrote (wg_p_*, wg_bind): each carries its field's name and
 * kind, so a C writer cannot disagree with the declaration in the name,
 * order, kind or count of a field. A prelude defines the element type:
 * `alias T = f32;` (or f16 with `enable f16;`, i32, u32), the accumulator
 * type TACC (f32 for f16), T_INT, T_LOWEST (T's lowest finite value),
 * t_bits / t_from_bits, t_pick (a select on the bits), t_lt and t_isnan. A kernel's
 * line `//!elem u32 f32 i32 f16` lists the types it is written for, the
 * first being the T it gets when the lowering names none (the word
 * movers: 4-byte words); without one, a kernel is f32 only. A line
 * `//!include NAME` pastes the embedded snippet kernels/NAME.wgsl (one
 * level). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/webgpu/webgpu_device.h"
#include "backend/webgpu/wgsl_gen.h"

static const char k_tag[] = "//!params";
static const char k_bind[] = "//!bind ";
static const char k_main1d[] = "//!main1d ";
static const char *const k_elem_name[WG_ELEM_COUNT] = { "f32", "f16", "i32", "u32" };
static const char *const k_kind_name[] = { "nothing", "i32/u32", "f32", "padding" };

/* Kind and size in words of a field type (spaces removed), 0 if unknown. */
static int field_type(const char *t, unsigned char *kind) {
    static const struct { const char *name; unsigned char kind; int words; } k_types[] = {
        { "u32", WG_WORD_INT, 1 }, { "i32", WG_WORD_INT, 1 }, { "f32", WG_WORD_F32, 1 },
        { "vec4<u32>", WG_WORD_INT, 4 }, { "vec4<i32>", WG_WORD_INT, 4 }, { "vec4<f32>", WG_WORD_F32, 4 },
        { "vec4u", WG_WORD_INT, 4 }, { "vec4i", WG_WORD_INT, 4 }, { "vec4f", WG_WORD_F32, 4 },
    };
    int count = 1;
    char inner[32];
    if (strncmp(t, "array<", 6) == 0) { /* array<vec4<X>,N> */
        const char *comma = strrchr(t, ',');
        size_t n = comma ? (size_t)(comma - t - 6) : 0;
        if (!comma || n >= sizeof inner || sscanf(comma + 1, "%d>", &count) != 1 || count <= 0 ||
            count > WG_MAX_PARAMS)
            return 0;
        memcpy(inner, t + 6, n);
        inner[n] = 0;
        t = inner;
    }
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (strcmp(t, k_types[i].name) == 0 && (count == 1 || k_types[i].words == 4)) {
            *kind = k_types[i].kind;
            return k_types[i].words * count;
        }
    return 0;
}

/* Appends the fields of one declaration line [p, e) to lay. */
static rlx_status parse_fields(const char *kernel, const char *p, const char *e, wg_layout *lay, int *n_fields) {
    while (p < e) {
        const char *f = p;
        int depth = 0;
        while (p < e && (depth > 0 || *p != ',')) depth += *p == '<' ? 1 : *p == '>' ? -1 : 0, p++;
        char text[96];
        size_t n = 0;
        for (const char *q = f; q < p && n + 1 < sizeof text; q++)
            if (*q != ' ' && *q != '\t' && *q != '\r') text[n++] = *q;
        text[n] = 0;
        if (p < e) p++; /* the comma */
        if (!n) continue;
        char *colon = strchr(text, ':');
        unsigned char kind = 0;
        int words = colon ? field_type(colon + 1, &kind) : 0;
        if (!words)
            return rlx_fail(RLX_ERR_INTERNAL, "kernel '%s': Params field '%s' is not 'name: type' with a type of u32, i32, "
                                              "f32, vec4<..> or array<vec4<..>, N>", kernel, text);
        int at = words >= 4 ? (lay->n_words + 3) / 4 * 4 : lay->n_words;
        if (at + words > WG_MAX_PARAMS || *n_fields >= WG_MAX_PARAMS)
            return rlx_fail(RLX_ERR_INTERNAL, "kernel '%s': Params larger than %d words", kernel, WG_MAX_PARAMS);
        *colon = 0;
        snprintf(lay->names[*n_fields], sizeof lay->names[0], "%s", text);
        for (int i = lay->n_words; i < at; i++) lay->kind[i] = WG_WORD_PAD, lay->field[i] = (unsigned char)*n_fields;
        for (int i = at; i < at + words; i++) lay->kind[i] = kind, lay->field[i] = (unsigned char)*n_fields;
        lay->n_words = at + words;
        (*n_fields)++;
    }
    return RLX_OK;
}

/* The state of one expansion: the text, the layout and fields so far
 * (their declarations in `fields`, written at the end), the storage
 * bindings declared so far. */
typedef struct expansion {
    const char *kernel;
    wg_src *o, *fields;
    wg_layout *lay;
    int n_fields, n_bind;
    bool own_p; /* own_p: the source declares binding 0 itself */
} expansion;

/* Appends src to x->o, line by line: `//!include NAME` (depth 0 only)
 * pastes the embedded source NAME, processed likewise; `//!params` lines
 * add their fields to the layout and become the struct and binding 0;
 * `//!bind NAME: TYPE, ...` lines become the next storage bindings;
 * `//!main1d i < P.n {` opens the entry point of a 1-D grid with flat
 * index i, returning past P.n (`//!main1d i {`: no bound). */
static rlx_status expand(expansion *x, const char *src, int depth) {
    static const char inc[] = "//!include ";
    for (const char *p = src; *p;) {
        const char *e = p + strcspn(p, "\n");
        const char *t = p + strspn(p, " \t");
        const char *nx = *e ? e + 1 : e;
        if (depth == 0 && strncmp(t, "enable ", 7) == 0) {
            /* directives: moved before the prelude by wg_params_expand */
        } else if (depth == 0 && strncmp(t, inc, sizeof inc - 1) == 0) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(t + sizeof inc - 1, " \r\n"), t + sizeof inc - 1);
            const char *snippet = wg_wgsl_source(name);
            if (!snippet)
                return rlx_fail(RLX_ERR_INTERNAL, "kernel '%s' includes an unknown snippet '%s'", x->kernel, name);
            RLX_TRY(expand(x, snippet, 1));
        } else if (depth > 0 && strncmp(t, "//!audited", 10) == 0) {
            /* an audit covers one kernel's accesses and the lowerings that
             * emit it; a snippet's claim would spread to every includer */
            return rlx_fail(RLX_ERR_INTERNAL, "kernel '%s': an included snippet has a //!audited line (only a kernel's "
                                              "own text may: README.md, \"Runtime checks\")", x->kernel);
        } else if (strncmp(t, k_tag, sizeof k_tag - 1) == 0) {
            const char *fs = t + sizeof k_tag - 1, *fe = e;
            RLX_TRY(parse_fields(x->kernel, fs, fe, x->lay, &x->n_fields));
            while (fe > fs && (fe[-1] == ' ' || fe[-1] == ',' || fe[-1] == '\r')) fe--;
            wg_src_printf(x->fields, "%s%.*s", x->fields->n ? "," : "", (int)(fe - fs), fs);
        } else if (strncmp(t, k_main1d, sizeof k_main1d - 1) == 0) {
            /* the entry point of a 1-D grid (wg_grid_1d: 64 per workgroup,
             * folded into y past 65,535 workgroups), its flat index v and,
             * with "< BOUND", the return of the invocations past the end */
            const char *v = t + sizeof k_main1d - 1, *lt = strstr(v, " < ");
            int nv = (int)strcspn(v, " {\r\n");
            wg_src_printf(x->o, "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) gid: vec3u, "
                                "@builtin(num_workgroups) nwg: vec3u) {\n    let %.*s = gid.x + gid.y * nwg.x * 64u;\n",
                          nv, v);
            if (lt && lt < e)
                wg_src_printf(x->o, "    if (%.*s >= %.*s) { return; }\n", nv, v, (int)strcspn(lt + 3, " {\r\n"),
                              lt + 3);
        } else if (strncmp(t, k_bind, sizeof k_bind - 1) == 0) {
            for (const char *f = t + sizeof k_bind - 1; f < e;) {
                const char *q = f;
                for (int d = 0; q < e && (d > 0 || *q != ','); q++) d += *q == '<' ? 1 : *q == '>' ? -1 : 0;
                const char *s0 = f + strspn(f, " "), *s1 = q;
                while (s1 > s0 && (s1[-1] == ' ' || s1[-1] == '\r')) s1--;
                if (s1 > s0)
                    wg_src_printf(x->o, "@group(0) @binding(%d) var<storage, read_write> %.*s;\n", ++x->n_bind,
                                  (int)(s1 - s0), s0);
                f = q < e ? q + 1 : q;
            }
        } else {
            wg_src_printf(x->o, "%.*s\n", (int)(e - p), p);
        }
        p = nx;
    }
    return RLX_OK;
}

/* The types of src's `//!elem` line (a mask of 1 << wg_elem; the first
 * listed in *first), or f32 alone when it has none. */
static unsigned elem_line(const char *src, wg_elem *first) {
    static const char tag[] = "//!elem";
    const char *p = src && strncmp(src, tag, sizeof tag - 1) == 0 ? src : src ? strstr(src, "\n//!elem") : NULL;
    p = p && *p == '\n' ? p + 1 : p;
    *first = WG_ELEM_F32;
    if (!p) return 1u << WG_ELEM_F32;
    unsigned mask = 0;
    for (p += sizeof tag - 1; *p == ' ';) {
        p++;
        for (int e = 0; e < WG_ELEM_COUNT; e++)
            if (strncmp(p, k_elem_name[e], 3) == 0) {
                if (!mask) *first = (wg_elem)e;
                mask |= 1u << e;
            }
        p += strcspn(p, " \n");
    }
    return mask;
}

wg_elem wg_kernel_elem(const char *kernel) {
    wg_elem first;
    elem_line(wg_wgsl_source(kernel), &first);
    return first;
}

unsigned wg_kernel_types(const char *kernel) {
    static const unsigned k_bit[WG_ELEM_COUNT] = { WG_F32, WG_F16, WG_I32, WG_U32 };
    wg_elem first;
    unsigned m = elem_line(wg_wgsl_source(kernel), &first), out = 0;
    for (int e = 0; e < WG_ELEM_COUNT; e++)
        if (m & (1u << e)) out |= k_bit[e];
    return out;
}

#define PICK_T "fn t_pick(f: T, t: T, c: bool) -> T { return t_from_bits(select(t_bits(f), t_bits(t), c)); }\n"
/* x < y of non-NaN floats by integer comparison (ew_lib.wgsl's lt_): the
 * bits mapped to an i32 of the same order, -0 and +0 both 0 */
#define LT_F32(CONV) \
    "fn t_key(x: T) -> i32 { let i = bitcast<i32>(" CONV "); return select(i, (-2147483647 - 1) - i, i < 0); }\n" \
    "fn t_lt(x: T, y: T) -> bool { return t_key(x) < t_key(y); }\n"
#define LT_INT "fn t_lt(x: T, y: T) -> bool { return x < y; }\n"

rlx_status wg_params_expand(const char *kernel, const char *src, wg_elem elem, char **out, wg_layout *lay) {
    *out = NULL;
    memset(lay, 0, sizeof *lay);
    wg_elem first;
    if ((unsigned)elem >= WG_ELEM_COUNT || !(elem_line(src, &first) & (1u << elem)))
        return rlx_fail(RLX_ERR_INTERNAL, "kernel '%s' is not written for element type %s (its //!elem line)", kernel,
                        (unsigned)elem < WG_ELEM_COUNT ? k_elem_name[elem] : "?");
    /* the prelude: T, TACC, T_INT, T_LOWEST and T's bits as a word (t_bits of an
     * f16 is its binary16 in the low half; movers use them where an
     * element is moved as bits: bool bytes, i64 pairs, of a u32 instance);
     * t_pick(f, t, c), c ? t : f chosen on the bits, t_lt(x, y), x < y (for
     * a float T by integer comparisons of the bits, for non-NaN x, y: with
     * t_pick a choice no driver may turn into a min or max, as ew_lib.wgsl's
     * lt_ and pick_), and t_isnan (false for an integer T) */
    static const char *const k_prelude[WG_ELEM_COUNT] = {
        "alias T = f32;\nalias TACC = f32;\nconst T_INT = false;\nconst T_LOWEST: T = -3.40282347e+38;\n"
        "fn t_bits(x: T) -> u32 { return bitcast<u32>(x); }\nfn t_from_bits(w: u32) -> T { return bitcast<T>(w); }\n"
        "fn t_isnan(x: T) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n" PICK_T LT_F32("x"),
        "enable f16;\nalias T = f16;\nalias TACC = f32;\nconst T_INT = false;\nconst T_LOWEST: T = -65504.0h;\n"
        "fn t_bits(x: T) -> u32 { return pack2x16float(vec2<f32>(f32(x), 0.0)); }\n"
        "fn t_from_bits(w: u32) -> T { return T(unpack2x16float(w).x); }\n"
        "fn t_isnan(x: T) -> bool { return (t_bits(x) & 0x7fffu) > 0x7c00u; }\n" PICK_T LT_F32("f32(x)"),
        "alias T = i32;\nalias TACC = i32;\nconst T_INT = true;\nconst T_LOWEST: T = -2147483647 - 1;\n"
        "fn t_bits(x: T) -> u32 { return bitcast<u32>(x); }\nfn t_from_bits(w: u32) -> T { return bitcast<T>(w); }\n"
        "fn t_isnan(x: T) -> bool { return false; }\n" PICK_T LT_INT,
        "alias T = u32;\nalias TACC = u32;\nconst T_INT = true;\nconst T_LOWEST: T = 0u;\n"
        "fn t_bits(x: T) -> u32 { return x; }\nfn t_from_bits(w: u32) -> T { return w; }\n"
        "fn t_isnan(x: T) -> bool { return false; }\n" PICK_T LT_INT,
    };
    wg_src o = { 0 };
    /* the source's `enable` directives come first (WGSL wants them before
     * any declaration), then the prelude (without a second enable f16) */
    for (const char *p = src; *p; p += strcspn(p, "\n"), p += *p == '\n') {
        const char *t = p + strspn(p, " \t");
        if (strncmp(t, "enable ", 7) == 0) wg_src_printf(&o, "%.*s\n", (int)strcspn(t, "\n"), t);
    }
    const char *pre = k_prelude[elem];
    if (elem == WG_ELEM_F16 && strstr(o.s ? o.s : "", "enable f16;")) pre += strlen("enable f16;\n");
    wg_src_printf(&o, "%s", pre);
    wg_src fields = { 0 };
    expansion x = { .kernel = kernel, .o = &o, .fields = &fields, .lay = lay,
                    .own_p = strstr(src, "var<uniform> P: Params") != NULL };
    rlx_status st = expand(&x, src, 0);
    /* the struct (and binding 0, unless the source still writes it itself) */
    if (!st && fields.n)
        wg_src_printf(&o, "struct Params {%s };\n%s", fields.s,
                      x.own_p ? "" : "@group(0) @binding(0) var<uniform> P: Params;\n");
    if (!st && (o.oom || fields.oom)) st = rlx_fail(RLX_ERR_OUT_OF_MEMORY, "out of memory");
    wg_src_free(&fields);
    if (st) {
        wg_src_free(&o);
        return st;
    }
    *out = o.s;
    return RLX_OK;
}

/* One word for messages: "'name' (kind)", "padding before 'name'" or "nothing". */
static const char *word_text(char *buf, size_t cap, int kind, const char *name) {
    if (kind == WG_WORD_PAD) snprintf(buf, cap, "padding%s%s%s", *name ? " before '" : "", name, *name ? "'" : "");
    else if (kind) snprintf(buf, cap, "'%s' (%s)", name, k_kind_name[kind]);
    else snprintf(buf, cap, "nothing");
    return buf;
}

rlx_status wg_params_check(const wg_layout *lay, const wg_dispatch *d, const char *what) {
    if (!lay->n_words) return RLX_OK;
    int end = (lay->n_words + 3) / 4 * 4;
    int n = d->n_params > end ? d->n_params : end;
    for (int i = 0; i < n; i++) {
        int want = i < lay->n_words ? lay->kind[i] : i < end ? WG_WORD_PAD : 0;
        int got = i < d->n_params ? d->pkind[i] : 0;
        const char *name = i < d->n_params && d->pname[i] ? d->pname[i] : "";
        const char *decl = i < lay->n_words ? lay->names[lay->field[i]] : "";
        if (want == WG_WORD_PAD ? got == 0 || got == WG_WORD_PAD : want == got && strcmp(name, decl) == 0) continue;
        char w[64], g[64];
        if (!want)
            return rlx_fail(RLX_ERR_INTERNAL, "%s: kernel '%s': the lowering writes %d Params words, the kernel declares "
                                              "%d (//!params); word %d is %s", what, d->kernel, d->n_params,
                            lay->n_words, i, word_text(g, sizeof g, got, name));
        return rlx_fail(RLX_ERR_INTERNAL, "%s: kernel '%s': Params field %d (word %d) is %s in the kernel's declaration "
                                          "(//!params), but the lowering wrote %s there (%d words in all)",
                        what, d->kernel, lay->field[i], i, word_text(w, sizeof w, want, decl),
                        word_text(g, sizeof g, got, name), d->n_params);
    }
    return RLX_OK;
}
