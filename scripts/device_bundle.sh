#!/bin/sh
# Gathers what a run on the lent GPU machine needs (bench/device_run.sh) into
# the git-ignored folder .device/ of the repository root:
#
#   .device/bundle.tar.xz   bin/   rlx and the GPU tests: test_gpu_gemm, test_gpu_conv,
#                                  test_webgpu, test_webgpu_split, test_webgpu_share,
#                                  test_webgpu_reduce, test_webgpu_index, test_webgpu_attention,
#                                  test_fusion, test_backend_ops, test_run_stop, sgemm_bench
#                                  (the f32 GEMM's tiles, bench/sgemm_bench.c), pw_conv (the
#                                  pointwise convolution against im2col + GEMM, bench/pw_conv.c),
#                                  conv_node (one Conv node on the CPU's fast paths, bench/conv_node.c),
#                                  rnn_node (one LSTM / GRU node's recurrent fast path, bench/rnn_node.c),
#                                  pool_cost (the CPU pool's regions, small GEMMs split or not, bench/pool_cost.c),
#                                  alu_rates (WGSL arithmetic rates, bench/alu_rates.c; when built)
#                                  (stripped)
#                           lib/   the shared libraries they load that the
#                                  machine's image lacks: libwgpu_native.so,
#                                  libprotobuf-c.so.1, libopenblas.so.0 (+
#                                  libgfortran.so.5, libquadmath.so.0), libpng16.so.16
#                           models/ ppocrv4_det.onnx, the demo page (data/page.png) and
#                                  the ONNX suite's light/*.onnx
#   .gl/*.deb               the Vulkan loader (libvulkan1) and the GL dispatch
#                           libraries (libegl1 libglvnd0 libopengl0 libgl1 libglx0
#                           libgles2), which the machine's NVIDIA Vulkan driver
#                           needs (with only libvulkan1 and libglvnd0 the H200
#                           showed no adapter); downloaded with apt-get download
#                           when missing
#
#   scripts/device_bundle.sh [BUILD_DIR [NAME]]   (default: build, bundle)
#
# NAME other than 'bundle' writes .device/NAME.tar.xz and .device/NAME.REVISION
# instead: a second build to compare against in the same device call
# (bench/device_run.sh ab).
#
# Everything is compressed (xz) to stay far below the 64 MiB that a device
# call may carry; the script prints the sizes and fails if the bundle is
# larger than 48 MiB. The binaries are the ones built here (x86-64, glibc
# of this machine); the device image has a newer glibc.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
NAME=${2:-bundle}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
OUTD=$ROOT/.device
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/models/light" "$OUTD"

for b in rlx coop_probe tests/test_gpu_gemm tests/test_gpu_conv tests/test_webgpu tests/test_webgpu_split tests/test_webgpu_share \
         tests/test_webgpu_reduce tests/test_webgpu_index tests/test_webgpu_attention tests/test_fusion tests/test_backend_ops \
         tests/test_run_stop tests/sgemm_bench tests/pw_conv tests/conv_node tests/rnn_node \
         tests/pool_cost; do
  if [ ! -x "$BUILD/$b" ]; then
    # a base build of an older revision may predate a program: the modes
    # that compare against the base run only rlx from it
    if [ "$NAME" != bundle ] && [ -x "$BUILD/rlx" ]; then
      echo "device_bundle: $BUILD/$b is missing (not in this revision): left out of $NAME" >&2
      continue
    fi
    echo "device_bundle: $BUILD/$b is missing: build first (cmake --build $BUILD -j2)" >&2
    exit 1
  fi
  strip -o "$STAGE/bin/$(basename "$b")" "$BUILD/$b"
done

# shared libraries: every one rlx or a test needs except the C library's own
libs=$(for b in "$STAGE"/bin/*; do ldd "$b"; done | awk '/=> \// {print $1 " " $3}' | sort -u)
echo "$libs" | while read -r name path; do
  case "$name" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libgcc_s.so*) continue ;;
  esac
  cp -L "$path" "$STAGE/lib/$name"
done
# libpng for the OCR demo (examples/ocr_det), when present
for p in /usr/lib/x86_64-linux-gnu/libpng16.so.16 /lib/x86_64-linux-gnu/libpng16.so.16; do
  if [ -e "$p" ]; then cp -L "$p" "$STAGE/lib/"; break; fi
done
for need in libwgpu_native.so libprotobuf-c.so.1 libopenblas.so.0 libgfortran.so.5; do
  if [ ! -e "$STAGE/lib/$need" ]; then
    echo "device_bundle: $need was not found among the libraries rlx loads" >&2
    exit 1
  fi
done
if [ -x "$BUILD/ocr_det" ]; then strip -o "$STAGE/bin/ocr_det" "$BUILD/ocr_det"; fi
# the WGSL arithmetic rates (bench/alu_rates.c; builds older than it lack it)
if [ -x "$BUILD/alu_rates" ]; then strip -o "$STAGE/bin/alu_rates" "$BUILD/alu_rates"; fi
# the shared library, for the Python bindings' scripts (RLX_LIBRARY=lib/librlx.so)
if [ -e "$BUILD/librlx.so" ]; then strip -o "$STAGE/lib/librlx.so" "$BUILD/librlx.so"; fi

# models that the ignored folders hold here
if [ -f "$ROOT/models/ppocrv4_det.onnx" ]; then cp -L "$ROOT/models/ppocrv4_det.onnx" "$STAGE/models/"; fi
if [ -f "$ROOT/data/page.png" ]; then cp -L "$ROOT/data/page.png" "$STAGE/models/"; fi
LIGHT=$ROOT/third_party/onnx/backend-test-data/light
if [ -d "$LIGHT" ]; then cp -L "$LIGHT"/*.onnx "$STAGE/models/light/"; fi

REV=$OUTD/REVISION
[ "$NAME" = bundle ] || REV=$OUTD/$NAME.REVISION
tar -C "$STAGE" -cf - bin lib models | xz -6 -T2 > "$OUTD/$NAME.tar.xz"
git -C "$BUILD/.." rev-parse --short HEAD > "$REV" 2>/dev/null || echo unknown > "$REV"

# the Vulkan loader and libglvnd for the device (see /work/.library/device/README.md)
GL=$ROOT/.gl
GL_PKGS="libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
missing=
for p in $GL_PKGS; do ls "$GL/${p}_"*.deb >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  mkdir -p "$GL" /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  # shellcheck disable=SC2086
  apt-get $o update >/dev/null
  # shellcheck disable=SC2086
  (cd "$GL" && apt-get $o download $missing >/dev/null)
fi

size=$(wc -c < "$OUTD/$NAME.tar.xz")
glsize=$(cat "$GL"/*.deb | wc -c)
echo "device_bundle: .device/$NAME.tar.xz $((size / 1024)) KiB (revision $(cat "$REV")), .gl $((glsize / 1024)) KiB"
tar -tJf "$OUTD/$NAME.tar.xz" | sed 's/^/  /'
if [ "$size" -gt $((48 * 1024 * 1024)) ]; then
  echo "device_bundle: the bundle is larger than 48 MiB" >&2
  exit 1
fi
