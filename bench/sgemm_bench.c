/* Times rlx's f32 GEMM (src/backend/cpu/cpu_sgemm.c) on the shapes
 * ResNet-50 and BERT-base hand it, per AVX-512 register tile (or the
 * kernel in use where the CPU has no AVX-512), alternating the variants
 * rep by rep so that load from elsewhere hits all alike. Per shape and
 * variant: the median of the reps in microseconds and GFLOP/s (2 m n k
 * per product), the share of peak when --peak is given, and how much of
 * the time packing takes ("pack%": 1 - time with both operands packed
 * beforehand / time as the model runs it).
 *
 *   build/tests/sgemm_bench [--tile all|8x32,8x48,12x32,14x32]
 *                           [--order rows,cols] [--nc 2048,512]
 *                           [--kernel portable|avx2|avx512]
 *                           [--threads N] [--reps R] [--peak GFLOPS] [--wall]
 *                           [M:K:N[:a|:b] ...]
 *
 * Shapes are M x K x N as the model sees them; a trailing :a says that A
 * (M x K) is the constant (a convolution's weights: A packed at compile
 * time, B, the columns, packed per call), :b that B is (a MatMul's
 * weights; A, the activations, packed per call). --order and --nc
 * (rlx_cpu_sgemm_blocking_set) add the blocking to the variants (every
 * tile x order x nc): "cols" runs B's column panels inside A's row
 * panels, "rows" the reverse, "auto" (default) the library's choice
 * (cols above 128 rows); nc the columns of B per packed block
 * (default 2048). Default shapes: the
 * list below. --threads N runs on N worker threads (default 1: the
 * per-core rate); --peak is the machine's f32 peak in GFLOP/s for the
 * threads used (one core: FMA units x lanes x 2 x GHz; e.g. 2 x 16 x 2 x
 * 2.0 = 128 for an AVX-512 server core at 2.0 GHz). Clock: at one
 * thread the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: time-sharing
 * with other processes on a busy machine does not count; --wall for wall
 * time), on more threads wall time. Also printed: the fastest rep. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/cpu_sgemm.h"
#include "base/parallel.h"
#include "rlx/inspect.h"
#include "test.h"

static bool g_cpu_clock;

static double now_s(void) {
    if (!g_cpu_clock) return rlx_now_seconds();
    return test_thread_cpu_seconds();
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, test_cmp_double);
    return v[n / 2];
}

static int usage(const char *why) {
    fprintf(stderr,
            "sgemm_bench: %s\nusage: sgemm_bench [--tile all|T,T...] [--order rows,cols] [--nc N,...] "
            "[--kernel portable|avx2|avx512] [--threads N] "
            "[--reps R] [--peak GFLOPS] [--wall] [M:K:N[:a|:b] ...]\n",
            why);
    return 2;
}

typedef struct variant {
    int tile; /* rlx_cpu_sgemm_avx512_tile, -1: the kernel in use */
    int order; /* -1: the library's default (auto), 0: cols, 1: rows */
    size_t nc;
} variant;

/* Selects variant v (tile and blocking). */
static void use(const variant *v) {
    if (v->tile >= 0) rlx_cpu_sgemm_avx512_tile_set((rlx_cpu_sgemm_avx512_tile)v->tile);
    if (v->order < 0) rlx_cpu_sgemm_blocking_reset();
    if (v->order >= 0 || v->nc != 2048) rlx_cpu_sgemm_blocking_set(v->order == 1, v->nc);
}

typedef struct shape {
    size_t m, k, n;
    char konst; /* 'a' or 'b': the operand packed beforehand */
} shape;

/* One product as the model runs it (packed: the constant operand packed
 * beforehand) or the kernel alone (both packed beforehand). */
static void run(const shape *s, const float *a, const float *b, float *c, const rlx_cpu_sgemm_pack *pa,
                const rlx_cpu_sgemm_pack *pb, bool both) {
    rlx_cpu_sgemm_packref ra = { pa, 0, 0 }, rb = { pb, 0, 0 };
    bool use_a = both || s->konst == 'a', use_b = both || s->konst == 'b';
    rlx_cpu_sgemm_packed(false, false, s->m, s->n, s->k, 1.0f, a, s->k, b, s->n, 0.0f, c, s->n, use_a ? &ra : NULL,
                         use_b ? &rb : NULL);
}

