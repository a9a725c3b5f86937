# ctest ops_doc: docs/ops.md must equal `rlx ops --markdown` (tools/cli_ops.c).
# Usage: cmake -DRLX=path/to/rlx -DDOC=path/to/docs/ops.md -DOUT=build/ops.md
#              [-DREADME=path/to/README.md] -P check_ops_doc.cmake
# Writes the generated page to OUT; fails (showing the difference and the
# command that regenerates the page) when docs/ops.md differs from it, and
# when `rlx ops` itself fails (its note table disagrees with the WebGPU
# lowering tables). With README, also fails when README's op counts ("N ops
# of the default ONNX domain", "lowerings for M of the N ops") differ from
# the summary line of `rlx ops`.
include("${CMAKE_CURRENT_LIST_DIR}/doc_diff.cmake")
execute_process(COMMAND "${RLX}" ops --markdown
                OUTPUT_VARIABLE generated ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "'rlx ops --markdown' failed (exit ${rc}):\n${err}")
endif()
file(WRITE "${OUT}" "${generated}")
if(NOT EXISTS "${DOC}")
  message(FATAL_ERROR "${DOC} is missing: run 'build/rlx ops --markdown > docs/ops.md'")
endif()
file(READ "${DOC}" committed)
if(NOT generated STREQUAL committed)
  rlx_doc_diff("${DOC}" "${OUT}" shown)
  message(FATAL_ERROR "docs/ops.md is stale: it differs from 'rlx ops --markdown' (written to ${OUT}).\n"
                      "${shown}"
                      "Regenerate it with 'build/rlx ops --markdown > docs/ops.md' and commit it.")
endif()
message(STATUS "docs/ops.md matches 'rlx ops --markdown'")
if(README)
  execute_process(COMMAND "${RLX}" ops OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
  string(REGEX MATCH "([0-9]+) ops of the default domain: [0-9]+ with a CPU kernel, ([0-9]+) with a WebGPU lowering"
         summary "${listing}")
  if(NOT rc EQUAL 0 OR NOT summary)
    message(FATAL_ERROR "'rlx ops' printed no summary line (exit ${rc})")
  endif()
  set(n_ops "${CMAKE_MATCH_1}")
  set(n_gpu "${CMAKE_MATCH_2}")
  file(READ "${README}" readme)
  foreach(phrase "${n_ops} ops of the default ONNX domain" "lowerings for ${n_gpu} of the ${n_ops} ops")
    string(FIND "${readme}" "${phrase}" at)
    if(at LESS 0)
      message(FATAL_ERROR "README.md is stale: it lacks '${phrase}' ('rlx ops' counts ${n_ops} ops, "
                          "${n_gpu} with a WebGPU lowering); update its status table")
    endif()
  endforeach()
  message(STATUS "README.md's op counts match 'rlx ops' (${n_ops} ops, ${n_gpu} with a WebGPU lowering)")
endif()
