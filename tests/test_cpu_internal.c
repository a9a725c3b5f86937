/* The CPU kernels of the internal ops (src/backend/cpu/cpu_internal.c):
 * their f32 fast paths against the reference kernels.
 *
 * rlx.Attention: the f32 fast
 * path (blocks of query rows on the worker pool, both products on
 * rlx_cpu_sgemm_serial, the vector softmax of cpu_rows.c) against the
 * reference kernel, which computes each query row in double.
 *
 * Shapes of real models: sequence 1, 7, 128 and 384 (Sq = Sk, and one
 * query row against 128 keys as in decoding); head depth 32, 64, 80, 128;
 * 1 and 12 heads; batch 1 and 3 (batch 1 only at 384); no mask, a
 * key-padding mask [B, 1, 1, Sk] (random values in [-1, 1), the last
 * quarter of the keys at -10000) and a full mask [B, H, Sq, Sk]; two
 * layouts: plain [B, H, S, D] operands, and BERT's (Q, K, V and Y stored
 * [B, S, H, D], absorbed by q_perm / k_perm / v_perm / y_perm, K read as
 * K^T); scale multiplies or divides. Random operands in [-1, 1) (never
 * zeros), the outputs poisoned with NaN first, so an element the fast
 * path forgets to write fails.
 *
 * Tolerance: |fast - ref| <= 2e-6 max |V| + 1e-6 |ref| per element (the
 * fast path sums both products in f32, rounds the scale, and takes exp
 * within 2^-22 relative; the worst seen here is 1.8e-7 max |V|).
 * ctest runs this program with the default thread count and with
 * RLX_NUM_THREADS = 1, 2, 3, 5 and 16 (tests/CMakeLists.txt): the blocks
 * of query rows change with it. test_attention_split checks how those
 * blocks share BERT's heads out over 2, 5 and 16 threads (counts, no
 * timing).
 *
 * rlx.AddLayerNormalization: the fast path (the sum in f32 with B read in
 * runs, then cpu_rows.c's LayerNormalization rows) against the reference
 * (the sum in f32, statistics and normalisation in double). A [1, 128, 768],
 * [3, 7, 384], [2, 5, 80], [4, 1000]; B of A's shape (the residual), of the
 * last dims spanning rows ([7, 384]), one row ([len]), part of a row
 * (A [2, 5, 80] normalised over its last two axes, B [80]) and one value
 * ([1]); Bias present and absent; Scale one value ([1]: the reference's
 * loop). Random operands in [-2, 2), outputs
 * poisoned. Tolerance: |fast - ref| <= 1e-5 + 1e-5 |ref| (outputs of
 * O(3); cpu_rows.h's LayerNormalization bound). */
#include "test.h"
#include "test_node.h"

#include "backend/cpu/cpu.h"
#include "backend/cpu/cpu_internal.h"
#include "base/tensor.h"
#include "ir/graph.h"

typedef struct at_case {
    int64_t b, h, sq, sk, d;
    int mask;    /* 0 none, 1 key padding [B, 1, 1, Sk], 2 full [B, H, Sq, Sk] */
    bool bert;   /* operands stored [B, S, H, D] (the perms absorb the Transposes) */
    bool div;    /* scale_div */
} at_case;

static rlx_tensor *mk(int rank, const int64_t *dims) {
    rlx_tensor *t = NULL;
    CHECK_OK(rlx_tensor_create(RLX_DTYPE_F32, dims, rank, &t));
    return t;
}

static void fill(rlx_tensor *t, float lo, float hi) {
    float *p = t->data;
    for (size_t i = 0; i < rlx_tensor_numel(t); i++) {
        float v = test_rand_uniform(lo, hi);
        p[i] = v == 0.0f ? 0.5f : v;
    }
}

static void poison(rlx_tensor *t) {
    float *p = t->data;
    for (size_t i = 0; i < rlx_tensor_numel(t); i++) p[i] = NAN;
}

