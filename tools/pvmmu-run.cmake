# pvmmu-run (included from tools/CMakeLists.txt): runs guest programs
# (`./pvmmu run`). The programs it knows are the guest tests
# (guest/tests/CMakeLists.txt), compiled in as name -> sim binary, guest
# kernel for the bare-metal hypervisor (guest/platform/xenpv).
get_property(_guest_tests GLOBAL PROPERTY PVMMU_GUEST_TESTS)
set(_inc "")
foreach(_t ${_guest_tests})
  string(APPEND _inc "{\"${_t}\", \"$<TARGET_FILE:guest-${_t}>\", \"$<TARGET_FILE:xenpv-${_t}>\"},\n")
endforeach()
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/pvmmu-run-programs.inc CONTENT "${_inc}")
# The platforms are back ends of one launcher (run_backend.h): run_qemu.cc,
# run_xen.cc, run_bochs.cc and run_libvirt*.cc, sharing the child and its
# judgement (run_child.cc).
add_executable(pvmmu-run pvmmu-run.cc run_args.cc run_usage.cc run_programs.cc run_launch.cc run_configs.cc run_fuzz.cc
  run_child.cc run_input.cc run_qemu.cc run_xen.cc run_xen_host.cc run_bochs.cc
  run_libvirt_xml.cc run_domains.cc input_file.cc xl_config.cc kvm_probe.cc bzimage.cc)
# A bzImage kernel (Linux's vmlinuz) is unpacked to its ELF before loading, as
# xl does (bzimage.cc): its XZ payload with liblzma (liblzma-dev, found in the
# top CMakeLists.txt). Without it pvmmu-run still builds and refuses such a
# kernel saying why.
if(LZMA_FOUND)
  target_sources(pvmmu-run PRIVATE bzimage_xz.cc)
  target_link_libraries(pvmmu-run PRIVATE PkgConfig::LZMA)
else()
  target_sources(pvmmu-run PRIVATE bzimage_xz_missing.cc)
endif()
# --platform libvirt talks to libvirt through its C API (libvirt-dev, found in
# the top CMakeLists.txt). Without it pvmmu-run still builds, and that
# platform is a SKIP saying why.
if(LIBVIRT_FOUND)
  target_sources(pvmmu-run PRIVATE run_libvirt.cc run_libvirt_host.cc)
  target_link_libraries(pvmmu-run PRIVATE PkgConfig::LIBVIRT)
else()
  target_sources(pvmmu-run PRIVATE run_libvirt_missing.cc)
endif()
# The embedded QEMU driver's root, the default --platform libvirt URI's.
set(PVMMU_LIBVIRT_ROOT ${CMAKE_BINARY_DIR}/libvirt-embed)
# --config: domains in xl.cfg syntax, parsed by Xen's libxlutil (libxen-dev).
target_link_libraries(pvmmu-run PRIVATE xlutil)
# --platform xen-host: the domain created, watched and destroyed in a Xen
# host's dom0 through libxenlight and libxenctrl (libxen-dev, as libxlutil).
target_link_libraries(pvmmu-run PRIVATE xenlight xenctrl xentoollog)
# xenctrl.h needs GNU C++ (Xen's headers use anonymous unions and, under
# __STRICT_ANSI__, leave an alignment macro undefined on purpose).
set_source_files_properties(run_xen_host.cc PROPERTIES COMPILE_OPTIONS -std=gnu++20)
# core/range.h: the unpacker's range checks are the loader's (bzimage.cc);
# core/grant_limits.h: the grant-table limits xl.cfg may ask for (xl_config.cc).
target_include_directories(pvmmu-run PRIVATE ${CMAKE_CURRENT_BINARY_DIR} ${PROJECT_SOURCE_DIR}/hypervisor/core/include)
target_link_libraries(pvmmu-run PRIVATE pvmmu_abi pvmmu_x86)
# --platform qemu boots the hypervisor image with the test's guest kernel,
# --platform bochs an ISO of them (make-iso.sh), --platform xen Debian's Xen
# image, fetched into build/xen when missing (fetch-xen.sh).
target_compile_definitions(pvmmu-run PRIVATE PVMMU_HV_IMAGE="$<TARGET_FILE:pvmmu-hv>"
  PVMMU_HOSTILE_GUEST="$<TARGET_FILE:hostile-guest>"
  PVMMU_MAKE_ISO="${PROJECT_SOURCE_DIR}/tools/make-iso.sh"
  PVMMU_FETCH_XEN="${PROJECT_SOURCE_DIR}/tools/fetch-xen.sh" PVMMU_XEN_DIR="${CMAKE_BINARY_DIR}/xen"
  PVMMU_LIBVIRT_ROOT="${PVMMU_LIBVIRT_ROOT}"
  PVMMU_KVM_PROBE_IMAGE="${CMAKE_BINARY_DIR}/hypervisor/arch/x86_64/syscall-probe"
  PVMMU_KVM_VERDICT="${CMAKE_BINARY_DIR}/kvm-self-test.verdict")
# --fuzz boots the hostile guest (tests/qemu/tests.cmake); the default
# accelerator is KVM only where syscall-probe (tests/kvm/tests.cmake) passes
# under it (tools/kvm_probe.h); its verdict is kept per boot of the host in
# the build tree.
# A sanitizer tree runs pvmmu-run only on its inputs (label unit, built by
# target tests-unit): there it does not bring the images in.
if(NOT PVMMU_SANITIZE)
  add_dependencies(pvmmu-run pvmmu-hv hostile-guest syscall-probe)
  foreach(_t ${_guest_tests})
    add_dependencies(pvmmu-run guest-${_t} xenpv-${_t})
  endforeach()
endif()
