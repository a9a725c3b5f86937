# ctest ops_doc: docs/ops.md must equal `rlx ops --markdown` (tools/cli_ops.c).
# Usage: cmake -DRLX=path/to/rlx -DDOC=path/to/docs/ops.md -DOUT=build/ops.md
#              -P check_ops_doc.cmake
# Writes the generated page to OUT; fails (showing the difference and the
# command that regenerates the page) when docs/ops.md differs from it, and
# when `rlx ops` itself fails (its note table disagrees with the WebGPU
# lowering tables).
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
  set(shown "")
  find_program(DIFF diff)
  if(DIFF)
    execute_process(COMMAND "${DIFF}" -u "${DOC}" "${OUT}" OUTPUT_VARIABLE shown)
    string(LENGTH "${shown}" len)
    if(len GREATER 4000)
      string(SUBSTRING "${shown}" 0 4000 shown)
      string(APPEND shown "\n[...]\n")
    endif()
  endif()
  message(FATAL_ERROR "docs/ops.md is stale: it differs from 'rlx ops --markdown' (written to ${OUT}).\n"
                      "${shown}"
                      "Regenerate it with 'build/rlx ops --markdown > docs/ops.md' and commit it.")
endif()
message(STATUS "docs/ops.md matches 'rlx ops --markdown'")