/* Runs one case on both paths; returns the worst |fast - ref| / max |V|. */
static double run_case(const at_case *c) {
    int64_t s_q[4], s_k[4], s_v[4], s_y[4];
    if (c->bert) {
        int64_t q[4] = { c->b, c->sq, c->h, c->d }, k[4] = { c->b, c->sk, c->h, c->d };
        memcpy(s_q, q, sizeof q), memcpy(s_k, k, sizeof k), memcpy(s_v, k, sizeof k), memcpy(s_y, q, sizeof q);
    } else {
        int64_t q[4] = { c->b, c->h, c->sq, c->d }, k[4] = { c->b, c->h, c->sk, c->d };
        memcpy(s_q, q, sizeof q), memcpy(s_k, k, sizeof k), memcpy(s_v, k, sizeof k), memcpy(s_y, q, sizeof q);
    }
    rlx_tensor *q = mk(4, s_q), *k = mk(4, s_k), *v = mk(4, s_v), *yf = mk(4, s_y), *yr = mk(4, s_y), *m = NULL;
    fill(q, -1, 1), fill(k, -1, 1), fill(v, -1, 1);
    if (c->mask == 1) {
        m = mk(4, (int64_t[]){ c->b, 1, 1, c->sk });
        fill(m, -1, 1);
        float *mp = m->data;
        for (int64_t bi = 0; bi < c->b; bi++)
            for (int64_t j = c->sk - c->sk / 4; j < c->sk; j++) mp[bi * c->sk + j] = -10000.0f;
    } else if (c->mask == 2) {
        m = mk(4, (int64_t[]){ c->b, c->h, c->sq, c->sk });
        fill(m, -2, 2);
    }
    poison(yf), poison(yr);

    static int64_t p0213[4] = { 0, 2, 1, 3 }, p0231[4] = { 0, 2, 3, 1 };
    rlx_node_attr at[7];
    int na = 0;
    memset(at, 0, sizeof at);
    float scale = c->div ? sqrtf((float)c->d) : 1.0f / sqrtf((float)c->d);
    at[na++] = (rlx_node_attr){ .name = (char *)"scale", .type = RLX_ATTR_FLOAT, .f = scale };
    at[na++] = (rlx_node_attr){ .name = (char *)"scale_div", .type = RLX_ATTR_INT, .i = c->div };
    at[na++] = (rlx_node_attr){ .name = (char *)"k_transposed", .type = RLX_ATTR_INT, .i = c->bert };
    if (c->bert) {
        at[na++] = (rlx_node_attr){ .name = (char *)"q_perm", .type = RLX_ATTR_INTS, .n = 4, .ints = p0213 };
        at[na++] = (rlx_node_attr){ .name = (char *)"k_perm", .type = RLX_ATTR_INTS, .n = 4, .ints = p0231 };
        at[na++] = (rlx_node_attr){ .name = (char *)"v_perm", .type = RLX_ATTR_INTS, .n = 4, .ints = p0213 };
        at[na++] = (rlx_node_attr){ .name = (char *)"y_perm", .type = RLX_ATTR_INTS, .n = 4, .ints = p0213 };
    }
    rlx_node n = test_make_node_in("rlx", "Attention", 1, m ? 4 : 3, 1, at, na);
    const rlx_tensor *in[4] = { q, k, v, m };
    char what[160];
    snprintf(what, sizeof what, "B %lld H %lld Sq %lld Sk %lld D %lld mask %d %s%s", (long long)c->b,
             (long long)c->h, (long long)c->sq, (long long)c->sk, (long long)c->d, c->mask, c->bert ? "bert" : "plain",
             c->div ? " div" : "");
    CHECK_MSG(rlx_cpu_run_node(NULL, &n, in, &yf, false) == RLX_OK, "%s: fast path: %s", what, rlx_last_error());
    CHECK_MSG(rlx_cpu_run_node(NULL, &n, in, &yr, true) == RLX_OK, "%s: reference: %s", what, rlx_last_error());

    double vmax = 0, worst = 0;
    const float *vp = v->data, *a = yf->data, *b = yr->data;
    for (size_t i = 0; i < rlx_tensor_numel(v); i++) vmax = fmax(vmax, fabs((double)vp[i]));
    size_t bad = 0, numel = rlx_tensor_numel(yr);
    for (size_t i = 0; i < numel; i++) {
        double diff = fabs((double)a[i] - (double)b[i]);
        if (!(diff <= 2e-6 * vmax + 1e-6 * fabs((double)b[i]))) {
            if (bad++ < 3)
                fprintf(stderr, "%s: element %zu of %zu: fast %.9g, reference %.9g\n", what, i, numel, a[i], b[i]);
        } else if (diff / vmax > worst) {
            worst = diff / vmax;
        }
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu elements differ from the reference beyond 2e-6 max|V| + 1e-6 |ref|", what,
              bad, numel);
    rlx_tensor_destroy(q), rlx_tensor_destroy(k), rlx_tensor_destroy(v), rlx_tensor_destroy(m);
    rlx_tensor_destroy(yf), rlx_tensor_destroy(yr);
    return worst;
}

