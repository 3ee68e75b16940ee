# SPDX-License-Identifier: MIT
#
# The deb and rpm packages of tb5, built by CPack from the install
# components, all with the one version number of project(). See
# packaging/README.md for the packages and docs/install.md for their use.
#
#   cmake -S . -B build-pkg -DTB5_PACKAGE=DEB -DCMAKE_INSTALL_PREFIX=/usr \
#         -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
#   cmake --build build-pkg && (cd build-pkg && cpack)
#
# (ci/package.sh does this for both formats, with the distribution's
# hardening flags, and lints the result.) TB5_PACKAGE=RPM builds rpms; the
# rpm tree wants -DCMAKE_INSTALL_LIBDIR=lib64. Without TB5_PACKAGE nothing
# here changes the build: the package-only install rules (DKMS tree, udev
# rule, modprobe.d, systemd unit, package docs) are EXCLUDE_FROM_ALL, so a
# plain `cmake --install` never writes to /etc or /usr/src.
#
# Components and packages (rpm names where they differ):
#   dkms         tb5-dkms           /usr/src/tb5-<v>, udev rule, modprobe.d,
#                                   group tb5, DKMS in the maintainer scripts
#   runtime      libtb5-1 (tb5-libs)
#   development  libtb5-dev (tb5-devel)
#   plugin       tb5-nccl-plugin    libnccl-net-tb5.so, librccl-net-tb5.so
#   tools        tb5-tools          tb5-selftest, tb5-perf
#   exporter     tb5-exporter       tb5-exporter and its systemd unit
#   doc          tb5-doc            docs/, README, CHANGELOG
#   tests        tb5-tests          tests/kernel's programs and scripts
#   minimal      tb5-nccl-minimal   dkms + library + plugin + tools
#   server       tb5-nccl-server    minimal + tools + exporter
#   full         tb5-nccl-full      server + dev + doc + tests

set(TB5_PACKAGE "" CACHE STRING "Package format for cpack: DEB, RPM or empty (none)")
set(TB5_PACKAGE_RELEASE 1 CACHE STRING
    "Package release (Debian revision, rpm Release) of this build")
if(NOT TB5_PACKAGE)
  return()
endif()
if(NOT TB5_PACKAGE MATCHES "^(DEB|RPM)$")
  message(FATAL_ERROR "TB5_PACKAGE must be DEB or RPM, not '${TB5_PACKAGE}'")
endif()
if(TB5_STATIC_TOOLS OR TB5_SANITIZE)
  message(FATAL_ERROR "TB5_PACKAGE does not go with TB5_STATIC_TOOLS or TB5_SANITIZE")
endif()
include(GNUInstallDirs)

set(_pkg_src ${PROJECT_SOURCE_DIR}/packaging)
set(_pkg_gen ${PROJECT_BINARY_DIR}/packaging)
set(TB5_MAINTAINER "The tb5 authors <tb5@tb5.invalid>")
set(TB5_HOMEPAGE "https://github.com/tb5-project/tb5")
set(TB5_DEB_VERSION "${PROJECT_VERSION}-${TB5_PACKAGE_RELEASE}")
set(TB5_RPM_VERSION "${PROJECT_VERSION}-${TB5_PACKAGE_RELEASE}")
string(TIMESTAMP TB5_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)

# Component -> package names (deb; rpm where it differs) and architecture
# independence.
set(TB5_PKG_COMPONENTS dkms runtime development plugin tools exporter doc tests
    minimal server full)
set(_deb_dkms tb5-dkms)
set(_deb_runtime libtb5-1)
set(_deb_development libtb5-dev)
set(_deb_plugin tb5-nccl-plugin)
set(_deb_tools tb5-tools)
set(_deb_exporter tb5-exporter)
set(_deb_doc tb5-doc)
set(_deb_tests tb5-tests)
set(_deb_minimal tb5-nccl-minimal)
set(_deb_server tb5-nccl-server)
set(_deb_full tb5-nccl-full)
foreach(_c IN LISTS TB5_PKG_COMPONENTS)
  set(_rpm_${_c} ${_deb_${_c}})
