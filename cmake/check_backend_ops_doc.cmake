# ctest backend_ops_doc: the case table of docs/backend-ops.md (from its
# "| op | family | quick |" header through its "| **total** |" row) must
# equal `test_backend_ops --list --count` (tests/backend_ops/), so that the
# page's counts and tolerances are the harness's.
# Usage: cmake -DBO=path/to/test_backend_ops -DDOC=path/to/docs/backend-ops.md
#              -DOUT=build/backend-ops-table.md -P check_backend_ops_doc.cmake
# Writes the generated table to OUT; fails, showing the difference and how
# to update the page, when they differ or when the harness's listing fails.
include("${CMAKE_CURRENT_LIST_DIR}/doc_diff.cmake")
execute_process(COMMAND "${BO}" --list --count
                OUTPUT_VARIABLE generated ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "'test_backend_ops --list --count' failed (exit ${rc}):\n${err}")
endif()
file(WRITE "${OUT}" "${generated}")
file(READ "${DOC}" doc)
string(FIND "${doc}" "| op | family | quick |" start)
string(FIND "${doc}" "| **total** |" total)
if(start EQUAL -1 OR total EQUAL -1 OR total LESS start)
  message(FATAL_ERROR "${DOC} has no case table (a '| op | family | quick |' header and a '| **total** |' row)")
endif()
string(SUBSTRING "${doc}" ${total} -1 tail)
string(FIND "${tail}" "\n" eol)
math(EXPR len "${total} - ${start} + ${eol} + 1")
string(SUBSTRING "${doc}" ${start} ${len} committed)
if(NOT generated STREQUAL committed)
  file(WRITE "${OUT}.committed" "${committed}")
  rlx_doc_diff("${OUT}.committed" "${OUT}" shown)
  message(FATAL_ERROR "the case table of docs/backend-ops.md is stale: it differs from "
                      "'test_backend_ops --list --count' (written to ${OUT}).\n${shown}"
                      "Replace the table with that output and commit it.")
endif()
message(STATUS "docs/backend-ops.md's case table matches 'test_backend_ops --list --count'")