typedef struct aln_case {
    int rank;
    int64_t a[3];
    int b_rank;
    int64_t b[3];
    bool bias, scale_one;
    int axis;
} aln_case;

/* Runs one AddLayerNormalization case on both paths (Scale and Bias: one
 * value per element of a row, or Scale [1]). */
static void run_aln(const aln_case *c) {
    int64_t len = 1;
    for (int i = c->rank + c->axis; i < c->rank; i++) len *= c->a[i];
    /* Scale and Bias: A's dims from the axis on */
    int pr = c->scale_one ? 1 : -c->axis;
    const int64_t *pd = c->scale_one ? (const int64_t[]){ 1 } : c->a + c->rank + c->axis;
    rlx_tensor *a = mk(c->rank, c->a), *b = mk(c->b_rank, c->b), *sc = mk(pr, pd);
    rlx_tensor *bi = c->bias ? mk(-c->axis, c->a + c->rank + c->axis) : NULL;
    rlx_tensor *yf = mk(c->rank, c->a), *yr = mk(c->rank, c->a);
    fill(a, -2, 2), fill(b, -2, 2), fill(sc, -2, 2);
    if (bi) fill(bi, -2, 2);
    poison(yf), poison(yr);
    rlx_node_attr at[2];
    memset(at, 0, sizeof at);
    at[0] = (rlx_node_attr){ .name = (char *)"axis", .type = RLX_ATTR_INT, .i = c->axis };
    at[1] = (rlx_node_attr){ .name = (char *)"epsilon", .type = RLX_ATTR_FLOAT, .f = 1e-5f };
    rlx_node n = test_make_node_in("rlx", "AddLayerNormalization", 1, bi ? 4 : 3, 1, at, 2);
    const rlx_tensor *in[4] = { a, b, sc, bi };
    char what[160];
    snprintf(what, sizeof what, "AddLayerNormalization A rank %d last %lld, B %lld elements%s%s", c->rank,
             (long long)len, (long long)rlx_tensor_numel(b), c->bias ? ", bias" : "", c->scale_one ? ", scale [1]" : "");
    CHECK_MSG(rlx_cpu_run_node(NULL, &n, in, &yf, false) == RLX_OK, "%s: fast path: %s", what, rlx_last_error());
    CHECK_MSG(rlx_cpu_run_node(NULL, &n, in, &yr, true) == RLX_OK, "%s: reference: %s", what, rlx_last_error());
    const float *p = yf->data, *q = yr->data;
    size_t bad = 0, numel = rlx_tensor_numel(yr);
    for (size_t i = 0; i < numel; i++)
        if (!(fabs((double)p[i] - (double)q[i]) <= 1e-5 + 1e-5 * fabs((double)q[i])) && bad++ < 3)
            fprintf(stderr, "%s: element %zu of %zu: fast %.9g, reference %.9g\n", what, i, numel, p[i], q[i]);
    CHECK_MSG(bad == 0, "%s: %zu of %zu elements differ beyond 1e-5 + 1e-5 |ref|", what, bad, numel);
    rlx_tensor_destroy(a), rlx_tensor_destroy(b), rlx_tensor_destroy(sc), rlx_tensor_destroy(bi);
    rlx_tensor_destroy(yf), rlx_tensor_destroy(yr);
}

/* The attention's tasks over the threads (rlx_cpu_attention_rows): the
 * tasks (batch x block of query rows) taken one by one by the first free
 * thread (what rlx_nn_run_items' shares with stealing come to for tasks of
 * equal rows), simulated with a task's time its rows; the slowest thread's rows
 * against an even share. BERT's and MiniLM's attention at batch 1 (12
 * heads) and 8 (96) on 16 threads must come within 10% of it (thirds of 43
 * rows, the earlier split, were 33% over at batch 1); every split within
 * 30% of it. */