endforeach()
set(_rpm_runtime tb5-libs)
set(_rpm_development tb5-devel)
set(_noarch dkms doc minimal server full)
if(TB5_PACKAGE STREQUAL "DEB")
  foreach(_c IN LISTS TB5_PKG_COMPONENTS)
    set(_pkg_${_c} ${_deb_${_c}})
  endforeach()
else()
  foreach(_c IN LISTS TB5_PKG_COMPONENTS)
    set(_pkg_${_c} ${_rpm_${_c}})
  endforeach()
endif()

# ---- What each component installs beyond the targets' own rules ----------

# The DKMS source tree, staged by cmake/DkmsTree.cmake, with every build.
add_custom_target(package-dkms-tree ALL DEPENDS dkms-tree)
install(DIRECTORY ${TB5_DKMS_TREE}/ DESTINATION /usr/src/tb5-${PROJECT_VERSION}
        COMPONENT dkms EXCLUDE_FROM_ALL
        FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
                              GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
install(FILES ${PROJECT_SOURCE_DIR}/udev/60-tb5.rules
        DESTINATION /usr/lib/udev/rules.d COMPONENT dkms EXCLUDE_FROM_ALL)
install(FILES ${_pkg_src}/modprobe.d/tb5.conf
        DESTINATION /etc/modprobe.d COMPONENT dkms EXCLUDE_FROM_ALL)

install(FILES ${_pkg_src}/systemd/tb5-exporter.service
        DESTINATION /usr/lib/systemd/system COMPONENT exporter EXCLUDE_FROM_ALL)

# The documentation package: the docs as they are in the tree.
file(GLOB _tb5_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${_tb5_docs} ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_pkg_doc}
        COMPONENT doc EXCLUDE_FROM_ALL)

# The installed test suite: tests/kernel's programs (linked dynamically
# here, unlike the VM's static ones) and scripts, in
# /usr/libexec/tb5/tests. They load and unload tb5: for a test host, as root.
set(_tb5_ktests ${PROJECT_BINARY_DIR}/tests-installed)
set(_tb5_ktest_progs tb5k-info tb5k-xfer tb5k-unplug tb5k-kill tb5k-memlock
    tb5k-dmabuf tb5k-mmap-race tb5k-fuzz tb5k-hold)
