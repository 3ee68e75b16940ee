# SPDX-License-Identifier: MIT
#
# Runs one tb5-perf command for ctest and checks what it did:
#   cmake -DCMD=<tb5-perf> -DARGS=<;-list> [-DEXPECT=<status>] [-DROWS=<n>]
#         [-DCSV=1] [-DSIM_ENV=<options>] [-DROW_KEY=<key>] [-DMATCH=<regex>]
#         [-DNOMATCH=<regex>] [-DFAKE_ABI=<version> -DFAKE_ABI_LIB=<lib>]
#         -P check.cmake
# EXPECT: the exit status wanted (default 0). ROWS: with status 0, at least
# that many result rows in the JSON (or CSV with CSV=1) on stdout. SIM_ENV:
# run with TB5_SIM=<a fabric of its own>:<SIM_ENV>. ROW_KEY: the JSON's
# first row has that key. MATCH: stderr matches the regex (the message of a
# failure); NOMATCH: it does not. FAKE_ABI: run against a tb5 module of that
# ABI version: one link, tb5_0, whose node is a plain file in a tree of its
# own (TB5_SYSFS_CLASS, TB5_DEV_DIR), and FAKE_ABI_LIB (tests/support/
# fake_abi.c) preloaded to answer TB5_IOC_GET_VERSION for it.
if(NOT DEFINED EXPECT)
  set(EXPECT 0)
endif()
set(env_vars)
string(RANDOM LENGTH 10 ALPHABET 0123456789abcdef tag)
if(DEFINED SIM_ENV)
  list(APPEND env_vars "TB5_SIM=tb5perf-ctest-${tag}:${SIM_ENV}")
endif()
if(DEFINED FAKE_ABI)
  set(fake "/tmp/tb5perf-ctest-${tag}")
  file(MAKE_DIRECTORY "${fake}/class" "${fake}/dev")
  file(WRITE "${fake}/dev/tb5_0" "x")
  list(APPEND env_vars "TB5_SYSFS_CLASS=${fake}/class" "TB5_DEV_DIR=${fake}/dev"
       "LD_PRELOAD=${FAKE_ABI_LIB}" "TB5_FAKE_ABI=${FAKE_ABI}")
endif()
set(env_cmd)
if(env_vars)
  set(env_cmd ${CMAKE_COMMAND} -E env ${env_vars})
endif()
execute_process(COMMAND ${env_cmd} ${CMD} ${ARGS}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(DEFINED FAKE_ABI)
  file(REMOVE_RECURSE "${fake}")
endif()
message("${err}")
if(NOT status STREQUAL "${EXPECT}")
  message(FATAL_ERROR "tb5-perf ${ARGS}: exit status ${status}, wanted ${EXPECT}\n"
                      "stdout:\n${out}")
endif()
if(DEFINED MATCH AND NOT err MATCHES "${MATCH}")
  message(FATAL_ERROR "tb5-perf ${ARGS}: stderr does not match \"${MATCH}\"")
endif()
if(DEFINED NOMATCH AND err MATCHES "${NOMATCH}")
  message(FATAL_ERROR "tb5-perf ${ARGS}: stderr matches \"${NOMATCH}\"")
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
