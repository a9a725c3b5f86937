# rlx — install rules (included at the end of CMakeLists.txt).
#
# cmake --install BUILD --prefix PREFIX lays out (Linux, ELF):
#   include/rlx/*.h                     the public headers (version.h generated)
#   lib/librlx.so.0.1.0, .so.0, .so      the shared library, soname librlx.so.MAJOR
#   lib/librlx.a                        the static library (onnx protobuf code inside)
#   lib/libwgpu_native.so               the WebGPU implementation librlx needs, found
#                                       through librlx's RUNPATH $ORIGIN
#   lib/cmake/rlx/rlxConfig.cmake,      find_package(rlx): rlx::rlx (shared) and
#     rlxConfigVersion.cmake            rlx::rlx_static
#   lib/pkgconfig/rlx.pc                pkg-config rlx (--static for librlx.a)
#   bin/rlx                             the command line (RUNPATH $ORIGIN/../lib)
# The package is relocatable: the config and rlx.pc find the prefix from
# their own place, so --prefix at install time works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(rlx_shared PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  INSTALL_RPATH "$ORIGIN")
set_target_properties(rlx_cli PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(DIRECTORY include/rlx DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/include/rlx/version.h" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rlx)
install(TARGETS rlx_shared rlx
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS rlx_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(RLX_WEBGPU)
  install(FILES "${WGPU_DIR}/lib/libwgpu_native.so" DESTINATION ${CMAKE_INSTALL_LIBDIR})
  # its licence terms (scripts/setup.sh writes them beside it)
  install(FILES "${WGPU_DIR}/NOTICE.wgpu-native" "${WGPU_DIR}/LICENSE.wgpu-py"
          DESTINATION ${CMAKE_INSTALL_DOCDIR}/licenses)
endif()
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

# what a static link needs besides librlx.a (rlx.pc and rlx::rlx_static)
set(RLX_PC_LIBS_PRIVATE "-lm -lpthread")
foreach(_l ${CMAKE_DL_LIBS}) # dladdr / dlsym (src/base/platform_dl.c)
  set(RLX_PC_LIBS_PRIVATE "${RLX_PC_LIBS_PRIVATE} -l${_l}")
endforeach()
if(RLX_WEBGPU)
  set(RLX_PC_LIBS_PRIVATE "-lwgpu_native ${RLX_PC_LIBS_PRIVATE}")
endif()
set(RLX_HAVE_WEBGPU_FLAG ${RLX_WEBGPU})

# the prefix seen from the two files' folders (relocatable)
set(RLX_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/rlx")
set(RLX_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
file(RELATIVE_PATH RLX_CMAKE_TO_PREFIX "/p/${RLX_CMAKE_DIR}" "/p")
file(RELATIVE_PATH RLX_PC_TO_PREFIX "/p/${RLX_PC_DIR}" "/p")

configure_file(cmake/rlxConfig.cmake.in "${CMAKE_CURRENT_BINARY_DIR}/rlxConfig.cmake" @ONLY)
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/rlxConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
configure_file(cmake/rlx.pc.in "${CMAKE_CURRENT_BINARY_DIR}/rlx.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/rlxConfig.cmake" "${CMAKE_CURRENT_BINARY_DIR}/rlxConfigVersion.cmake"
  DESTINATION ${RLX_CMAKE_DIR})
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/rlx.pc" DESTINATION ${RLX_PC_DIR})

# the installed package, built against from outside the tree
add_test(NAME test_install
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_install.sh ${CMAKE_CURRENT_BINARY_DIR}
          ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/.venv/bin/python)