set(_tb5_ktest_scripts vm-tests.sh vm-tests-tb.sh vm-tests-tools.sh)
list(TRANSFORM _tb5_ktest_progs PREPEND ${_tb5_ktests}/ OUTPUT_VARIABLE _tb5_ktest_out)
file(GLOB _tb5_ktest_src CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/kernel/*.c
     ${PROJECT_SOURCE_DIR}/tests/kernel/*.h ${PROJECT_SOURCE_DIR}/tests/kernel/*.sh)
# The Makefile adds its own CFLAGS and links statically: hand it the
# package flags through CC, and LDFLAGS without -static.
separate_arguments(_tb5_cflags UNIX_COMMAND "${CMAKE_C_FLAGS}")
separate_arguments(_tb5_ldflags UNIX_COMMAND "${CMAKE_EXE_LINKER_FLAGS}")
string(JOIN " " _tb5_cflags ${_tb5_cflags})
string(JOIN " " _tb5_ldflags ${_tb5_ldflags})
add_custom_command(
  OUTPUT ${_tb5_ktest_out}
  COMMAND make -s -B -C ${PROJECT_SOURCE_DIR}/tests/kernel OUT=${_tb5_ktests}
          "CC=${CMAKE_C_COMPILER} ${_tb5_cflags}"
          "LDFLAGS=-pthread -s ${_tb5_ldflags}"
  DEPENDS ${_tb5_ktest_src} ${PROJECT_SOURCE_DIR}/tests/kernel/Makefile
          ${PROJECT_SOURCE_DIR}/dkms/include/uapi/tb5_uapi.h
  COMMENT "Building tests/kernel for the tb5-tests package"
  VERBATIM)
add_custom_target(package-test-suite ALL DEPENDS ${_tb5_ktest_out})
install(PROGRAMS ${_tb5_ktest_out}
        DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tb5/tests COMPONENT tests EXCLUDE_FROM_ALL)
list(TRANSFORM _tb5_ktest_scripts PREPEND ${PROJECT_SOURCE_DIR}/tests/kernel/)
install(PROGRAMS ${_tb5_ktest_scripts}
        DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/tb5/tests COMPONENT tests EXCLUDE_FROM_ALL)

# ---- Per-package documentation: copyright, changelog, lintian overrides ---

configure_file(${_pkg_src}/debian/changelog.in ${_pkg_gen}/changelog @ONLY)
execute_process(COMMAND gzip -9nc ${_pkg_gen}/changelog
                OUTPUT_FILE ${_pkg_gen}/changelog.Debian.gz COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/CHANGELOG.md
                OUTPUT_FILE ${_pkg_gen}/changelog.gz COMMAND_ERROR_IS_FATAL ANY)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${_pkg_src}/debian/changelog.in)

foreach(_c IN LISTS TB5_PKG_COMPONENTS)
  set(_p ${_pkg_${_c}})
  if(TB5_PACKAGE STREQUAL "DEB")
    install(FILES ${_pkg_src}/debian/copyright ${_pkg_gen}/changelog.Debian.gz
            DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_p} COMPONENT ${_c} EXCLUDE_FROM_ALL)
    if(EXISTS ${_pkg_src}/lintian/${_p})
      install(FILES ${_pkg_src}/lintian/${_p}
              DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
              COMPONENT ${_c} EXCLUDE_FROM_ALL)
    endif()
  else()
    install(FILES ${_pkg_src}/debian/copyright
            DESTINATION ${CMAKE_INSTALL_DATADIR}/licenses/${_p} COMPONENT ${_c} EXCLUDE_FROM_ALL)
  endif()
endforeach()
if(TB5_PACKAGE STREQUAL "DEB")
  install(FILES ${_pkg_gen}/changelog.gz DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_pkg_doc}
          COMPONENT doc EXCLUDE_FROM_ALL)
else()
  install(FILES ${PROJECT_SOURCE_DIR}/CHANGELOG.md
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_pkg_doc} COMPONENT doc EXCLUDE_FROM_ALL)
endif()

# ---- Maintainer scripts of tb5-dkms (one shell library, two formats) -------

configure_file(${_pkg_src}/scripts/dkms-common.sh.in ${_pkg_gen}/dkms-common.sh @ONLY)
file(READ ${_pkg_gen}/dkms-common.sh TB5_DKMS_COMMON)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${_pkg_src}/scripts/dkms-common.sh.in)
function(tb5_maint_script in out)
  set(TB5_DKMS_COMMON "${TB5_DKMS_COMMON}")
  configure_file(${in} ${out} @ONLY)
  file(CHMOD ${out} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
       GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
endfunction()

# Control files are written below at every configure; none is left over.
foreach(_c IN LISTS TB5_PKG_COMPONENTS)
  file(REMOVE_RECURSE ${_pkg_gen}/${_deb_${_c}})
endforeach()

# The symbols file of libtb5-1: every name in the version script's nodes,
# each since this version (a later version adds lines, never changes them).
file(STRINGS ${PROJECT_SOURCE_DIR}/src/lib/libtb5.map _map)
set(_node "")
set(_symbols "libtb5.so.1 ${_deb_runtime} #MINVER#\n* Build-Depends-Package: ${_deb_development}\n")
foreach(_line IN LISTS _map)
  if(_line MATCHES "^(TB5_[0-9A-Z_.]+) *\\{")
    set(_node ${CMAKE_MATCH_1})
    string(APPEND _symbols " ${_node}@${_node} ${PROJECT_VERSION}\n")
  elseif(_node AND _line MATCHES "^[ \t]+(tb5_[a-z0-9_]+);")
    string(APPEND _symbols " ${CMAKE_MATCH_1}@${_node} ${PROJECT_VERSION}\n")
  endif()
endforeach()
file(WRITE ${_pkg_gen}/libtb5-1/symbols "${_symbols}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/src/lib/libtb5.map)

# ---- CPack ------------------------------------------------------------------

set(CPACK_PACKAGE_NAME tb5)
set(CPACK_PACKAGE_VENDOR "The tb5 authors")
set(CPACK_PACKAGE_CONTACT "${TB5_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_HOMEPAGE_URL ${TB5_HOMEPAGE})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
# Absolute destinations (/etc, /usr/src, /usr/lib/udev) go into the
# package's staging tree, never onto the build host.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL ${TB5_PKG_COMPONENTS})

set(_desc_dkms "tb5 kernel module (DKMS source)
The tb5 kernel module, tb5.ko, as source that DKMS builds and installs for
the running kernel and for every kernel installed later. It turns a
Thunderbolt 5 / USB4 host-to-host cable into a transport for GPU
collectives. Also the udev rule that gives /dev/tb5_* group tb5 and mode
0660, the system group tb5, and /etc/modprobe.d/tb5.conf with the module's
default options.")
set(_desc_runtime "tb5 user-space library
libtb5 opens the links of the tb5 kernel module (or of its user-space
simulator) and moves messages over them: endpoints, registered memory,
receiver-driven sends and receives, completions. This package holds the
shared library.")
set(_desc_development "tb5 user-space library (development files)
The C header, the pkg-config file and the CMake package configuration for
building programs against libtb5, and the module's uAPI header.")
set(_desc_plugin "tb5 network plugin for NCCL and RCCL
libnccl-net-tb5.so, the NCCL ext-net plugin over libtb5, and
librccl-net-tb5.so for RCCL, on the default library path: NCCL_NET_PLUGIN=tb5
selects it (NCCL_NET=TB5 forbids a silent fallback to sockets). Works in a
container that has only this package and libtb5.")
set(_desc_tools "tb5 test tools: tb5-selftest and tb5-perf
tb5-selftest checks that a host is ready to run NCCL over tb5 (module, ABI,
parameters, device nodes and permissions, links, a data round trip, the
plugin); tb5-perf measures bandwidth and latency over a link.")
set(_desc_exporter "tb5 metrics exporter for Prometheus
tb5-exporter serves the links' frame, byte and error counters and the NCCL
plugin's live per-link counters at http://HOST:9435/metrics in the
Prometheus text format. A systemd unit, tb5-exporter.service, runs it.")
set(_desc_doc "tb5 documentation
The tb5 guides: architecture, installation, the kernel module, libtb5,
the simulator, the tools, hardware bring-up and performance.")
set(_desc_tests "tb5 kernel module test suite
The programs and scripts that test tb5.ko through its uAPI: transfers of
every size verified byte by byte, unplug, killed processes, memory
accounting, dma-buf import, an ioctl fuzzer. For test hosts: they load and
unload the module and need root.")
set(_desc_minimal "tb5 for NCCL: minimal installation
Everything a node needs to run NCCL over Thunderbolt 5 cables: the kernel
module (DKMS), libtb5, the NCCL/RCCL plugin and tb5-selftest.")
set(_desc_server "tb5 for NCCL: server installation
The minimal installation plus tb5-perf and the Prometheus metrics exporter
with its systemd unit.")
set(_desc_full "tb5 for NCCL: full installation
The server installation plus the development files, the documentation and
the kernel module's test suite.")

# Dependencies between tb5's own packages: exact versions.
set(_dep_dkms "dkms")
set(_dep_development "@runtime")
set(_dep_plugin "@runtime")
set(_dep_tools "@runtime")
set(_dep_exporter "@runtime")
set(_dep_tests "@tools")
set(_dep_minimal "@dkms;@runtime;@plugin;@tools")
set(_dep_server "@minimal;@tools;@exporter")
set(_dep_full "@server;@development;@doc;@tests")

if(TB5_PACKAGE STREQUAL "DEB")
  set(CPACK_GENERATOR DEB)
  set(CPACK_DEB_COMPONENT_INSTALL ON)
  set(CPACK_DEBIAN_PACKAGE_RELEASE ${TB5_PACKAGE_RELEASE})
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${TB5_MAINTAINER}")
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE ${TB5_HOMEPAGE})
  set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
  set(CPACK_DEBIAN_PACKAGE_SOURCE tb5)
  set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
  set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/src/lib)
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

  foreach(_c IN LISTS TB5_PKG_COMPONENTS)
    string(TOUPPER ${_c} _C)
    set(CPACK_DEBIAN_${_C}_PACKAGE_NAME ${_deb_${_c}})
    set(CPACK_DEBIAN_${_C}_DESCRIPTION "${_desc_${_c}}")
    set(CPACK_COMPONENT_${_C}_DESCRIPTION "${_desc_${_c}}")
    set(_deps "")
    foreach(_d IN LISTS _dep_${_c})
      if(_d MATCHES "^@(.*)")
        list(APPEND _deps "${_deb_${CMAKE_MATCH_1}} (= ${TB5_DEB_VERSION})")
      else()
        list(APPEND _deps "${_d}")
      endif()
    endforeach()
    list(JOIN _deps ", " _deps)
    set(CPACK_DEBIAN_${_C}_PACKAGE_DEPENDS "${_deps}")
    if(_c IN_LIST _noarch)
      set(CPACK_DEBIAN_${_C}_PACKAGE_ARCHITECTURE all)
    endif()
  endforeach()
  set(CPACK_DEBIAN_DKMS_PACKAGE_SECTION kernel)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
  set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
  set(CPACK_DEBIAN_PLUGIN_PACKAGE_SECTION libs)
  set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
  set(CPACK_DEBIAN_EXPORTER_PACKAGE_SECTION net)
  set(CPACK_DEBIAN_DOC_PACKAGE_SECTION doc)
  set(CPACK_DEBIAN_TESTS_PACKAGE_SECTION utils)
  foreach(_C MINIMAL SERVER FULL)
    set(CPACK_DEBIAN_${_C}_PACKAGE_SECTION metapackages)
  endforeach()
  set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "tb5-dkms, tb5-nccl-plugin")
  # tb5-perf --plot draws with gnuplot.
  set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "gnuplot-nox | gnuplot")
  set(CPACK_DEBIAN_TESTS_PACKAGE_SUGGESTS "tb5-dkms")
  set(CPACK_DEBIAN_EXPORTER_PACKAGE_SUGGESTS "tb5-dkms, prometheus")
  set(CPACK_DEBIAN_DKMS_PACKAGE_SUGGESTS "tb5-tools")
  # DKMS signs tb5.ko with a key it makes with openssl (its MOK, for UEFI
  # Secure Boot): without it the module is built unsigned.
  set(CPACK_DEBIAN_DKMS_PACKAGE_RECOMMENDS "openssl")

  # Control files. tb5-dkms: the DKMS scripts and the conffile; libtb5-1:
  # the ldconfig trigger and the symbols file (shlibs comes from CPack).
  foreach(_s postinst prerm postrm)
    tb5_maint_script(${_pkg_src}/debian/${_s}.in ${_pkg_gen}/tb5-dkms/${_s})
  endforeach()
  file(WRITE ${_pkg_gen}/tb5-dkms/conffiles "/etc/modprobe.d/tb5.conf\n")
  # tb5-exporter: its unit enabled on install and started where systemd
  # runs, stopped on remove, forgotten on purge: the scripts debhelper's
  # dh_installsystemd writes, made by debhelper itself (the source package
  # runs the same tool: one source for both builds).
  execute_process(
    COMMAND sh ${_pkg_src}/debian/dh-exporter-scripts.sh ${_pkg_gen}/tb5-exporter
            ${_pkg_src}/systemd/tb5-exporter.service
    RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_QUIET)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "tb5-exporter's maintainer scripts (dh_installsystemd): ${_err}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${_pkg_src}/debian/dh-exporter-scripts.sh ${_pkg_src}/systemd/tb5-exporter.service)
  file(WRITE ${_pkg_gen}/libtb5-1/triggers "activate-noawait ldconfig\n")
  # CPack gives packages with libraries maintainer scripts that run
  # ldconfig; the trigger above replaces them (and the plugin needs none).
  set(CPACK_POST_BUILD_SCRIPTS ${_pkg_src}/debian/drop-ldconfig-scripts.cmake)
  foreach(_c IN LISTS TB5_PKG_COMPONENTS)
    string(TOUPPER ${_c} _C)
    set(_extra "")
    foreach(_f IN ITEMS conffiles triggers symbols postinst prerm postrm)
      if(EXISTS ${_pkg_gen}/${_deb_${_c}}/${_f})
        list(APPEND _extra ${_pkg_gen}/${_deb_${_c}}/${_f})
      endif()
    endforeach()
    set(CPACK_DEBIAN_${_C}_PACKAGE_CONTROL_EXTRA "${_extra}")
  endforeach()
else()
  set(CPACK_GENERATOR RPM)
  set(CPACK_RPM_COMPONENT_INSTALL ON)
  set(CPACK_RPM_PACKAGE_RELEASE ${TB5_PACKAGE_RELEASE})
  set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
  set(CPACK_RPM_PACKAGE_LICENSE "MIT")
  set(CPACK_RPM_PACKAGE_URL ${TB5_HOMEPAGE})
  set(CPACK_RPM_PACKAGE_GROUP "System/Kernel")
  # No /usr/lib/.build-id links: they would make the packages of two
  # releases conflict, and rpmlint counts them as unversioned files.
  set(CPACK_RPM_SPEC_MORE_DEFINE "%define packager ${TB5_MAINTAINER}\n%define _build_id_links none")
  set(CPACK_RPM_PACKAGE_AUTOREQPROV ON)
  set(CPACK_RPM_COMPRESSION_TYPE xz)
  set(CPACK_RPM_DEBUGINFO_PACKAGE OFF)
  # Directories other packages own (filesystem, systemd, udev, pkgconfig).
  set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
      /usr/src /etc/modprobe.d /usr/lib/udev /usr/lib/udev/rules.d /usr/lib/systemd
      /usr/lib/systemd/system /usr/${CMAKE_INSTALL_LIBDIR}/pkgconfig
      /usr/${CMAKE_INSTALL_LIBDIR}/cmake /usr/share/doc /usr/share/licenses /usr/libexec
      /usr/share/man /usr/share/man/man1 /usr/share/man/man4 /usr/share/man/man8)
  foreach(_c IN LISTS TB5_PKG_COMPONENTS)
    string(TOUPPER ${_c} _C)
    set(CPACK_RPM_${_C}_PACKAGE_NAME ${_rpm_${_c}})
    set(CPACK_COMPONENT_${_C}_DESCRIPTION "${_desc_${_c}}")
    string(REGEX REPLACE "\n.*" "" _summary "${_desc_${_c}}")
    set(CPACK_RPM_${_C}_PACKAGE_SUMMARY "${_summary}")
    string(REGEX REPLACE "^[^\n]*\n" "" _body "${_desc_${_c}}")
    set(CPACK_RPM_${_C}_PACKAGE_DESCRIPTION "${_body}")
    set(_deps "")
    foreach(_d IN LISTS _dep_${_c})
      if(_d MATCHES "^@(.*)")
        list(APPEND _deps "${_rpm_${CMAKE_MATCH_1}} = ${TB5_RPM_VERSION}")
      else()
        list(APPEND _deps "${_d}")
      endif()
    endforeach()
    list(JOIN _deps ", " _deps)
    set(CPACK_RPM_${_C}_PACKAGE_REQUIRES "${_deps}")
    if(_c IN_LIST _noarch)
      set(CPACK_RPM_${_C}_PACKAGE_ARCHITECTURE noarch)
    endif()
  endforeach()
  set(CPACK_RPM_DKMS_PACKAGE_LICENSE "GPL-2.0-only AND (GPL-2.0-only OR MIT) AND MIT")
  set(CPACK_RPM_DEVELOPMENT_PACKAGE_LICENSE "MIT AND GPL-2.0-only WITH Linux-syscall-note")
  set(CPACK_RPM_DKMS_PACKAGE_REQUIRES "dkms, shadow-utils")
  # No weak dependency on openssl (the deb's Recommends, for DKMS's signing
  # key): CPack 3.25 writes no Recommends tag, and its probe for Suggests
  # (rpm --suggests) fails here, dropping the tag with a warning.
  set(CPACK_RPM_DKMS_USER_FILELIST "%config(noreplace) /etc/modprobe.d/tb5.conf")
  foreach(_s post posttrans preun postun)
    tb5_maint_script(${_pkg_src}/rpm/${_s}.in ${_pkg_gen}/rpm/${_s})
  endforeach()
  set(CPACK_RPM_DKMS_POST_INSTALL_SCRIPT_FILE ${_pkg_gen}/rpm/post)
  set(CPACK_RPM_DKMS_POST_TRANS_SCRIPT_FILE ${_pkg_gen}/rpm/posttrans)
  set(CPACK_RPM_DKMS_PRE_UNINSTALL_SCRIPT_FILE ${_pkg_gen}/rpm/preun)
  set(CPACK_RPM_DKMS_POST_UNINSTALL_SCRIPT_FILE ${_pkg_gen}/rpm/postun)
  set(CPACK_RPM_RUNTIME_PACKAGE_GROUP "System/Libraries")
  set(CPACK_RPM_DEVELOPMENT_PACKAGE_GROUP "Development/Libraries/C and C++")
  set(CPACK_RPM_PLUGIN_PACKAGE_GROUP "System/Libraries")
  set(CPACK_RPM_TOOLS_PACKAGE_GROUP "System/Monitoring")
  # tb5-perf --plot draws with gnuplot (a weak dependency).
  set(CPACK_RPM_TOOLS_PACKAGE_SUGGESTS "gnuplot")
  set(CPACK_RPM_EXPORTER_PACKAGE_GROUP "System/Monitoring")
  # The unit as %systemd_post, %systemd_preun and
  # %systemd_postun_with_restart treat it (presets decide enablement).
  set(CPACK_RPM_EXPORTER_POST_INSTALL_SCRIPT_FILE ${_pkg_src}/rpm/exporter/post)
  set(CPACK_RPM_EXPORTER_PRE_UNINSTALL_SCRIPT_FILE ${_pkg_src}/rpm/exporter/preun)
  set(CPACK_RPM_EXPORTER_POST_UNINSTALL_SCRIPT_FILE ${_pkg_src}/rpm/exporter/postun)
  set(CPACK_RPM_DOC_PACKAGE_GROUP "Documentation/Other")
  set(CPACK_RPM_TESTS_PACKAGE_GROUP "Development/Tools/Other")
  foreach(_C MINIMAL SERVER FULL)
    set(CPACK_RPM_${_C}_PACKAGE_GROUP "System/Kernel")
  endforeach()
  # The library's ldconfig runs (rpm has no triggers for that).
  file(WRITE ${_pkg_gen}/rpm/ldconfig "/sbin/ldconfig\n")
  set(CPACK_RPM_RUNTIME_POST_INSTALL_SCRIPT_FILE ${_pkg_gen}/rpm/ldconfig)
  set(CPACK_RPM_RUNTIME_POST_UNINSTALL_SCRIPT_FILE ${_pkg_gen}/rpm/ldconfig)
endif()

include(CPack)
foreach(_c IN LISTS TB5_PKG_COMPONENTS)
  string(TOUPPER ${_c} _C)
  cpack_add_component(${_c} DESCRIPTION "${_desc_${_c}}")
endforeach()
