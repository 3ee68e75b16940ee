# SPDX-License-Identifier: MIT
#
# CPACK_POST_BUILD_SCRIPTS of the DEB build: CPack gives every package with
# a shared object in /usr/lib a postinst and a postrm that call ldconfig.
# libtb5-1 has the ldconfig trigger instead (its triggers file), and the
# plugin has no soname for ldconfig to link: both lose those two scripts.
foreach(_deb IN LISTS CPACK_PACKAGE_FILES)
  get_filename_component(_name ${_deb} NAME)
  if(NOT _name MATCHES "^(libtb5-1|tb5-nccl-plugin)_.*\\.deb$")
    continue()
  endif()
  set(_tmp ${_deb}.d)
  file(REMOVE_RECURSE ${_tmp})
  execute_process(COMMAND dpkg-deb -R ${_deb} ${_tmp} COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE ${_tmp}/DEBIAN/postinst ${_tmp}/DEBIAN/postrm)
  execute_process(COMMAND dpkg-deb --root-owner-group -Zxz -b ${_tmp} ${_deb}
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE ${_tmp})
endforeach()