int main(int argc, char **argv) {
    static const char *defaults[] = {
        "256:2304:196:a", "64:576:3136:a", "1024:256:196:a", "2048:512:49:a", "512:4608:49:a", "128:1152:784:a",
        "128:768:768:b",  "128:768:3072:b", "128:3072:768:b", "1024:1024:1024:b",
    };
    const char *tiles_arg = "all", *kernel_arg = NULL, *order_arg = "auto", *nc_arg = "2048";
    int threads = 1, reps = 15;
    double peak = 0.0;
    int first_shape = argc;
    bool wall = false;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strncmp(o, "--", 2) != 0) {
            first_shape = i;
            break;
        }
        if (strcmp(o, "--wall") == 0) {
            wall = true;
            continue;
        }
        if (i + 1 >= argc) return usage("an option without its value");
        if (strcmp(o, "--tile") == 0) tiles_arg = argv[++i];
        else if (strcmp(o, "--kernel") == 0) kernel_arg = argv[++i];
        else if (strcmp(o, "--order") == 0) order_arg = argv[++i];
        else if (strcmp(o, "--nc") == 0) nc_arg = argv[++i];
        else if (strcmp(o, "--threads") == 0) threads = atoi(argv[++i]);
        else if (strcmp(o, "--reps") == 0) reps = atoi(argv[++i]);
        else if (strcmp(o, "--peak") == 0) peak = atof(argv[++i]);
        else return usage("unknown option");
    }
    if (threads < 1 || reps < 1) return usage("--threads and --reps must be at least 1");
    g_cpu_clock = threads == 1 && !wall;
    int got = 0;
    if (rlx_parallel_configure(threads, -1, &got) != RLX_OK) return usage("cannot start the worker pool");
    rlx_parallel_set_limit(threads);

    if (kernel_arg) {
        rlx_cpu_sgemm_kernel k = strcmp(kernel_arg, "portable") == 0 ? RLX_CPU_SGEMM_PORTABLE
                                 : strcmp(kernel_arg, "avx2") == 0   ? RLX_CPU_SGEMM_AVX2
                                 : strcmp(kernel_arg, "avx512") == 0 ? RLX_CPU_SGEMM_AVX512
                                                                     : (rlx_cpu_sgemm_kernel)-1;
        if (!rlx_cpu_sgemm_kernel_set(k)) return usage("unknown kernel, or one this CPU does not run");
    }
    bool avx512 = rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX512;
    /* the tiles: AVX-512's, or the one kernel in use (-1) */
    int tiles[RLX_CPU_SGEMM_TILE_COUNT], ntile = 0;
    if (!avx512) tiles[ntile++] = -1;
    else if (strcmp(tiles_arg, "all") == 0)
        for (int t = 0; t < RLX_CPU_SGEMM_TILE_COUNT; t++) tiles[ntile++] = t;
    else {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", tiles_arg);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            int t = -1;
            for (int q = 0; q < RLX_CPU_SGEMM_TILE_COUNT; q++)
                if (strcmp(tok, rlx_cpu_sgemm_avx512_tile_name((rlx_cpu_sgemm_avx512_tile)q)) == 0) t = q;
            if (t < 0 || ntile == RLX_CPU_SGEMM_TILE_COUNT) return usage("unknown tile (8x32, 8x48, 12x32, 14x32)");
            tiles[ntile++] = t;
        }
    }
    int orders[3], norder = 0;
    size_t ncs[4];
    int nnc = 0;
    {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", order_arg);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            if (norder == 3 || (strcmp(tok, "rows") != 0 && strcmp(tok, "cols") != 0 && strcmp(tok, "auto") != 0))
                return usage("--order takes rows, cols, auto");
            orders[norder++] = strcmp(tok, "auto") == 0 ? -1 : strcmp(tok, "rows") == 0;
        }
        snprintf(buf, sizeof buf, "%s", nc_arg);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            long v = atol(tok);
            if (nnc == 4 || v < 64 || v > 2048) return usage("--nc takes up to 4 values in [64, 2048]");
            ncs[nnc++] = (size_t)v;
        }
        if (!norder || !nnc) return usage("empty --order or --nc");
    }
    variant var[RLX_CPU_SGEMM_TILE_COUNT * 3 * 4];
    int nvar = 0;
    for (int a = 0; a < ntile; a++)
        for (int b = 0; b < norder; b++)
            for (int c = 0; c < nnc; c++) var[nvar++] = (variant){ tiles[a], orders[b], ncs[c] };
    const char *kname = avx512 ? "avx512" : rlx_cpu_sgemm_kernel_get() == RLX_CPU_SGEMM_AVX2 ? "avx2" : "portable";
    printf("sgemm_bench: kernel %s, %d thread(s), median of %d reps, %s time%s\n", kname, threads, reps,
           g_cpu_clock ? "thread CPU" : "wall", peak > 0 ? "" : " (no --peak: no share of peak)");
    printf("%-20s %-16s %10s %9s %7s %9s %10s %7s\n", "M:K:N", "tile/order/nc", "median_us", "GFLOP/s", "%peak", "best_GF/s",
           "kern_us", "pack%");

    int nshape = first_shape < argc ? argc - first_shape : (int)(sizeof defaults / sizeof *defaults);
    double *t = malloc((size_t)(2 * nvar * reps) * sizeof *t);
    if (!t) return 1;
    for (int si = 0; si < nshape; si++) {
        const char *spec = first_shape < argc ? argv[first_shape + si] : defaults[si];
        shape s = { 0, 0, 0, 'a' };
        char kc = 0;
        int nf = sscanf(spec, "%zu:%zu:%zu:%c", &s.m, &s.k, &s.n, &kc);
        if (nf < 3 || !s.m || !s.k || !s.n || (nf == 4 && kc != 'a' && kc != 'b')) return usage("bad shape");
        if (nf == 4) s.konst = kc;
        float *a = malloc(s.m * s.k * sizeof *a), *b = malloc(s.k * s.n * sizeof *b);
        float *c = malloc(s.m * s.n * sizeof *c);
        if (!a || !b || !c) return 1;
        for (size_t i = 0; i < s.m * s.k; i++) a[i] = (float)((i * 2654435761u >> 13) % 2001) / 1000.0f - 1.0f;
        for (size_t i = 0; i < s.k * s.n; i++) b[i] = (float)((i * 40503u >> 7) % 2001) / 1000.0f - 1.0f;
        /* per variant: its own packs (the layout is the tile's) */
        rlx_cpu_sgemm_pack pa[sizeof var / sizeof var[0]], pb[sizeof var / sizeof var[0]];
        for (int q = 0; q < nvar; q++) {
            use(&var[q]);
            if (rlx_cpu_sgemm_pack_a(false, 1, s.m, s.k, a, s.k, 0, &pa[q]) != RLX_OK ||
                rlx_cpu_sgemm_pack_b(false, s.k, s.n, b, s.n, &pb[q]) != RLX_OK)
                return 1;
        }
        for (int it = -2; it < reps; it++) /* two warm-up rounds */
            for (int q = 0; q < nvar; q++) {
                use(&var[q]);
                for (int both = 0; both < 2; both++) {
                    double t0 = now_s();
                    run(&s, a, b, c, &pa[q], &pb[q], both);
                    double dt = (now_s() - t0) * 1e6;
                    if (it >= 0) t[(2 * q + both) * reps + it] = dt;
                }
            }
        double flop = 2.0 * (double)s.m * (double)s.n * (double)s.k;
        for (int q = 0; q < nvar; q++) {
            double med = median(t + 2 * q * reps, reps), kern = median(t + (2 * q + 1) * reps, reps);
            double best = t[2 * q * reps]; /* sorted by median() */
            double gf = flop / med / 1e3;
            char pk[16] = "-";
            if (peak > 0) snprintf(pk, sizeof pk, "%.1f", 100.0 * gf / peak);
            char vn[48];
            snprintf(vn, sizeof vn, "%s/%s/%zu",
                     var[q].tile >= 0 ? rlx_cpu_sgemm_avx512_tile_name((rlx_cpu_sgemm_avx512_tile)var[q].tile) : kname,
                     var[q].order < 0 ? "auto" : var[q].order ? "rows" : "cols", var[q].nc);
            printf("%-20s %-16s %10.1f %9.1f %7s %9.1f %10.1f %7.1f\n", spec, vn, med, gf, pk, flop / best / 1e3, kern,
                   100.0 * (1.0 - kern / med));
            rlx_cpu_sgemm_pack_free(&pa[q]);
            rlx_cpu_sgemm_pack_free(&pb[q]);
        }
        free(a), free(b), free(c);
    }
    free(t);
    return 0;
}
