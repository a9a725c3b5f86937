# rlx_doc_diff(OLD NEW VAR): sets VAR to the first 4000 characters of
# `diff -u OLD NEW` (empty where diff is missing), for the doc checks'
# failure messages (check_ops_doc.cmake, check_backend_ops_doc.cmake).
function(rlx_doc_diff old new var)
  set(shown "")
  find_program(DIFF diff)
  if(DIFF)
    execute_process(COMMAND "${DIFF}" -u "${old}" "${new}" OUTPUT_VARIABLE shown)
    string(LENGTH "${shown}" len)
    if(len GREATER 4000)
      string(SUBSTRING "${shown}" 0 4000 shown)
      string(APPEND shown "\n[...]\n")
    endif()
  endif()
  set(${var} "${shown}" PARENT_SCOPE)
endfunction()
