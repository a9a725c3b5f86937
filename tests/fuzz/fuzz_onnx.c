/* libFuzzer harness: the ONNX importer (rlx_model_load_onnx_memory), then,
 * when the model loads, one bounded run on the CPU with small inputs.
 *
 * Bounds, so that a model asking for a huge tensor is an error and not a
 * finding: symbolic input dims are 2, an input of more than
 * FUZZ_MAX_INPUT_ELEMS elements skips the run, and the sanitizer build's
 * allocator refuses single allocations above max_allocation_size_mb
 * (src/base/sanitize.c, set for RLX_FUZZ builds) so that rlx reports
 * RLX_ERR_OUT_OF_MEMORY. A run has FUZZ_RUN_TIMEOUT_MS (option
 * run.timeout_ms), so that a Loop whose condition never turns false or
 * whose trip count is 2^62 returns RLX_ERR_CANCELLED instead of being a
 * libFuzzer timeout (scripts/fuzz.sh: -timeout=20 s);
 * regress/onnx/loop_while_runaway.onnx is one. External data is refused
 * (base_dir NULL). Input values are small (integers 0..3, floats in [-2, 2]) and derived from the
 * input bytes, so a finding reproduces. */
#include "fuzz_util.h"

#include <rlx/session_ext.h>

#define FUZZ_MAX_INPUT_ELEMS 4096
#define FUZZ_RUN_TIMEOUT_MS "2000"

static uint64_t g_rng;

static uint32_t rnd(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(g_rng >> 33);
}

/* Fills a non-string tensor with small values of its dtype. */
static void fill_small(rlx_tensor *t) {
    size_t n = rlx_tensor_numel(t);
    for (size_t i = 0; i < n; i++) {
        uint32_t r = rnd();
        float f = (float)(int)(r % 17) / 4.0f - 2.0f;
        int64_t k = (int64_t)(r % 4);
        switch (t->dtype) {
        case RLX_DTYPE_F32: ((float *)t->data)[i] = f; break;
        case RLX_DTYPE_F64: ((double *)t->data)[i] = f; break;
        case RLX_DTYPE_F16: ((uint16_t *)t->data)[i] = (uint16_t)(0x3c00u | (r & 0x8000u)); break; /* +-1 */
        case RLX_DTYPE_BF16: ((uint16_t *)t->data)[i] = (uint16_t)(0x3f80u | (r & 0x8000u)); break;
        case RLX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(r & 1); break;
        case RLX_DTYPE_U8: case RLX_DTYPE_I8: ((uint8_t *)t->data)[i] = (uint8_t)k; break;
        case RLX_DTYPE_U16: case RLX_DTYPE_I16: ((uint16_t *)t->data)[i] = (uint16_t)k; break;
        case RLX_DTYPE_U32: case RLX_DTYPE_I32: ((uint32_t *)t->data)[i] = (uint32_t)k; break;
        case RLX_DTYPE_U64: case RLX_DTYPE_I64: ((uint64_t *)t->data)[i] = (uint64_t)k; break;
        default: break;
        }
    }
}

/* Makes the input tensor for `info`, or returns false to skip the run
 * (unknown rank or dtype, too many elements). */
static bool make_input(const rlx_value_info *info, rlx_tensor **out) {
    *out = NULL;
    if (info->rank < 0 || info->rank > RLX_MAX_RANK) return false;
    int64_t dims[RLX_MAX_RANK];
    size_t numel = 1;
    for (int d = 0; d < info->rank; d++) {
        dims[d] = info->dims[d] >= 0 ? info->dims[d] : 2;
        if (dims[d] > FUZZ_MAX_INPUT_ELEMS) return false;
        numel *= (size_t)dims[d];
        if (numel > FUZZ_MAX_INPUT_ELEMS) return false;
    }
    if (info->dtype == RLX_DTYPE_STRING) {
        static const char *const k_words[] = { "", "a", "Ab c", "\xc3\xa9t\xc3\xa9" };
        const char *s[FUZZ_MAX_INPUT_ELEMS];
        for (size_t i = 0; i < numel; i++) s[i] = k_words[rnd() % 4];
        return rlx_tensor_create_strings(dims, info->rank, s, out) == RLX_OK;
    }
    if (rlx_tensor_create(info->dtype, dims, info->rank, out) != RLX_OK) return false;
    fill_small(*out);
    return true;
}

static void run_once(const rlx_model *m) {
    static rlx_options *opts;
    if (!opts) {
        /* one worker thread per run: runs stay small; and short */
        if (rlx_options_create(&opts) || rlx_options_set(opts, "cpu.threads", "1") ||
            rlx_options_set(opts, "run.timeout_ms", FUZZ_RUN_TIMEOUT_MS))
            abort();
    }
    size_t n_in = rlx_model_num_inputs(m);
    if (n_in > 16) return;
    const char *names[16];
    rlx_tensor *ins[16] = { 0 };
    bool ok = true;
    for (size_t i = 0; i < n_in && ok; i++) {
        rlx_value_info info;
        fuzz_check(rlx_model_input_info(m, i, &info), "rlx_model_input_info");
        names[i] = info.name;
        ok = make_input(&info, &ins[i]);
    }
    rlx_session *s = NULL;
    if (ok) {
        rlx_status st = rlx_session_create_with_options(m, &(rlx_session_options){ .device = "cpu" }, opts, &s);
        fuzz_check(st, "rlx_session_create");
    }
    if (s) {
        rlx_tensor **outs = NULL;
        size_t n_out = 0;
        rlx_status st = rlx_session_run(s, n_in, names, (const rlx_tensor *const *)ins, &outs, &n_out);
        fuzz_check(st, "rlx_session_run");
        if (st == RLX_OK) {
            for (size_t i = 0; i < n_out; i++) {
                fuzz_touch_tensor(outs[i]);
                rlx_tensor_destroy(outs[i]);
            }
            free(outs);
        }
        rlx_session_destroy(s);
    }
    for (size_t i = 0; i < n_in; i++) rlx_tensor_destroy(ins[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rlx_model *m = NULL;
    rlx_status st = rlx_model_load_onnx_memory(data, size, NULL, &m);
    fuzz_check(st, "rlx_model_load_onnx_memory");
    if (st) return 0;
    g_rng = 0x9e3779b97f4a7c15ull ^ size;
    for (size_t i = 0; i < size && i < 64; i++) g_rng = g_rng * 31 + data[i];
    run_once(m);
    rlx_model_destroy(m);
    return 0;
}
