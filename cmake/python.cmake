# The Python wheel (pyproject.toml, scikit-build-core; included only when
# scikit-build-core drives CMake, i.e. SKBUILD is set).
#
# The wheel holds the rlx package (python/rlx, copied by scikit-build-core)
# and, next to its __init__.py, librlx.so with every shared library it needs
# beyond the C runtime: libwgpu_native.so (with the WebGPU backend) and the
# system's protobuf-c and OpenBLAS with their own dependencies (gfortran,
# quadmath). librlx.so carries DT_RPATH $ORIGIN (not RUNPATH: an RPATH is
# also searched for the dependencies of its dependencies, e.g. OpenBLAS's
# libgfortran), so the package loads by its own path, without
# LD_LIBRARY_PATH, on a machine that has none of these installed. Only the
# component rlx_python goes into the wheel (with rlx/licenses/, the Debian
# copyright files of the bundled system libraries); the C package's install rules,
# if any, stay out of it.

# The library as it goes into the wheel: linked with its final RPATH (the
# wheel's build tree is used for nothing else).
set_target_properties(rlx_shared PROPERTIES BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "\$ORIGIN")
target_link_options(rlx_shared PRIVATE -Wl,--disable-new-dtags)

# Loaded by this one name (python/rlx/__init__.py), whatever soname the
# target has: a wheel cannot hold symlinks.
install(FILES $<TARGET_FILE:rlx_shared> DESTINATION rlx RENAME librlx.so COMPONENT rlx_python)

set(RLX_WHEEL_LIB_DIRS "")
if(RLX_WEBGPU)
  list(APPEND RLX_WHEEL_LIB_DIRS "${WGPU_DIR}/lib")
endif()
# Every library librlx.so needs, resolved as the loader would, copied under
# its NEEDED name (the file behind a symlink chain), except the C runtime
# and the loader, which every Linux has and which must not be bundled.
install(CODE "
  file(GET_RUNTIME_DEPENDENCIES
       LIBRARIES \"$<TARGET_FILE:rlx_shared>\"
       DIRECTORIES ${RLX_WHEEL_LIB_DIRS}
       RESOLVED_DEPENDENCIES_VAR rlx_deps
       UNRESOLVED_DEPENDENCIES_VAR rlx_missing
       PRE_EXCLUDE_REGEXES
         \"^(ld-linux|libc|libm|libdl|libpthread|librt|libgcc_s|libutil|libresolv|libstdc\\\\+\\\\+)[.-]\"
         \"^linux-vdso\")
  if(rlx_missing)
    message(FATAL_ERROR \"rlx wheel: librlx.so needs libraries that were not found: \${rlx_missing}\")
  endif()
  foreach(dep IN LISTS rlx_deps)
    get_filename_component(name \"\${dep}\" NAME)
    file(REAL_PATH \"\${dep}\" real)
    message(STATUS \"rlx wheel: bundling \${name} (\${real})\")
    file(COPY_FILE \"\${real}\" \"\${CMAKE_INSTALL_PREFIX}/rlx/\${name}\" ONLY_IF_DIFFERENT)
    # its licence terms travel with it: on Debian, the owning package's copyright file
    execute_process(COMMAND dpkg -S \"\${real}\" OUTPUT_VARIABLE owner RESULT_VARIABLE rc ERROR_QUIET)
    string(REGEX REPLACE \"[:].*\" \"\" owner \"\${owner}\")
    if(rc EQUAL 0 AND EXISTS \"/usr/share/doc/\${owner}/copyright\")
      file(MAKE_DIRECTORY \"\${CMAKE_INSTALL_PREFIX}/rlx/licenses\")
      file(COPY_FILE \"/usr/share/doc/\${owner}/copyright\"
           \"\${CMAKE_INSTALL_PREFIX}/rlx/licenses/\${name}.copyright\" ONLY_IF_DIFFERENT)
    endif()
  endforeach()
" COMPONENT rlx_python)
# rlx's own licence, and wgpu-native's terms (not a Debian package: scripts/setup.sh
# writes its notice beside it)
install(FILES LICENSE DESTINATION rlx/licenses RENAME rlx.LICENSE COMPONENT rlx_python)
if(RLX_WEBGPU)
  install(FILES "${WGPU_DIR}/NOTICE.wgpu-native" "${WGPU_DIR}/LICENSE.wgpu-py"
          DESTINATION rlx/licenses COMPONENT rlx_python)
endif()
