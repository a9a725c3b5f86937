/* Cases of the fused attention (rlx.Attention, lower_attention.c), which
 * only fuse_attention creates: the exporters' pattern
 *   MatMul(Q, K^T) -> Mul/Div by a scale (optional) -> Add(mask) (optional)
 *   -> Softmax(-1) -> MatMul(., V)
 * with the head split and merge Transposes absorbed as layouts, masks of
 * every broadcast shape (with -inf entries), heads of D and Dv up to 256,
 * key lengths past a tile and a workgroup, ranks 2 to 4, each GPU kernel
 * and tile (gpu.attention_kernel, gpu.attention_tile, gpu.attention_vec4).
 * Each case runs fused and unfused on both backends against the unfused
 * CPU. Tolerance: an online softmax sums exp() in blocks, in another order
 * than the CPU's, and the weighted sum of V follows. */
#include <math.h>
#include <string.h>

#include "harness.h"

static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)bo_rand_below((uint64_t)(hi - lo + 1)); }

/* A constant mask shaped like a bias ([1, Sk]) right after MatMul(Q, K^T),
 * no scale: fuse_activation folds it into the MatMul's bias first, and
 * fuse_attention takes that bias as the mask (it used not to fuse). */
static void gen_attention_bias_mask(bo_ctx *ctx) {
    bo_case *c = bo_next(ctx, 17);
    if (!c) return;
    c->fused = "rlx.Attention";
    int64_t qd[3] = { 2, 5, 16 }, kd[3] = { 2, 16, 9 }, vd[3] = { 2, 9, 16 }, md[2] = { 1, 9 };
    const char *ins[2] = { bo_input(c, bo_rand(RLX_DTYPE_F32, 3, qd, -1, 1)), bo_input(c, bo_rand(RLX_DTYPE_F32, 3, kd, -1, 1)) };
    const char *s = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
    const char *ins2[2] = { s, bo_const(c, bo_rand(RLX_DTYPE_F32, 2, md, -2, 0.5)) };
    s = bo_node(c, "Add", 2, ins2, 1, 0, NULL);
    rlx_attr ax = RLX_ATTR_I("axis", -1);
    s = bo_node(c, "Softmax", 1, &s, 1, 1, &ax);
    const char *ins3[2] = { s, bo_input(c, bo_rand(RLX_DTYPE_F32, 3, vd, -1, 1)) };
    bo_output(c, bo_node(c, "MatMul", 2, ins3, 1, 0, NULL));
    bo_desc(c, "Attention rank 3 Sq=5 Sk=9 D=16, no scale, a constant mask [1,Sk]");
    bo_run(ctx, c);
}

