# SPDX-License-Identifier: MIT
#
# Runs one tb5-perf command for ctest and checks what it did:
#   cmake -DCMD=<tb5-perf> -DARGS=<;-list> [-DEXPECT=<status>] [-DROWS=<n>]
#         [-DCSV=1] [-DSIM_ENV=<options>] [-DROW_KEY=<key>] [-DMATCH=<regex>]
#         -P check.cmake
# EXPECT: the exit status wanted (default 0). ROWS: with status 0, at least
# that many result rows in the JSON (or CSV with CSV=1) on stdout. SIM_ENV:
# run with TB5_SIM=<a fabric of its own>:<SIM_ENV>. ROW_KEY: the JSON's
# first row has that key. MATCH: stderr matches the regex (the message of a
# failure).
if(NOT DEFINED EXPECT)
  set(EXPECT 0)
endif()
set(env_cmd)
if(DEFINED SIM_ENV)
  string(RANDOM LENGTH 10 ALPHABET 0123456789abcdef tag)
  set(env_cmd ${CMAKE_COMMAND} -E env "TB5_SIM=tb5perf-ctest-${tag}:${SIM_ENV}")
endif()
execute_process(COMMAND ${env_cmd} ${CMD} ${ARGS}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${err}")
if(NOT status STREQUAL "${EXPECT}")
  message(FATAL_ERROR "tb5-perf ${ARGS}: exit status ${status}, wanted ${EXPECT}\n"
                      "stdout:\n${out}")
endif()
if(DEFINED MATCH AND NOT err MATCHES "${MATCH}")
  message(FATAL_ERROR "tb5-perf ${ARGS}: stderr does not match \"${MATCH}\"")
endif()
if(NOT EXPECT EQUAL 0 OR NOT DEFINED ROWS)
  return()
endif()
if(CSV)
  string(REGEX MATCHALL "\n[a-z-]+,[0-9]+," lines "${out}")
  list(LENGTH lines n)
else()
  string(JSON n ERROR_VARIABLE json_err LENGTH "${out}" rows)
  if(json_err)
    message(FATAL_ERROR "tb5-perf ${ARGS}: no JSON rows: ${json_err}\n${out}")
  endif()
endif()
if(DEFINED ROW_KEY)
  string(JSON v ERROR_VARIABLE key_err GET "${out}" rows 0 ${ROW_KEY})
  if(key_err)
    message(FATAL_ERROR "tb5-perf ${ARGS}: no ${ROW_KEY} in the first row: "
                        "${key_err}\n${out}")
  endif()
  message("tb5-perf ${ARGS}: ${ROW_KEY} ${v}")
endif()
if(n LESS ROWS)
  message(FATAL_ERROR "tb5-perf ${ARGS}: ${n} rows, wanted at least ${ROWS}\n${out}")
endif()
message("tb5-perf ${ARGS}: exit ${status}, ${n} rows")
