#!/bin/bash
# Dawn on the lent NVIDIA H200: which adapters, features (subgroups,
# shader-f16, chromium-experimental-subgroup-matrix and its configurations)
# and limits Dawn gives there, and whether the probe's checked shaders
# (subgroupMatrixMultiply included) compute right (docs/dawn.md).
#
#   bash bench/dawn_device.sh prepare   here: fills .dawn/ (about 10 MB) from
#                                       build/ (targets dawn_probe, dawn_probe_lib)
#                                       and pinned wheels: dawn-python 0.3.0 (Dawn
#                                       chromium/6940, plain C library), wgpudawn
#                                       0.32.0.4 (Dawn of 2026 inside a CFFI module),
#                                       cffi 2.0.0 for CPython 3.10-3.13
#   bash bench/dawn_device.sh           on the device (carry [".gl", ".dawn"]):
#                                       unpacks the Vulkan loader and GL dispatch
#                                       libraries from .gl/*.deb (as device_run.sh),
#                                       runs both probes; $OUT/dawn.txt
set -u
cd "$(dirname "$0")/.." || exit 1
D=.dawn
if [ "${1:-}" = prepare ]; then
  set -e
  CACHE=${RLX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rlx}/wheels
  PY=${PYTHON:-python3}
  mkdir -p "$CACHE" "$D"
  # NAME==VER FILE SHA [pip args]: into the cache once, checked
  get() {
    local spec=$1 file=$2 sha=$3; shift 3
    if [ ! -f "$CACHE/$file" ] || ! echo "$sha  $CACHE/$file" | sha256sum -c --status; then
      "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$CACHE" "$@" "$spec"
    fi
    echo "$sha  $CACHE/$file" | sha256sum -c --status || { echo "dawn_device: sha256 mismatch: $file" >&2; exit 1; }
  }
  get dawn-python==0.3.0 dawn_python-0.3.0-py3-none-any.whl \
      27b2878d60dc7c461f86283ec86981e781efec9f464b688c33aebd842e0854cc
  get wgpudawn==0.32.0.4 wgpudawn-0.32.0.4-cp311-abi3-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl \
      4b99a6f0a386778694c6a7ecde658e848d9b3d6c3a33215581200c9cd619958f \
      --python-version 3.11 --platform manylinux_2_28_x86_64
  for pair in 310:fc7de24befaeae77ba923797c7c87834c73648a05a4bde34b3b7e5588973a453 \
              311:8941aaadaf67246224cee8c3803777eed332a19d909b47e29c9842ef1e79ac26 \
              312:3e17ed538242334bf70832644a32a7aae3d83b57567f9fd60a26257e992b79ba \
              313:c8d3b5532fc71b7a77c09192b4a5a200ea992702734a2e9279a37f2478236f26; do
    v=${pair%%:*}
    get cffi==2.0.0 "cffi-2.0.0-cp$v-cp$v-manylinux2014_x86_64.manylinux_2_17_x86_64.whl" "${pair#*:}" \
        --python-version "${v:0:1}.${v:1}" --platform manylinux2014_x86_64
  done
  rm -rf "$D" && mkdir -p "$D/wheels"
  cp build/dawn_probe build/libdawn_probe.so bench/dawn_probe.py "$D/"
  unzip -p "$CACHE/dawn_python-0.3.0-py3-none-any.whl" pydawn/lib/libwebgpu_dawn_x86_64.so | xz -T2 -6 > "$D/libwebgpu_dawn.so.xz"
  cp "$CACHE"/wgpudawn-0.32.0.4-*.whl "$CACHE"/cffi-2.0.0-cp31[0-3]-*.whl "$D/wheels/"
  du -sh "$D"
  exit 0
fi

OUT=${OUT:-/tmp/rlx_out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/dawn.txt") 2>&1
[ -f "$D/dawn_probe" ] || { echo "dawn_device: $D/dawn_probe missing: run 'bash bench/dawn_device.sh prepare' and carry .dawn"; exit 2; }
. bench/device_gl.sh
unpack_gl dawn_device
T=/tmp/rlx_dawn
rm -rf "$T" && mkdir -p "$T/py"
xz -dc "$D/libwebgpu_dawn.so.xz" > "$T/libwebgpu_dawn.so"
python3 -c "import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]" "$T/py" "$D"/wheels/*.whl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
# the NVIDIA ICD when the default ones give no discrete adapter (as device_run.sh)
run() {
  echo "== $*"
  timeout 120 "$@"
  echo "== exit $?"
}
run "$D/dawn_probe" "$T/libwebgpu_dawn.so" > "$T/a.txt" 2>&1
if ! grep -q ", discrete," "$T/a.txt"; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  echo "dawn_device: no discrete adapter through the default ICDs: VK_DRIVER_FILES=$VK_DRIVER_FILES"
  run "$D/dawn_probe" "$T/libwebgpu_dawn.so" > "$T/a.txt" 2>&1
fi
cat "$T/a.txt"
PYTHONPATH="$T/py" run python3 "$D/dawn_probe.py" --lib "$D/libdawn_probe.so"
