/* Defaults of the sanitizer runtimes in an RLX_SANITIZE=ON build (empty
 * otherwise). Every program linked with librlx (rlx, ocr_det, the tests)
 * picks them up; ASAN_OPTIONS / LSAN_OPTIONS set by hand still override.
 *
 * allocator_may_return_null=1: sizes read from models, .npy files and
 *   command lines are checked for overflow, but a checked size can still be
 *   far more than the machine has (a declared input of [1048576, 1048576]
 *   f32 is 4 TiB). rlx turns the failed allocation into
 *   RLX_ERR_OUT_OF_MEMORY; by default ASan would instead abort with
 *   "requested allocation size exceeds maximum supported size", so the
 *   sanitizer build could not test that path.
 * max_allocation_size_mb=256 (RLX_FUZZ builds only, tests/fuzz/): a single
 *   allocation above 256 MiB fails (NULL, hence RLX_ERR_OUT_OF_MEMORY)
 *   instead of succeeding and growing the process until libFuzzer reports
 *   it as out-of-memory: a fuzz input asking for a huge tensor is then an
 *   error, as it should be, and not a finding. Below libFuzzer's
 *   -malloc_limit_mb (its -rss_limit_mb, 2048 by default), which would
 *   report the allocation as a crash.
 * leak:libvulkan_lvp.so: Mesa's lavapipe (the software Vulkan driver the GPU
 *   tests run on without a GPU) leaks small allocations of its own when some
 *   pipelines are created; they are not rlx's to free. */
#if defined(__SANITIZE_ADDRESS__)
#define RLX_HAS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RLX_HAS_ASAN 1
#endif
#endif

#ifdef RLX_HAS_ASAN
const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);
const char *__lsan_default_options(void);

__attribute__((used, visibility("default"))) const char *__asan_default_options(void) {
#ifdef RLX_FUZZ
    return "allocator_may_return_null=1:max_allocation_size_mb=256";
#else
    return "allocator_may_return_null=1";
#endif
}

__attribute__((used, visibility("default"))) const char *__lsan_default_suppressions(void) {
    return "leak:libvulkan_lvp.so\n";
}

/* (no "Suppressions used" table after every GPU run) */
__attribute__((used, visibility("default"))) const char *__lsan_default_options(void) {
    return "print_suppressions=0";
}
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int rlx_sanitize_unused;
#endif
