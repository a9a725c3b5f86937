# Sourced by bench/device_run.sh and bench/dawn_device.sh on the lent H200:
# unpack_gl WHO unpacks the Vulkan loader (libvulkan1) and the GL dispatch
# libraries from .gl/*.deb into / (the image has the NVIDIA driver but no
# loader). RLX_NO_DEBS=1 skips this: for a try on a machine that has them,
# such as a developer's. WHO prefixes the messages.
unpack_gl() {
  if [ -n "${RLX_NO_DEBS:-}" ]; then
    echo "$1: RLX_NO_DEBS set: not unpacking .gl/*.deb"
  elif ls .gl/*.deb >/dev/null 2>&1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  else
    echo "$1: no .gl/*.deb (carry .gl): relying on the image's Vulkan loader"
  fi
}
