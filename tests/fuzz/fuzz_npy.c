/* libFuzzer harness: the .npy reader (rlx_tensor_load_npy). An input that
 * loads is read to its last byte, written back with rlx_tensor_save_npy and
 * read again, and must give the same tensor (the writer and the reader
 * agree on every file the reader accepts). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_temp(data, size, "in.npy");
    if (!path) return 0;
    rlx_tensor *t = NULL;
    rlx_status st = rlx_tensor_load_npy(path, &t);
    fuzz_check(st, "rlx_tensor_load_npy");
    if (st) return 0;
    fuzz_touch_tensor(t);
    char back[160];
    snprintf(back, sizeof back, "%s.back.npy", path);
    st = rlx_tensor_save_npy(t, back);
    fuzz_check(st, "rlx_tensor_save_npy");
    if (st == RLX_OK) {
        rlx_tensor *u = NULL;
        st = rlx_tensor_load_npy(back, &u);
        if (st) {
            fprintf(stderr, "fuzz: a saved .npy does not load again: %s\n", rlx_last_error());
            abort();
        }
        if (!fuzz_same_tensor(t, u)) {
            fprintf(stderr, "fuzz: .npy round trip changed the tensor\n");
            abort();
        }
        rlx_tensor_destroy(u);
    }
    rlx_tensor_destroy(t);
    return 0;
}
