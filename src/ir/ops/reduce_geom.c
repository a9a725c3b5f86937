/* Reduce* axes and Einsum equations resolved for input shapes (see
 * reduce_geom.h). */
#include "ir/ops/reduce_geom.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ Softmax */

int64_t rlx_softmax_axis(const rlx_node *n) {
    const rlx_node_attr *a = rlx_param(n, RLX_A_axis);
    return a ? a->i : n->version >= 13 ? -1 : 1;
}

/* ------------------------------------------------------------ Reduce* */

bool rlx_reduce_axes_are_input(const rlx_node *n) {
    if (n->op == RLX_OP_ReduceSum) return n->version >= 13;
    return n->version >= 18;
}

/* Marks axes[0..n_axes) of an input of rank `rank` in out (errors: `status`,
 * naming node n: an axis out of range). An axis given twice (1 and -2 of
 * rank 3) counts once, as onnxruntime reads it; the ONNX spec is silent
 * and its numpy reference refuses it. */
static rlx_status mark_axes(const rlx_node *n, int rank, const int64_t *axes, size_t n_axes, rlx_status status,
                            rlx_reduce_spec *out) {
    for (size_t i = 0; i < n_axes; i++) {
        int a;
        if (!rlx_norm_axis(axes[i], rank, &a))
            return rlx_fail(status, "%s: axes[%zu] = %lld is out of range for an input of rank %d (allowed [%d, %d])",
                            rlx_node_desc(n), i, (long long)axes[i], rank, -rank, rank - 1);
        if (out->axis[a]) continue;
        out->axis[a] = true;
        out->n_axes++;
    }
    return RLX_OK;
}

rlx_status rlx_reduce_resolve(const rlx_node *n, int rank, const int64_t *axes, size_t n_axes, rlx_status status,
                              rlx_reduce_spec *out) {
    memset(out, 0, sizeof *out);
    out->rank = rank;
    out->keepdims = rlx_param_int(n, RLX_A_keepdims) != 0;
    if (rank < 0 || rank > RLX_MAX_RANK)
        return rlx_fail(RLX_ERR_INTERNAL, "%s: reduction of an input of rank %d", rlx_node_desc(n), rank);
    if (n_axes == 0) {
        bool noop = rlx_reduce_axes_are_input(n) && rlx_param_int(n, RLX_A_noop_with_empty_axes) != 0;
        if (!noop) {
            for (int i = 0; i < rank; i++) out->axis[i] = true;
            out->n_axes = rank;
        }
        return RLX_OK;
    }
    return mark_axes(n, rank, axes, n_axes, status, out);
}

rlx_status rlx_mvn_resolve(const rlx_node *n, int rank, rlx_status status, rlx_reduce_spec *out) {
    static const int64_t def_axes[3] = { 0, 2, 3 };
    size_t na;
    const int64_t *axes = rlx_param_ints(n, RLX_A_axes, &na);
    if (!axes) axes = def_axes, na = 3;
    memset(out, 0, sizeof *out);
    out->rank = rank;
    out->keepdims = true;
    return mark_axes(n, rank, axes, na, status, out);
}

int rlx_reduce_out_shape(const rlx_reduce_spec *r, const int64_t *dims, const int32_t *syms, int64_t *out_dims,
                         int32_t *out_syms) {
    int k = 0;
    for (int i = 0; i < r->rank; i++) {
        if (r->axis[i] && !r->keepdims) continue;
        out_dims[k] = r->axis[i] ? 1 : dims[i];
        if (out_syms) out_syms[k] = (r->axis[i] || !syms) ? -1 : syms[i];
        k++;
    }
    return k;
}

/* ------------------------------------------------------------ Einsum */

/* Label ids while parsing: letters a-z are 0..25, A-Z 26..51; ellipsis dim j
 * (0-based from the left of the broadcast ellipsis block) is 52 + j. */
#define LETTERS 52
#define MAX_TERM 64
#define EXT_UNSET (-2)

static int letter_id(char c) {
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
    return -1;
}

static char letter_char(int id) { return id < 26 ? (char)('a' + id) : (char)('A' + id - 26); }

typedef struct term {
    const char *text; /* for messages */
    int len;
    int n;            /* letters */
    int lab[MAX_TERM];
    int ell_pos;      /* letters before the ellipsis, -1 without one */
} term;

static rlx_status parse_term(const rlx_node *n, rlx_status status, const char *s, int len, const char *what,
                             term *t) {
    t->text = s;
    t->len = len;
    t->n = 0;
    t->ell_pos = -1;
    for (int i = 0; i < len; i++) {
        char c = s[i];
        if (c == '.') {
            if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return rlx_fail(status, "%s: Einsum equation: %s '%.*s' has a '.' that is not part of an "
                                "ellipsis '...'", rlx_node_desc(n), what, len, s);
            if (t->ell_pos >= 0)
                return rlx_fail(status, "%s: Einsum equation: %s '%.*s' has more than one ellipsis", rlx_node_desc(n),
                                what, len, s);
            t->ell_pos = t->n;
            i += 2;
            continue;
        }
        int id = letter_id(c);
        if (id < 0)
            return rlx_fail(status, "%s: Einsum equation: %s '%.*s' has the character '%c'; only letters, ',', '->' "
                            "and '...' are allowed", rlx_node_desc(n), what, len, s, c);
        if (t->n == MAX_TERM)
            return rlx_fail(status, "%s: Einsum equation: %s '%.*s' is too long", rlx_node_desc(n), what, len, s);
        t->lab[t->n++] = id;
    }
    return RLX_OK;
}

