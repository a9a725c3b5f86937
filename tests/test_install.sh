#!/bin/sh
# The installed package (cmake/install.cmake), as a user gets it:
#   cmake --install BUILD --prefix TMP/prefix
# then checks the layout (headers, librlx.so.MAJOR -> librlx.so.M.m.p with
# soname librlx.so.MAJOR, librlx.a, rlx.pc, the CMake package, the CLI), that
# nothing installed carries a RUNPATH into the build or source tree, that
# librlx.so exports exactly the functions the installed headers mark RLX_API,
# and builds examples/package_consumer outside the tree once through
# find_package(rlx) (shared and static) and once through pkg-config; each
# runs a model built with the graph builder and an ONNX file on the CPU. The
# prefix is then moved, and the CLI and a pkg-config build still work there
# (the package is relocatable).
# usage: tests/test_install.sh BUILD_DIR SOURCE_DIR [PYTHON]
set -eu
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
PY=${3:-}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/rlx_install.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

P=$TMP/prefix
cmake --install "$BUILD" --prefix "$P" >"$TMP/install.log" || { cat "$TMP/install.log"; exit 1; }

# ---------------------------------------------------------------- layout
SO=$(find "$P" -name 'librlx.so.*.*.*' | head -n 1)
[ -n "$SO" ] || { echo "FAIL: no librlx.so.M.m.p installed"; exit 1; }
LIB=$(dirname "$SO")
VERSION=${SO##*/librlx.so.}
MAJOR=${VERSION%%.*}
for f in "$P/include/rlx/rlx.h" "$P/include/rlx/version.h" "$P/include/rlx/session_ext.h" \
         "$P/include/rlx/inspect.h" "$P/include/rlx/half.h" "$LIB/librlx.a" "$LIB/pkgconfig/rlx.pc" \
         "$LIB/cmake/rlx/rlxConfig.cmake" "$LIB/cmake/rlx/rlxConfigVersion.cmake" "$P/bin/rlx"; do
    [ -e "$f" ] && ok "installed ${f#$P/}" || fail "missing ${f#$P/}"
done
DOC=$P/share/doc/rlx
[ -f "$DOC/LICENSE" ] && ok "installed share/doc/rlx/LICENSE" || fail "missing share/doc/rlx/LICENSE"
if [ -e "$LIB/libwgpu_native.so" ]; then
    for f in NOTICE.wgpu-native LICENSE.wgpu-py; do
        [ -s "$DOC/licenses/$f" ] && ok "wgpu-native's terms: share/doc/rlx/licenses/$f" ||
            fail "libwgpu_native.so is installed without share/doc/rlx/licenses/$f"
    done
fi
[ "$(readlink "$LIB/librlx.so.$MAJOR")" = "librlx.so.$VERSION" ] && ok "librlx.so.$MAJOR -> librlx.so.$VERSION" ||
    fail "librlx.so.$MAJOR does not point to librlx.so.$VERSION"
[ "$(readlink "$LIB/librlx.so")" = "librlx.so.$MAJOR" ] && ok "librlx.so -> librlx.so.$MAJOR" ||
    fail "librlx.so does not point to librlx.so.$MAJOR"
readelf -d "$SO" | grep -q "Library soname: \[librlx.so.$MAJOR\]" && ok "soname librlx.so.$MAJOR" || fail "soname"
grep -q "#define RLX_VERSION_STRING \"$VERSION\"" "$P/include/rlx/version.h" && ok "version.h says $VERSION" ||
    fail "version.h does not say $VERSION"

# ---------------------------------------------------------------- RUNPATHs
for f in "$SO" "$P/bin/rlx"; do
    rp=$(readelf -d "$f" | sed -n 's/.*R[UN]*PATH).*\[\(.*\)\]/\1/p')
    case "$rp" in
    *"$BUILD"* | *"$SRC"* | *third_party*) fail "${f#$P/} has RUNPATH '$rp' into the build tree" ;;
    *) ok "${f#$P/} RUNPATH '$rp'" ;;
    esac
