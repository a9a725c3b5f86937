/* Splitting strided work into blocks whose operand windows fit one
 * storage binding (see wg_split.h). */
#include <string.h>

#include "backend/webgpu/wg_split.h"

rlx_status wg_split_1d(wg_lower *L, uint64_t n, int n_ops, wg_block_fn emit, void *ctx) {
    wg_strided sp;
    memset(&sp, 0, sizeof sp);
    sp.rank = 1;
    sp.dims[0] = n;
    sp.n_ops = n_ops;
    for (int o = 0; o < n_ops && o < WG_SPLIT_MAX_OPS; o++) sp.str[o][0] = 1;
    return wg_split_strided(L, &sp, emit, ctx);
}

uint64_t wg_window_room(const wg_caps *caps) {
    uint64_t align = caps->storage_align ? caps->storage_align : 256;
    if (caps->max_binding < align) return 0;
    return (caps->max_binding - align + 4) / 4;
}

/* The window [lo, lo+n) operand o of space s touches over block dims
 * `dims` starting at offset `base`. */
static void wg_strided_window(const wg_strided *s, int o, const uint64_t *dims, int64_t base, int64_t *lo, uint64_t *n) {
    int64_t a = base, b = base;
    for (int d = 0; d < s->rank; d++) {
        if (dims[d] == 0) { /* an empty block touches nothing; keep one element */
            *lo = base;
            *n = 1;
            return;
        }
        int64_t span = (int64_t)(dims[d] - 1) * s->str[o][d];
        if (span < 0) a += span;
        else b += span;
    }
    *lo = a;
    *n = (uint64_t)(b - a) + 1;
}

/* True when every operand's window over a block of dims `dims` (any base)
 * holds at most `room` elements. */
static bool block_fits(const wg_strided *s, const uint64_t *dims, uint64_t room) {
    for (int o = 0; o < s->n_ops; o++) {
        int64_t lo;
        uint64_t n;
        wg_strided_window(s, o, dims, 0, &lo, &n);
        if (n > room) return false;
    }
    return true;
}

static rlx_status emit_block(wg_lower *L, const wg_strided *s, const uint64_t *dims, const int64_t *base,
                             wg_block_fn emit, void *ctx) {
    wg_block b;
    memset(&b, 0, sizeof b);
    b.rank = s->rank;
    b.numel = 1;
    for (int d = 0; d < s->rank; d++) {
        b.dims[d] = dims[d];
        b.numel *= dims[d];
    }
    for (int o = 0; o < s->n_ops; o++) {
        int64_t lo;
        wg_strided_window(s, o, dims, base[o], &lo, &b.n[o]);
        if (lo < 0) return wg_decline(L, "operand %d would be read before its first element", o);
        b.base[o] = base[o];
        b.lo[o] = (uint64_t)lo;
    }
    return emit(L, &b, ctx);
}

rlx_status wg_split_strided(wg_lower *L, const wg_strided *s, wg_block_fn emit, void *ctx) {
    if (s->rank < 0 || s->rank > WG_SPLIT_MAX_RANK || s->n_ops < 1 || s->n_ops > WG_SPLIT_MAX_OPS)
        return wg_decline(L, "split of rank %d with %d operands", s->rank, s->n_ops);
    uint64_t numel = 1;
    for (int d = 0; d < s->rank; d++) numel *= s->dims[d];
    /* the whole space, when every window fits exactly where it starts */
    bool whole = true;
    for (int o = 0; o < s->n_ops && whole; o++) {
        int64_t lo;
        uint64_t n;
        wg_strided_window(s, o, s->dims, s->base[o], &lo, &n);
        if (lo < 0 || wg_binding_bytes(L->caps, (uint64_t)lo, n) > L->caps->max_binding) whole = false;
    }
    if (whole || numel <= 1) return emit_block(L, s, s->dims, s->base, emit, ctx);
    uint64_t room = wg_window_room(L->caps);
    /* the outermost dim k and largest count c whose blocks fit */
    int k = -1;
    uint64_t c = 0;
    uint64_t dims[WG_SPLIT_MAX_RANK];
    for (int d = 0; d < s->rank && k < 0; d++) {
        for (int i = 0; i < s->rank; i++) dims[i] = i < d ? 1 : s->dims[i];
        dims[d] = 1;
        if (!block_fits(s, dims, room)) continue;
        uint64_t lo = 1, hi = s->dims[d]; /* lo fits; find the largest that does */
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo + 1) / 2;
            dims[d] = mid;
            if (block_fits(s, dims, room)) lo = mid;
            else hi = mid - 1;
        }
        k = d;
        c = lo;
        dims[d] = c;
    }
    if (k < 0) return wg_decline(L, "no block of the iteration space fits one binding");
    uint64_t outer = 1;
    for (int d = 0; d < k; d++) outer *= s->dims[d];
    uint64_t chunks = (s->dims[k] + c - 1) / c;
    if (outer > WG_SPLIT_MAX_BLOCKS || outer * chunks > WG_SPLIT_MAX_BLOCKS)
        return wg_decline(L, "splitting by the binding limit would take more than %u dispatches", WG_SPLIT_MAX_BLOCKS);
    uint64_t idx[WG_SPLIT_MAX_RANK] = { 0 };
    for (uint64_t q = 0; q < outer; q++) {
        /* idx[0..k) from q, innermost of them fastest */
        uint64_t r = q;
        for (int d = k - 1; d >= 0; d--) {
            idx[d] = r % s->dims[d];
            r /= s->dims[d];
        }
        for (uint64_t j0 = 0; j0 < s->dims[k]; j0 += c) {
            int64_t base[WG_SPLIT_MAX_OPS];
            for (int o = 0; o < s->n_ops; o++) {
                base[o] = s->base[o] + (int64_t)j0 * s->str[o][k];
                for (int d = 0; d < k; d++) base[o] += (int64_t)idx[d] * s->str[o][d];
            }
            dims[k] = s->dims[k] - j0 < c ? s->dims[k] - j0 : c;
            RLX_TRY(emit_block(L, s, dims, base, emit, ctx));
        }
    }
    return RLX_OK;
}