static void test_attention_split(void) {
    static const size_t shapes[][4] = { { 12, 128, 128, 64 }, { 96, 128, 128, 64 }, { 12, 128, 128, 32 },
                                        { 96, 128, 128, 32 }, { 12, 384, 384, 64 }, { 1, 128, 128, 64 } };
    static const size_t threads[] = { 2, 5, 16 };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
            size_t nb = shapes[si][0], sq = shapes[si][1], sk = shapes[si][2], d = shapes[si][3], t = threads[ti];
            size_t rows = rlx_cpu_attention_rows(nb, sq, sk, d, d, t);
            CHECK_MSG(rows >= 1 && rows <= sq, "attention rows %zu of %zu", rows, sq);
            if (!rows) continue;
            size_t blocks = (sq + rows - 1) / rows, tasks = nb * blocks, busy[16] = { 0 };
            for (size_t i = 0; i < tasks; i++) { /* the next task to the thread that is free first */
                size_t first = 0;
                for (size_t w = 1; w < t; w++)
                    if (busy[w] < busy[first]) first = w;
                size_t r0 = i % blocks * rows;
                busy[first] += sq - r0 < rows ? sq - r0 : rows;
            }
            size_t slowest = 0;
            for (size_t w = 0; w < t; w++) slowest = busy[w] > slowest ? busy[w] : slowest;
            double even = (double)(nb * sq) / (double)t, over = (double)slowest / even;
            printf("  attention %zu x %zu rows, %zu keys, depth %zu on %zu threads: blocks of %zu rows, %zu tasks, "
                   "slowest thread %.2f of an even share\n",
                   nb, sq, sk, d, t, rows, tasks, over);
            CHECK_MSG(over <= 1.3, "attention %zu x %zu on %zu threads: the slowest thread has %.2f of an even share",
                      nb, sq, t, over);
            if (t == 16 && sq == 128 && nb >= 12)
                CHECK_MSG(over <= 1.1, "attention %zu x %zu on 16 threads: the slowest thread has %.2f of an even share",
                          nb, sq, over);
        }
}

int main(void) {
    static const aln_case alns[] = {
        { 3, { 1, 128, 768 }, 3, { 1, 128, 768 }, true, false, -1 },
        { 3, { 1, 128, 768 }, 1, { 768 }, true, false, -1 },
        { 3, { 3, 7, 384 }, 2, { 7, 384 }, false, false, -1 },
        { 3, { 3, 7, 384 }, 3, { 3, 7, 384 }, false, false, -1 },
        { 3, { 2, 5, 80 }, 1, { 80 }, true, false, -2 },
        { 3, { 2, 5, 80 }, 1, { 1 }, true, false, -1 },
        { 2, { 4, 1000 }, 2, { 4, 1000 }, true, false, -1 },
        { 2, { 4, 1000 }, 1, { 1000 }, true, true, -1 },
    };
    for (size_t i = 0; i < sizeof alns / sizeof alns[0]; i++) run_aln(&alns[i]);
    test_attention_split();

    static const int64_t seqs[] = { 1, 7, 128, 384 }, depths[] = { 32, 64, 80, 128 }, heads[] = { 1, 12 };
    double worst = 0;
    int n_cases = 0, idx = 0;
    for (size_t si = 0; si < 4; si++)
        for (size_t di = 0; di < 4; di++)
            for (size_t hi = 0; hi < 2; hi++, idx++) {
                int64_t s = seqs[si];
                /* at 384 the double reference is slow: 1 head for the odd depths */
                if (s == 384 && heads[hi] == 12 && (depths[di] == 32 || depths[di] == 80)) continue;
                at_case c = { s == 384 ? 1 : 3 - 2 * (idx % 2), heads[hi], s, s, depths[di], idx % 3, idx % 2 == 0,
                              idx % 4 == 1 };
                double w = run_case(&c);
                worst = fmax(worst, w);
                n_cases++;
            }
    /* decoding: one query row against 128 keys; a lone key */
    static const at_case extra[] = { { 1, 12, 1, 128, 64, 1, true, false },
                                     { 3, 12, 1, 128, 64, 2, false, true },
                                     { 2, 4, 7, 1, 32, 1, false, false },
                                     { 1, 12, 128, 384, 64, 1, true, false } };
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
        worst = fmax(worst, run_case(&extra[i]));
        n_cases++;
    }
    printf("  %d cases: worst |fast - ref| / max|V| %.3g (bound 2e-6 + 1e-6 |ref|)\n", n_cases, worst);
    TEST_MAIN_END();
}