done

# ---------------------------------------------------------------- exports
nm -D --defined-only "$SO" | awk '{print $3}' | grep -v -x -e _init -e _fini | sort >"$TMP/exported"
grep -h -o 'RLX_API[^(]*(' "$P"/include/rlx/*.h | grep -o 'rlx_[a-z0-9_]*($' | tr -d '(' | sort >"$TMP/declared"
if cmp -s "$TMP/exported" "$TMP/declared"; then
    ok "librlx.so exports the $(wc -l <"$TMP/declared") RLX_API functions and nothing else"
else
    fail "exports differ from the RLX_API declarations (< exported only, > declared only):"
    diff "$TMP/exported" "$TMP/declared" | grep '^[<>]' | head -n 20
fi

# ---------------------------------------------------------------- a model file
MODEL=
if [ -n "$PY" ] && "$PY" -c "import onnx" 2>/dev/null; then
    MODEL=$TMP/tiny.onnx
    "$PY" - "$MODEL" <<'PYEOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                      "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
fi

# ---------------------------------------------------------------- find_package
C1=$TMP/consumer_cmake
if cmake -S "$SRC/examples/package_consumer" -B "$C1" -DCMAKE_PREFIX_PATH="$P" >"$TMP/c1.log" 2>&1 &&
    cmake --build "$C1" >>"$TMP/c1.log" 2>&1; then
    ok "find_package(rlx) build"
    "$C1/rlx_consumer" $MODEL && ok "find_package consumer (shared) runs" || fail "find_package consumer (shared)"
    if [ -x "$C1/rlx_consumer_static" ]; then
        "$C1/rlx_consumer_static" $MODEL && ok "find_package consumer (rlx::rlx_static) runs" ||
            fail "find_package consumer (static)"
    else
        fail "rlx::rlx_static was not defined (protobuf-c and OpenBLAS development files are installed here)"
    fi
else
    cat "$TMP/c1.log"
    fail "find_package(rlx) build"
fi

# ---------------------------------------------------------------- pkg-config
pc_build() { # PREFIX OUT
    lib=$(dirname "$(find "$1" -name 'librlx.so.*.*.*' | head -n 1)")
    PKG_CONFIG_PATH=$lib/pkgconfig
    export PKG_CONFIG_PATH
    # shellcheck disable=SC2046
    cc -std=c11 -o "$2" "$SRC/examples/package_consumer/main.c" $(pkg-config --cflags --libs rlx) -lm \
        -Wl,-rpath,"$lib"
}
if pc_build "$P" "$TMP/consumer_pc" 2>"$TMP/pc.log"; then
    ok "pkg-config build ($(PKG_CONFIG_PATH=$LIB/pkgconfig pkg-config --modversion rlx))"
    "$TMP/consumer_pc" $MODEL && ok "pkg-config consumer runs" || fail "pkg-config consumer"
else
    cat "$TMP/pc.log"
    fail "pkg-config build"
fi

# ---------------------------------------------------------------- the CLI, then moved
"$P/bin/rlx" --version | grep -q "rlx $VERSION" && ok "installed rlx --version" || fail "installed rlx --version"
mv "$P" "$TMP/moved"
M=$TMP/moved
if [ -n "$MODEL" ]; then
    "$M/bin/rlx" run "$MODEL" --iters 1 --warmup 0 --quiet >"$TMP/cli.log" 2>&1 && ok "moved rlx run" ||
        { cat "$TMP/cli.log"; fail "moved rlx run"; }
fi
if pc_build "$M" "$TMP/consumer_pc2" 2>"$TMP/pc2.log" && "$TMP/consumer_pc2" >/dev/null; then
    ok "pkg-config build from the moved prefix"
else
    cat "$TMP/pc2.log"
    fail "pkg-config build from the moved prefix"
fi

[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "all install checks passed"