/* Merges one operand dim of size d (symbol s) into a label's extent. Letters
 * must agree; ellipsis dims broadcast (1 stretches). Returns false on a
 * conflict of static sizes. */
static bool merge_extent(int64_t *ext, int32_t *sym, int64_t d, int32_t s, bool is_ellipsis) {
    if (*ext == EXT_UNSET) {
        *ext = d;
        *sym = d < 0 ? s : -1;
        return true;
    }
    if (d >= 0 && *ext >= 0) {
        if (d == *ext) return true;
        if (!is_ellipsis) return false;
        if (*ext == 1) { *ext = d; return true; }
        return d == 1;
    }
    if (d >= 0) { /* *ext dynamic */
        if (is_ellipsis && d == 1) return true;
        *ext = d;
        *sym = -1;
        return true;
    }
    if (*ext >= 0) { /* d dynamic */
        if (is_ellipsis && *ext == 1) {
            *ext = RLX_DIM_DYN;
            *sym = s;
        }
        return true;
    }
    if (*sym < 0) *sym = s; /* both dynamic */
    return true;
}

rlx_status rlx_einsum_resolve(const rlx_node *n, int n_in, const int *ranks, const int64_t *const *dims,
                              const int32_t *const *syms, rlx_status status, rlx_einsum *out) {
    memset(out, 0, sizeof *out);
    const char *eq_attr = rlx_param_str(n, RLX_A_equation);
    if (!eq_attr) return rlx_fail(status, "%s: attribute 'equation' is missing or not a string", rlx_node_desc(n));
    if (n_in < 1 || n_in > RLX_EINSUM_MAX_INPUTS)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: Einsum with %d operands (supported: 1 to %d)", rlx_node_desc(n),
                        n_in, RLX_EINSUM_MAX_INPUTS);
    /* the equation without spaces */
    char eq[512];
    size_t len = 0;
    for (const char *p = eq_attr; *p; p++) {
        if (*p == ' ') continue;
        if (len + 1 >= sizeof eq)
            return rlx_fail(status, "%s: Einsum equation is longer than %zu characters", rlx_node_desc(n),
                            sizeof eq - 1);
        eq[len++] = *p;
    }
    eq[len] = 0;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : len;
    if (arrow && strstr(arrow + 2, "->"))
        return rlx_fail(status, "%s: Einsum equation '%s' has more than one '->'", rlx_node_desc(n), eq_attr);
    for (size_t i = 0; i < len; i++) {
        bool in_arrow = arrow && (eq + i == arrow || eq + i == arrow + 1);
        if ((eq[i] == '-' || eq[i] == '>') && !in_arrow)
            return rlx_fail(status, "%s: Einsum equation '%s' has a stray '%c'", rlx_node_desc(n), eq_attr, eq[i]);
        if (eq[i] == ',' && arrow && eq + i > arrow)
            return rlx_fail(status, "%s: Einsum equation '%s' has a ',' in its output", rlx_node_desc(n), eq_attr);
    }
    /* input terms */
    int n_terms = 1;
    for (size_t i = 0; i < lhs_len; i++) n_terms += eq[i] == ',';
    if (n_terms != n_in)
        return rlx_fail(status, "%s: Einsum equation '%s' has %d input term%s but the node has %d input%s",
                        rlx_node_desc(n), eq_attr, n_terms, n_terms == 1 ? "" : "s", n_in, n_in == 1 ? "" : "s");
    term terms[RLX_EINSUM_MAX_INPUTS];
    int ell_dims[RLX_EINSUM_MAX_INPUTS];
    int n_ell = 0;
    size_t start = 0;
    for (int t = 0; t < n_in; t++) {
        size_t end = start;
        while (end < lhs_len && eq[end] != ',') end++;
        char what[32];
        snprintf(what, sizeof what, "input term %d", t);
        RLX_TRY(parse_term(n, status, eq + start, (int)(end - start), what, &terms[t]));
        start = end + 1;
        const term *tm = &terms[t];
        int e = ranks[t] - tm->n;
        if (ranks[t] < 0 || (tm->ell_pos < 0 && e != 0) || e < 0)
            return rlx_fail(status, "%s: Einsum equation '%s': term '%.*s' has %d letter%s%s but input %d has rank %d",
                            rlx_node_desc(n), eq_attr, tm->len, tm->text, tm->n, tm->n == 1 ? "" : "s",
                            tm->ell_pos >= 0 ? " and an ellipsis" : "", t, ranks[t]);
        ell_dims[t] = tm->ell_pos >= 0 ? e : 0;
        if (ell_dims[t] > n_ell) n_ell = ell_dims[t];
    }
    /* labels of every operand dim and their extents */
    int64_t ext[LETTERS + RLX_MAX_RANK];
    int32_t sym[LETTERS + RLX_MAX_RANK];
    int count[LETTERS] = { 0 };
    int lab[RLX_EINSUM_MAX_INPUTS][RLX_MAX_RANK];
    for (int l = 0; l < LETTERS + RLX_MAX_RANK; l++) ext[l] = EXT_UNSET, sym[l] = -1;
    for (int t = 0; t < n_in; t++) {
        const term *tm = &terms[t];
        int d = 0;
        for (int i = 0; i <= tm->n; i++) {
            if (i == tm->ell_pos)
                for (int k = 0; k < ell_dims[t]; k++) lab[t][d++] = LETTERS + (n_ell - ell_dims[t]) + k;
            if (i < tm->n) {
                lab[t][d++] = tm->lab[i];
                count[tm->lab[i]]++;
            }
        }
        for (d = 0; d < ranks[t]; d++) {
            int l = lab[t][d];
            int64_t before = ext[l];
            int32_t s = syms ? syms[t][d] : -1;
            if (!merge_extent(&ext[l], &sym[l], dims[t][d], s, l >= LETTERS)) {
                if (l >= LETTERS)
                    return rlx_fail(status, "%s: Einsum equation '%s': the ellipsis dims of input %d do not broadcast "
                                    "with the others (%lld and %lld)", rlx_node_desc(n), eq_attr, t,
                                    (long long)before, (long long)dims[t][d]);
                return rlx_fail(status, "%s: Einsum equation '%s': letter '%c' stands for dims of different sizes "
                                "(%lld and %lld in input %d)", rlx_node_desc(n), eq_attr, letter_char(l),
                                (long long)before, (long long)dims[t][d], t);
            }
        }
    }
    /* the output */
    int olab[MAX_TERM + RLX_MAX_RANK];
    int orank = 0;
    if (arrow) {
        term ot;
        RLX_TRY(parse_term(n, status, arrow + 2, (int)(len - lhs_len - 2), "output term", &ot));
        if (ot.ell_pos < 0 && n_ell > 0)
            return rlx_fail(status, "%s: Einsum equation '%s': the inputs have ellipsis dims but the output has no "
                            "'...'", rlx_node_desc(n), eq_attr);
        bool seen[LETTERS] = { false };
        for (int i = 0; i <= ot.n; i++) {
            if (i == ot.ell_pos)
                for (int k = 0; k < n_ell; k++) olab[orank++] = LETTERS + k;
            if (i == ot.n) break;
            int l = ot.lab[i];
            if (!count[l])
                return rlx_fail(status, "%s: Einsum equation '%s': output letter '%c' does not occur in any input",
                                rlx_node_desc(n), eq_attr, letter_char(l));
            if (seen[l])
                return rlx_fail(status, "%s: Einsum equation '%s': output letter '%c' occurs twice", rlx_node_desc(n),
                                eq_attr, letter_char(l));
            seen[l] = true;
            olab[orank++] = l;
        }
    } else {
        for (int k = 0; k < n_ell; k++) olab[orank++] = LETTERS + k;
        for (char c = 'A'; c <= 'z'; c++) { /* ASCII order: upper case first */
            int l = letter_id(c);
            if (l >= 0 && count[l] == 1) olab[orank++] = l;
        }
    }
    if (orank > RLX_MAX_RANK)
        return rlx_fail(RLX_ERR_UNSUPPORTED, "%s: Einsum output rank %d is above the maximum %d", rlx_node_desc(n),
                        orank, RLX_MAX_RANK);
    /* compact the labels in use: letters in id order, then ellipsis dims */
    int remap[LETTERS + RLX_MAX_RANK];
    int nl = 0;
    for (int l = 0; l < LETTERS + n_ell; l++) {
        remap[l] = -1;
        if (ext[l] == EXT_UNSET) continue;
        remap[l] = nl;
        out->name[nl] = l < LETTERS ? letter_char(l) : '.';
        out->extent[nl] = ext[l];
        out->sym[nl] = ext[l] < 0 ? sym[l] : -1;
        nl++;
    }
    out->n_labels = nl;
    out->n_in = n_in;
    for (int t = 0; t < n_in; t++) {
        out->in_rank[t] = ranks[t];
        for (int d = 0; d < ranks[t]; d++) out->in_label[t][d] = remap[lab[t][d]];
    }
    out->out_rank = orank;
    for (int i = 0; i < orank; i++) {
        out->out_label[i] = remap[olab[i]];
        out->in_output[remap[olab[i]]] = true;
    }
    return RLX_OK;
}