static void gen_attention(bo_ctx *ctx, const void *arg) {
    static const char *const k_opt[] = { NULL, "gpu.attention_kernel=v1", "gpu.attention_kernel=v2",
                                         "gpu.attention_tile=4x8", "gpu.attention_vec4=0", "gpu.attention_tile=16x16" };
    int n = bo_full(ctx) ? 120 : 12;
    for (int i = 0; i < n; i++) {
        bo_case *c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "rlx.Attention";
        int r = i % 5 == 4 ? 3 : i % 7 == 6 ? 2 : 4;
        int64_t B = rnd(1, 2), H = rnd(1, 3), Sq = rnd(1, 9), Sk = rnd(1, 13);
        static const int64_t k_d[] = { 2, 4, 8, 16, 31, 32, 64, 80, 128, 256 };
        int64_t D = k_d[bo_rand_below(BO_LEN(k_d))], Dv = i % 3 == 2 ? k_d[bo_rand_below(BO_LEN(k_d))] : D;
        if (i % 6 == 3) Sk = 300 + rnd(0, 40);
        if (bo_full(ctx) && i % 17 == 16) Sk = 2000, Sq = 3;
        /* shapes of the batch prefix by rank */
        int64_t pre[2] = { B, H };
        int np = r - 2;
        bool split = r == 4 && i % 2 == 1; /* the exporters' head split: [B,S,H,D] -> Transpose */
        bool kt_from_k = i % 3 != 0;       /* K^T = Transpose(K) of the last two axes */
        int scale = i % 4;                 /* 0 none, 1 Mul, 2 Div, 3 Mul by the default 1/sqrt(D) */
        int mask = (i / 2) % 5;            /* 0 none, 1 [Sk], 2 [Sq,Sk], 3 [B,1,1,Sk], 4 full */
        if (r < 4 && mask == 3) mask = 2;
        char desc[160];
        snprintf(desc, sizeof desc, "Attention rank %d B=%lld H=%lld Sq=%lld Sk=%lld D=%lld Dv=%lld", r, (long long)B,
                 (long long)H, (long long)Sq, (long long)Sk, (long long)D, (long long)Dv);
        bo_desc(c, "%s%s%s scale=%s mask=%s", desc, split ? " head-split transposes" : "", kt_from_k ? " K^T=Transpose(K)" : "",
                (const char *const[]){ "none", "Mul", "Div", "1/sqrt(D)" }[scale],
                (const char *const[]){ "none", "[Sk]", "[Sq,Sk]", "[B,1,1,Sk]", "full" }[mask]);
        const char *q, *kt, *v;
        if (split) {
            bo_heads_split(c, RLX_DTYPE_F32, (int64_t[5]){ B, H, Sq, Sk, D }, Dv, &q, &kt, &v);
        } else {
            int64_t qd[4], kd[4], vd[4];
            for (int j = 0; j < np; j++) qd[j] = kd[j] = vd[j] = pre[j + 2 - np];
            qd[np] = Sq, qd[np + 1] = D;
            if (kt_from_k) kd[np] = Sk, kd[np + 1] = D;
            else kd[np] = D, kd[np + 1] = Sk;
            vd[np] = Sk, vd[np + 1] = Dv;
            q = bo_input(c, bo_rand(RLX_DTYPE_F32, r, qd, -1, 1));
            kt = bo_input(c, bo_rand(RLX_DTYPE_F32, r, kd, -1, 1));
            if (kt_from_k) {
                int64_t perm[4];
                for (int j = 0; j < r; j++) perm[j] = j;
                perm[r - 2] = r - 1, perm[r - 1] = r - 2;
                kt = bo_transpose(c, kt, r, perm);
            }
            v = i % 5 == 1 ? bo_const(c, bo_rand(RLX_DTYPE_F32, r, vd, -1, 1)) : bo_input(c, bo_rand(RLX_DTYPE_F32, r, vd, -1, 1));
        }
        const char *ins[2] = { q, kt };
        const char *s = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
        if (scale) {
            float sc = scale == 3 ? 1.0f / sqrtf((float)D) : scale == 2 ? sqrtf((float)D) : 0.125f;
            const char *ins2[2] = { s, bo_const(c, bo_scalar(RLX_DTYPE_F32, sc)) };
            s = bo_node(c, scale == 2 ? "Div" : "Mul", 2, ins2, 1, 0, NULL);
        }
        if (mask) {
            bo_shape ms = { 0, { 0 } };
            if (mask == 1) ms = (bo_shape){ 1, { Sk } };
            if (mask == 2) ms = (bo_shape){ 2, { Sq, Sk } };
            if (mask == 3) ms = (bo_shape){ 4, { B, 1, 1, Sk } };
            if (mask == 4) {
                ms.rank = r;
                for (int j = 0; j < np; j++) ms.d[j] = pre[j + 2 - np];
                ms.d[np] = Sq, ms.d[np + 1] = Sk;
            }
            rlx_tensor *m = bo_rand(RLX_DTYPE_F32, ms.rank, ms.d, -2, 0.5);
            float *mv = m->data;
            /* -inf entries, but never a whole row (that is NaN on both sides, checked apart) */
            for (size_t j = 1; j < rlx_tensor_numel(m); j += 3) mv[j] = -INFINITY;
            for (size_t j = 0; j < rlx_tensor_numel(m); j += (size_t)ms.d[ms.rank - 1]) mv[j] = 0.0f;
            const char *mname = i % 3 == 0 ? bo_input(c, m) : bo_const(c, m);
            /* a constant mask shaped like a bias ([Sk], [1,..,1,Sk]) added straight after
             * MatMul(Q, K^T) reaches fuse_attention as that MatMul's bias input */
            const char *ins3[2] = { i % 2 ? mname : s, i % 2 ? s : mname }; /* either operand order */
            s = bo_node(c, "Add", 2, ins3, 1, 0, NULL);
        }
        bo_attention_out(c, s, v, split);
        const char *o = k_opt[i % BO_LEN(k_opt)];
        if (o) bo_opt(c, o), bo_desc(c, " %s", o);
        /* v1 keeps Q's 8 rows and a block of 16 keys (K, V, scores) in workgroup memory
         * (lower_attention.c's lower_v1); where that block does not fit the device's limit
         * (lavapipe's 32 KiB with D = 256 and Dv >= 128) forced v1 declines, as a forced tile */
        uint64_t v1_bytes = 4 * (8 * (uint64_t)(D + 1) + 8 + 16 * (uint64_t)(D + 1 + Dv + 8));
        bool v1_big = o && strcmp(o, "gpu.attention_kernel=v1") == 0 && v1_bytes > bo_wg_storage(ctx);
        if (v1_big) bo_desc(c, " (v1 needs %llu bytes of workgroup memory: CPU fallback allowed)", (unsigned long long)v1_bytes);
        if ((o && strstr(o, "tile")) || v1_big) { /* a tile that does not fit the head sends the node to the CPU */
            c->flags |= BO_FALLBACK_OK;
            c->expect_op = "";
        }
        c->atol *= sqrt((double)Sk);
        bo_run(ctx, c);
    }
    /* a head dim beyond the GPU kernels (D = 300): the fused node may run on the CPU */
    bo_case *c = bo_next(ctx, 17);
    if (c) {
        c->fused = "rlx.Attention";
        c->flags |= BO_FALLBACK_OK;
        c->expect_op = "";
        int64_t qd[3] = { 2, 5, 300 }, kd[3] = { 2, 300, 7 }, vd[3] = { 2, 7, 3 };
        const char *ins[2] = { bo_input(c, bo_rand(RLX_DTYPE_F32, 3, qd, -1, 1)), bo_input(c, bo_rand(RLX_DTYPE_F32, 3, kd, -1, 1)) };
        const char *s = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
        rlx_attr ax = RLX_ATTR_I("axis", -1);
        s = bo_node(c, "Softmax", 1, &s, 1, 1, &ax);
        const char *ins2[2] = { s, bo_input(c, bo_rand(RLX_DTYPE_F32, 3, vd, -1, 1)) };
        bo_output(c, bo_node(c, "MatMul", 2, ins2, 1, 0, NULL));
        bo_desc(c, "Attention rank 3 D=300 (beyond the GPU kernels: CPU fallback allowed)");
        c->atol *= sqrt(300.0);
        bo_run(ctx, c);
    }
    gen_attention_bias_mask(ctx);
    /* special values in the mask (bo_specials by row of Sk): rows of -inf
     * only (NaN, as the unfused Softmax), +inf or NaN entries (NaN rows),
     * -0 and +0; each kernel. The online softmax's running maximum starts
     * at -FLT_MAX and takes WGSL max: a dropped NaN still makes the row
     * NaN through exp(NaN - m), and a row of -inf sums to 0 (0 / 0) */
    for (int t = 0; t < 3; t++) {
        c = bo_next(ctx, 17);
        if (!c) continue;
        c->fused = "rlx.Attention";
        int64_t qd[3] = { 2, 8, 16 }, kd[3] = { 2, 16, 37 }, vd[3] = { 2, 37, 16 }, md[2] = { 8, 37 };
        const char *ins[2] = { bo_input(c, bo_rand(RLX_DTYPE_F32, 3, qd, -1, 1)),
                               bo_input(c, bo_rand(RLX_DTYPE_F32, 3, kd, -1, 1)) };
        const char *s = bo_node(c, "MatMul", 2, ins, 1, 0, NULL);
        rlx_tensor *m = bo_rand(RLX_DTYPE_F32, 2, md, -2, 0.5);
        bo_specials(m, 37);
        const char *ins2[2] = { s, bo_input(c, m) };
        s = bo_node(c, "Add", 2, ins2, 1, 0, NULL);
        rlx_attr ax = RLX_ATTR_I("axis", -1);
        s = bo_node(c, "Softmax", 1, &s, 1, 1, &ax);
        const char *ins3[2] = { s, bo_input(c, bo_rand(RLX_DTYPE_F32, 3, vd, -1, 1)) };
        bo_output(c, bo_node(c, "MatMul", 2, ins3, 1, 0, NULL));
        const char *o = k_opt[t];
        if (o) bo_opt(c, o);
        bo_desc(c, "Attention rank 3 Sq=8 Sk=37 D=16, a mask [Sq,Sk] of special values%s%s", o ? " " : "", o ? o : "");
        c->atol *= sqrt(37.0);
        bo_run(ctx, c);
    }
}

static const bo_op k_ops[] = {
    { "rlx.Attention", gen_attention, NULL, 2e-5, 2e-6,
      "online softmax in blocks: exp sums in another order; 2e-6 sqrt(Sk) absolute" },
};

const bo_family bo_family_attention = { "attention", k_ops, BO_LEN(k_ops) };
