# rlx — the two commands a fresh machine needs:
#   make demo   set up, build, and run the OCR text-detection demo
#   make test   set up, build, and run every test
# Checks that .ci/run adds after `make test` (docs/ROBUSTNESS.md, "Fuzzing"
# and "Sanitizers"; `scripts/setup.sh --sanitizers` installs clang):
#   make test-asan    the CPU tests under ASan + UBSan (build-asan/), and the
#                     fuzz seeds and regression inputs through the harnesses
#   make test-tsan    the concurrency tests under ThreadSanitizer (build-tsan/)
#   make fuzz-short   each libFuzzer harness for FUZZ_SECONDS (60; build-fuzz/), seed FUZZ_SEED (1)
#   make check-sanitizers   all three
# Other targets: setup, build, clean. BUILD=dir picks the build folder;
# SANITIZE=1 builds with AddressSanitizer + UBSan (in build-asan/ unless
# BUILD says otherwise, so that build/ stays a plain build whose library
# Python can load).
SANITIZE ?= 0
BUILD ?= $(if $(filter 1,$(SANITIZE)),build-asan,build)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

FUZZ_SECONDS ?= 60
FUZZ_SEED ?= 1
# what test-asan runs: every test but those on lavapipe (GPU), the Python
# ones (they load the plain build's library), the slow suites and the
# install test (its consumers link librlx.a without the sanitizer runtime)
ASAN_TESTS_EXCLUDE ?= webgpu|gpu|backend_ops|^py_|conformance|model_check|ops_doc|test_install
# what test-tsan runs: the tests that share sessions and devices between
# threads, and the CPU worker pool (the fast paths and the recurrent split on
# 5 threads, sessions of different cpu.threads); the GEMM's
# thread-count tests are left out (over 10 minutes each under TSan here)
TSAN_TESTS ?= ^(test_hardening|test_webgpu_share|test_cpu_conv_fast_threads5|test_cpu_rows_fast_threads5|test_session_threads|test_run_stop)$$
TSAN_TARGETS ?= test_hardening test_webgpu_share test_cpu_conv_fast test_cpu_rows_fast test_session_threads test_run_stop

.PHONY: all setup build test demo clean test-asan test-tsan fuzz-short check-sanitizers

all: build

setup:
	scripts/setup.sh

build: setup
	cmake -S . -B $(BUILD) -DRLX_WERROR=ON -DRLX_SANITIZE=$(if $(filter 1,$(SANITIZE)),ON,OFF) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-asan:
	$(MAKE) build SANITIZE=1 BUILD=build-asan
	cd build-asan && ctest --output-on-failure -j$(JOBS) -E '$(ASAN_TESTS_EXCLUDE)'
	python3 scripts/fuzz_seeds.py build-asan/fuzz-seeds
	for h in onnx npy tensor_pb; do build-asan/tests/fuzz/fuzz_$${h}_replay build-asan/fuzz-seeds/$$h \
	    2>build-asan/fuzz_replay_$$h.log || { tail -30 build-asan/fuzz_replay_$$h.log; exit 1; }; done

test-tsan: setup
	cmake -S . -B build-tsan -DRLX_WERROR=ON -DRLX_TSAN=ON $(CMAKE_FLAGS)
	cmake --build build-tsan -j$(JOBS) --target $(TSAN_TARGETS)
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	    ctest --output-on-failure -j$(JOBS) -R '$(TSAN_TESTS)'

fuzz-short: setup
	scripts/fuzz.sh -t $(FUZZ_SECONDS) -s $(FUZZ_SEED)

check-sanitizers: test-asan test-tsan fuzz-short

demo: build
	$(BUILD)/ocr_det --model models/ppocrv4_det.onnx --image data/page.png --out out/page_prob.png

clean:
	rm -rf $(BUILD)
