# SPDX-License-Identifier: MIT
#
# cmake -DSOURCE_DIR=... -DTREE=... -DMANIFEST=... -DGENERATED=... -P this:
# stages the DKMS source tree (see DkmsTree.cmake). The tree is rebuilt from
# scratch so that a file removed from dkms/ leaves it too.

foreach(_var SOURCE_DIR TREE MANIFEST GENERATED)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "DkmsTreeStage.cmake: ${_var} is not set")
  endif()
endforeach()

file(STRINGS ${MANIFEST} _files)
file(REMOVE_RECURSE ${TREE})
foreach(_file IN LISTS _files)
  get_filename_component(_dir ${_file} DIRECTORY)
  file(COPY ${SOURCE_DIR}/${_file} DESTINATION ${TREE}/${_dir})
endforeach()
file(COPY ${GENERATED}/dkms.conf ${GENERATED}/VERSION DESTINATION ${TREE})
