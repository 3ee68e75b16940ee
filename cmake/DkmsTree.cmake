# SPDX-License-Identifier: MIT
#
# The DKMS source tree of tb5.ko, staged from dkms/ at
# <build>/dkms/tb5-<version>/ by the target `dkms-tree`: Kbuild, Makefile,
# LICENSE, the module's sources and headers (core/, os/, include/ too), the
# dkms.conf generated from dkms/dkms.conf.in and a VERSION file. This is the
# tree that `dkms add` takes, and what the tb5-dkms package installs in
# /usr/src/tb5-<version>/.

set(TB5_DKMS_SOURCE_DIR ${PROJECT_SOURCE_DIR}/dkms)
set(TB5_DKMS_TREE ${PROJECT_BINARY_DIR}/dkms/tb5-${PROJECT_VERSION})
set(_tb5_dkms_gen ${PROJECT_BINARY_DIR}/dkms/generated)

configure_file(${TB5_DKMS_SOURCE_DIR}/dkms.conf.in ${_tb5_dkms_gen}/dkms.conf
               @ONLY)
file(CONFIGURE OUTPUT ${_tb5_dkms_gen}/VERSION CONTENT "${PROJECT_VERSION}\n")

# CONFIGURE_DEPENDS: a source added to dkms/ re-runs CMake, so it is staged
# without a manual reconfigure. Kbuild's products (tb5.mod.c from a build in
# dkms/ itself) are not sources.
file(GLOB_RECURSE _tb5_dkms_files CONFIGURE_DEPENDS
     RELATIVE ${TB5_DKMS_SOURCE_DIR}
     ${TB5_DKMS_SOURCE_DIR}/*.c ${TB5_DKMS_SOURCE_DIR}/*.h)
list(FILTER _tb5_dkms_files EXCLUDE REGEX "\\.mod\\.c$")
list(APPEND _tb5_dkms_files Kbuild Makefile LICENSE)
list(SORT _tb5_dkms_files)

# The list is handed to the staging script in a file: it may be long, and
# writing it only when it changes keeps the stage step up to date.
string(REPLACE ";" "\n" _tb5_dkms_manifest "${_tb5_dkms_files}")
file(CONFIGURE OUTPUT ${_tb5_dkms_gen}/sources.txt
     CONTENT "${_tb5_dkms_manifest}\n")

list(TRANSFORM _tb5_dkms_files PREPEND ${TB5_DKMS_SOURCE_DIR}/
     OUTPUT_VARIABLE _tb5_dkms_deps)
set(_tb5_dkms_stamp ${PROJECT_BINARY_DIR}/dkms/tb5-${PROJECT_VERSION}.stamp)
add_custom_command(
  OUTPUT ${_tb5_dkms_stamp}
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${TB5_DKMS_SOURCE_DIR}
          -DTREE=${TB5_DKMS_TREE}
          -DMANIFEST=${_tb5_dkms_gen}/sources.txt
          -DGENERATED=${_tb5_dkms_gen}
          -P ${CMAKE_CURRENT_LIST_DIR}/DkmsTreeStage.cmake
  COMMAND ${CMAKE_COMMAND} -E touch ${_tb5_dkms_stamp}
  DEPENDS ${_tb5_dkms_deps}
          ${_tb5_dkms_gen}/dkms.conf ${_tb5_dkms_gen}/VERSION
          ${_tb5_dkms_gen}/sources.txt
          ${CMAKE_CURRENT_LIST_DIR}/DkmsTreeStage.cmake
  COMMENT "Staging the DKMS source tree dkms/tb5-${PROJECT_VERSION}"
  VERBATIM)
add_custom_target(dkms-tree DEPENDS ${_tb5_dkms_stamp})
