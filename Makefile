# rlx — the two commands a fresh machine needs:
#   make demo   set up, build, and run the OCR text-detection demo
#   make test   set up, build, and run every test
# Other targets: setup, build, clean. BUILD=dir picks the build folder;
# SANITIZE=1 builds with AddressSanitizer + UBSan (in build-asan/ unless
# BUILD says otherwise, so that build/ stays a plain build whose library
# Python can load).
SANITIZE ?= 0
BUILD ?= $(if $(filter 1,$(SANITIZE)),build-asan,build)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all setup build test demo clean

all: build

setup:
	scripts/setup.sh

build: setup
	cmake -S . -B $(BUILD) -DRLX_WERROR=ON -DRLX_SANITIZE=$(if $(filter 1,$(SANITIZE)),ON,OFF) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

demo: build
	$(BUILD)/ocr_det --model models/ppocrv4_det.onnx --image data/page.png --out out/page_prob.png

clean:
	rm -rf $(BUILD)
