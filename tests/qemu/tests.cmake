# Tests of the bare-metal image (included from hypervisor/arch/x86_64, where
# the pvmmu-hv target lives).
#
# hv_image_check (label image): the ELF64 file is loadable as a Multiboot 1
#   a.out-kludge image — no QEMU needed, so every build checks it.
# qemu_boot_* (label qemu): boot the image under QEMU TCG and read the console.
#   They fail (not hang) on a boot that stops: boot_test.sh runs QEMU under
#   `timeout`. Without qemu-system-x86_64 they are skipped with exit code 77
#   and a loud message (./pvmmu deps installs qemu-system-x86).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
set(_qemu_dir ${PROJECT_SOURCE_DIR}/tests/qemu)

add_test(NAME hv_image_check
  COMMAND ${Python3_EXECUTABLE} ${_qemu_dir}/check_image.py $<TARGET_FILE:pvmmu-hv>)
set_tests_properties(hv_image_check PROPERTIES LABELS image TIMEOUT 30)

function(pvmmu_qemu_test name)
  add_test(NAME ${name} COMMAND ${_qemu_dir}/boot_test.sh --image $<TARGET_FILE:pvmmu-hv> ${ARGN})
  # 60 s inside the script (QEMU's timeout); CTest's own limit only backs it up.
  set_tests_properties(${name} PROPERTIES LABELS qemu TIMEOUT 90 SKIP_RETURN_CODE 77)
endfunction()

pvmmu_qemu_test(qemu_boot_smp4 --cpus 4)
pvmmu_qemu_test(qemu_boot_smp1 --cpus 1)
pvmmu_qemu_test(qemu_boot_exception --cpus 2 --selftest trap)
pvmmu_qemu_test(qemu_boot_stack_overflow --cpus 1 --selftest overflow)
pvmmu_qemu_test(qemu_boot_invariant_violation --cpus 2 --selftest badmap)

# Multiboot 2 (labels qemu and image): the same checks, with the image booted
# by GRUB from an ISO that tools/make-iso.sh (./pvmmu iso) makes, through
# SeaBIOS and QEMU's CD-ROM; skipped (77) without grub-mkrescue, GRUB's BIOS
# modules or xorriso. The guest arrives as a module2.
# qemu_iso_as_disk: the ISO as a hard disk, booted through its hybrid MBR, as
# from a USB stick on a real machine.
pvmmu_qemu_test(qemu_iso_boot_smp4 --iso --cpus 4)
pvmmu_qemu_test(qemu_iso_as_disk --iso --as-disk --cpus 2)
set_tests_properties(qemu_iso_boot_smp4 qemu_iso_as_disk PROPERTIES LABELS "qemu;image")

# Guest kernels in ring 3 (label qemu): the hypervisor loads a guest passed as
# a Multiboot module (-initrd) and ends the run with the domain's shutdown
# reason (boot_defs.h HV_EXIT_SHUTDOWN: poweroff 65, crash 71).
include(${PROJECT_SOURCE_DIR}/guest/platform/xenpv/xenpv.cmake)
pvmmu_xenpv_guest(hello-guest SOURCES ${_qemu_dir}/hello_guest/main.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(crash-guest SOURCES ${_qemu_dir}/hello_guest/main.cc INCLUDES ${_qemu_dir} DEFINES HELLO_CRASH)
pvmmu_xenpv_guest(crash-pf-guest SOURCES ${_qemu_dir}/hello_guest/main.cc INCLUDES ${_qemu_dir}
  DEFINES HELLO_CRASH_PF)
pvmmu_xenpv_guest(bad-iret-guest SOURCES ${_qemu_dir}/hello_guest/main.cc INCLUDES ${_qemu_dir} DEFINES HELLO_BAD_IRET)
pvmmu_xenpv_guest(bad-stack-guest SOURCES ${_qemu_dir}/hello_guest/main.cc INCLUDES ${_qemu_dir} DEFINES HELLO_BAD_STACK)
pvmmu_xenpv_guest(isolation-guest SOURCES ${_qemu_dir}/isolation_guest/main.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(stop-guest SOURCES ${_qemu_dir}/stop_guest/main.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(gdt-guest SOURCES ${_qemu_dir}/gdt_guest/main.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(edge-guest SOURCES ${_qemu_dir}/edge_guest/main.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(conform-guest SOURCES ${_qemu_dir}/conform_guest/main.cc ${_qemu_dir}/conform_guest/events.cc
  ${_qemu_dir}/conform_guest/user_mode.cc ${_qemu_dir}/conform_guest/sched.cc
  ${_qemu_dir}/conform_guest/fifo.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(events-guest SOURCES ${_qemu_dir}/events_guest/main.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(console-guest SOURCES ${_qemu_dir}/console_guest/main.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(grant-guest SOURCES ${_qemu_dir}/grant_guest/main.cc ${_qemu_dir}/grant_guest/abuse.cc
  INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(smoke-guest SOURCES ${PROJECT_SOURCE_DIR}/tests/xen/smoke_guest/main.cc INCLUDES ${_qemu_dir})
# surface-guest: docs/abi.md §12.1, compiled in as surface_rows.h (one
# {nr, cmd, enosys} per row, cmd -1 for a hypercall's own row), against
# pvmmu-hv's dispatcher. Rewritten at configure time, which an edit of the
# document triggers; abi_table_tests refuses a malformed row.
set(_abi_md ${PROJECT_SOURCE_DIR}/docs/abi.md)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_abi_md})
file(READ ${_abi_md} _abi)
string(FIND "${_abi}" "### 12.1 " _from)
string(FIND "${_abi}" "### 12.2 " _to)
math(EXPR _len "${_to} - ${_from}")
string(SUBSTRING "${_abi}" ${_from} ${_len} _abi)
string(REPLACE ";" "," _abi "${_abi}")
string(REPLACE "\n" ";" _abi "${_abi}")
set(_rows "")
foreach(_line IN LISTS _abi)
  if(_line MATCHES "^\\| `[a-z_0-9]+` \\| ([0-9]+) \\| [^|]* \\| ([0-9]*) \\| [^|]* \\| ([^|]+) \\|")
    set(_nr "${CMAKE_MATCH_1}")
    set(_cmd "${CMAKE_MATCH_2}")
    set(_status "${CMAKE_MATCH_3}")
    if("${_cmd}" STREQUAL "")
      set(_cmd -1)
    endif()
    set(_enosys false)
    if("${_status}" STREQUAL "-ENOSYS")
      set(_enosys true)
    endif()
    string(APPEND _rows "    {${_nr}, ${_cmd}, ${_enosys}},\n")
  endif()
endforeach()
file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/surface/surface_rows.h CONTENT
  "// Generated from docs/abi.md §12.1 by tests/qemu/tests.cmake.\n#pragma once\n\nstruct SurfaceRow {\n    unsigned nr;\n    long cmd;   // -1: the hypercall's own row\n    bool enosys;\n};\n\ninline constexpr SurfaceRow kSurfaceRows[] = {\n${_rows}};\n" @ONLY)
pvmmu_xenpv_guest(surface-guest SOURCES ${_qemu_dir}/surface_guest/main.cc
  INCLUDES ${_qemu_dir} ${CMAKE_CURRENT_BINARY_DIR}/surface)
# The hostile guest (docs/security.md §7.10): random hypercalls, instructions
# and exception handlers from a seed; `./pvmmu fuzz --platform qemu` runs it.
set(_hostile ${_qemu_dir}/hostile_guest)
pvmmu_xenpv_guest(hostile-guest SOURCES ${_hostile}/sealed.S ${_hostile}/main.cc ${_hostile}/setup.cc ${_hostile}/args.cc
  ${_hostile}/hypercalls.cc ${_hostile}/grants.cc ${_hostile}/instructions.cc ${_hostile}/traps.cc ${_hostile}/traps.S
  ${_hostile}/probes.S ${_hostile}/user.cc ${_hostile}/user.S INCLUDES ${_qemu_dir})
# Its console lines go through the shared printf engine (lib/include/format/).
target_link_libraries(hostile-guest PRIVATE pvmmu_format_to)
# The initial module (xl.cfg's `ramdisk`, docs/boot.md "Linux on pvmmu"):
# module-guest finds it where start_info's mod_start says (a virtual
# address), module-pfn-guest, whose XEN_ELFNOTE_MOD_START_PFN note asks for
# a PFN, finds SIF_MOD_START_PFN and the PFN; both check its bytes, the zeroes
# after them and the order image, module, P2M list, start_info. The module is
# 10000 bytes written here; the xl.cfg files next to it. About 3 s each on
# pvmmu; xen_module_guest takes module-guest as dom0 of Xen 4.17 (the same
# checks pass there).
pvmmu_xenpv_guest(module-guest SOURCES ${_qemu_dir}/module_guest/main.cc INCLUDES ${_qemu_dir})
pvmmu_xenpv_guest(module-pfn-guest SOURCES ${_qemu_dir}/module_guest/main.cc INCLUDES ${_qemu_dir}
  DEFINES MODULE_PFN)
string(REPEAT "pvmmu initial module\n" 477 _module)   # 10017 bytes, cut to 10000
string(SUBSTRING "${_module}" 0 10000 _module)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/module-files/module.bin "${_module}")
foreach(_guest module-guest module-pfn-guest)
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/module-files/${_guest}.cfg CONTENT
    "name = \"${_guest}\"\nkernel = \"$<TARGET_FILE:${_guest}>\"\nramdisk = \"${CMAKE_CURRENT_BINARY_DIR}/module-files/module.bin\"\nmemory = 16\n")
  add_test(NAME qemu_${_guest} COMMAND pvmmu-run --platform qemu --accel tcg --timeout 60
    --config ${CMAKE_CURRENT_BINARY_DIR}/module-files/${_guest}.cfg)
  set_tests_properties(qemu_${_guest} PROPERTIES LABELS qemu TIMEOUT 90 SKIP_RETURN_CODE 3)
endforeach()
add_test(NAME xen_module_guest COMMAND pvmmu-run --platform xen --timeout 120
  --config ${CMAKE_CURRENT_BINARY_DIR}/module-files/module-guest.cfg)
set_tests_properties(xen_module_guest PROPERTIES LABELS "xen;qemu" TIMEOUT 150 SKIP_RETURN_CODE 3
  RESOURCE_LOCK xen-image)
# Loader tests: kernels linked at 0 without ENTRY or
# VIRT_BASE notes, one with a FEATURES note in Xen's syntax, one described by
# the legacy __xen_guest section (low_guest/head.S, low.ld).
function(pvmmu_low_guest name)
  add_executable(${name} ${_qemu_dir}/low_guest/head.S ${_qemu_dir}/low_guest/main.cc)
  pvmmu_xenpv_flags(${name})
  target_include_directories(${name} PRIVATE ${PVMMU_XENPV_DIR} ${_qemu_dir})
  target_compile_definitions(${name} PRIVATE ${ARGN})
  target_link_options(${name} PRIVATE -nostdlib -static -no-pie -Wl,-T,${_qemu_dir}/low_guest/low.ld
    -Wl,-z,max-page-size=0x1000 -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro)
  set_target_properties(${name} PROPERTIES LINK_DEPENDS ${_qemu_dir}/low_guest/low.ld)
endfunction()
pvmmu_low_guest(low-guest)
pvmmu_low_guest(legacy-guest LEGACY)
add_dependencies(pvmmu-hv low-guest legacy-guest)
pvmmu_qemu_test(qemu_guest_low --cpus 1 --guest $<TARGET_FILE:low-guest> --expect "passed:low guest")
pvmmu_qemu_test(qemu_guest_legacy --cpus 1 --guest $<TARGET_FILE:legacy-guest> --expect "passed:legacy guest")

add_dependencies(pvmmu-hv hello-guest crash-guest crash-pf-guest bad-iret-guest bad-stack-guest isolation-guest stop-guest
  gdt-guest edge-guest conform-guest smoke-guest hostile-guest surface-guest events-guest console-guest)
# The hello and gdt guests far-return and IRET in ring 3, which QEMU 7.2's TCG
# gets wrong under SMAP (boot_test.sh --no-smap; docs/boot.md "CPU features").
pvmmu_qemu_test(qemu_guest_hello --cpus 2 --guest $<TARGET_FILE:hello-guest> --expect poweroff --no-smap)
pvmmu_qemu_test(qemu_guest_crash --cpus 1 --guest $<TARGET_FILE:crash-guest> --expect crash)
pvmmu_qemu_test(qemu_guest_crash_pf --cpus 1 --guest $<TARGET_FILE:crash-pf-guest> --expect crash-pf)
pvmmu_qemu_test(qemu_guest_bad_iret --cpus 1 --guest $<TARGET_FILE:bad-iret-guest> --expect bad-iret)
pvmmu_qemu_test(qemu_guest_bad_stack --cpus 1 --guest $<TARGET_FILE:bad-stack-guest> --expect bad-stack)
pvmmu_qemu_test(qemu_guest_stop --cpus 3 --guest $<TARGET_FILE:stop-guest> --expect stop)
pvmmu_qemu_test(qemu_guest_vcpu_down --cpus 2 --guest $<TARGET_FILE:stop-guest> --words role=down
  --expect vcpu-down)
# SCHEDOP_shutdown_code and SCHEDOP_watchdog's effect (docs/abi.md §10
# "Shutdown"): the stop guest gives the code reboot, then powers off, and the
# domain ends with reboot; it arms a 1-second watchdog and yields, and the
# domain ends with watchdog. Through pvmmu-run --config (a second or two of
# TCG each), judged by the hypervisor's shutdown line.
foreach(_role code watchdog)
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/stop-${_role}.cfg
    CONTENT "name = \"${_role}\"\nkernel = \"$<TARGET_FILE:stop-guest>\"\nextra = \"role=${_role}\"\nvcpus = 1\nmemory = 16\n")
endforeach()
add_test(NAME qemu_guest_shutdown_code
  COMMAND pvmmu-run --platform qemu --accel tcg --timeout 60 --config ${CMAKE_CURRENT_BINARY_DIR}/stop-code.cfg)
add_test(NAME qemu_guest_watchdog
  COMMAND pvmmu-run --platform qemu --accel tcg --timeout 60 --config ${CMAKE_CURRENT_BINARY_DIR}/stop-watchdog.cfg)
# The watchdog moved by vCPU 0, which then goes down, seen by vCPU 1 alone.
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/stop-smp_watchdog.cfg
  CONTENT "name = \"smp_watchdog\"\nkernel = \"$<TARGET_FILE:stop-guest>\"\nextra = \"role=smp_watchdog\"\nvcpus = 2\nmemory = 16\n")
add_test(NAME qemu_guest_watchdog_smp
  COMMAND pvmmu-run --platform qemu --accel tcg --timeout 60 --config ${CMAKE_CURRENT_BINARY_DIR}/stop-smp_watchdog.cfg)
set_tests_properties(qemu_guest_shutdown_code PROPERTIES LABELS qemu TIMEOUT 90
  PASS_REGULAR_EXPRESSION "stop guest: shutdown code given[^\n]*\n(.*\n)*pvmmu: domain 1 shut down \\(reboot\\) by vCPU 0"
  FAIL_REGULAR_EXPRESSION "FAILED|PANIC|timed out")
set_tests_properties(qemu_guest_watchdog PROPERTIES LABELS qemu TIMEOUT 90
  PASS_REGULAR_EXPRESSION "pvmmu: domain 1: watchdog timer 1 fired[^\n]*\npvmmu: domain 1 shut down \\(watchdog\\) by vCPU 0"
  FAIL_REGULAR_EXPRESSION "FAILED|PANIC|timed out")
set_tests_properties(qemu_guest_watchdog_smp PROPERTIES LABELS qemu TIMEOUT 90
  PASS_REGULAR_EXPRESSION "pvmmu: domain 1: watchdog timer 1 fired[^\n]*\npvmmu: domain 1 shut down \\(watchdog\\) by vCPU 1"
  FAIL_REGULAR_EXPRESSION "FAILED|PANIC|timed out")

pvmmu_qemu_test(qemu_guest_gdt --cpus 1 --guest $<TARGET_FILE:gdt-guest> --expect "passed:gdt guest" --no-smap)
# The same guest with a second vCPU: update_descriptor reaches vCPU 1's GDT.
pvmmu_qemu_test(qemu_guest_gdt_smp --cpus 2 --guest $<TARGET_FILE:gdt-guest> --words vcpus=2
  --expect "passed:gdt guest" --no-smap)
pvmmu_qemu_test(qemu_guest_isolation --cpus 2 --guest $<TARGET_FILE:isolation-guest> --domains 2 --expect isolation)
# Returns to a non-canonical RIP: a guest's SYSCALL at the top of
# the lower half crashes its domain and nothing else; the IRETQ that the CPU
# refuses (a self-test plants the RIP) crashes the domain, not the hypervisor.
pvmmu_qemu_test(qemu_guest_canonical_edge --cpus 4 --guest $<TARGET_FILE:edge-guest> --expect edge)
# A #DB held over a guest's INT1 lands on the #DB stub, over the INT1's frame
# (docs/security.md §7.1 item 4): made by selftest=dbentry, as no emulator does it.
pvmmu_qemu_test(qemu_guest_debug_entry --cpus 2 --selftest dbentry --guest $<TARGET_FILE:edge-guest>
  --expect debug-entry)
# The same under Bochs 2.7 (label bochs; skipped, exit 3, without it), which,
# unlike TCG, holds a #DB over SYSCALL after MOV SS; one boot, four domains
# (a boot of Bochs takes most of a run's time). edge-handled runs the edge
# guest's checks (TF and a data breakpoint as the source) and must power off;
# edge-icebp-tf and edge-icebp-db run MOV SS then INT1 (Bochs drops that #DB:
# the guest sees its INT1's, powers off); edge-handled-2, the last domain,
# makes the INT1 case with selftest=dbentry (boot/selftest.cc) and must be
# crashed, where the CPU looped without the fix, while the others power off
# (the run as a whole then ends CRASHED, judged domain by domain).
# Domain 1, before them, the events guest at 2 vCPUs (2000 events), runs on Bochs's
# LAPIC timer in TSC-deadline mode, which QEMU's TCG does not offer
# (docs/architecture.md §9): its timer, wake-up and stress checks must pass
# (a failed one prints FAILED), and a boot in one-shot mode fails the test.
# About 60 s.
foreach(_role handled icebp-tf icebp-db handled-2)
  string(REGEX REPLACE "-2$" "" _words ${_role})
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/edge-${_role}.cfg
    CONTENT "name = \"edge-${_role}\"\nkernel = \"$<TARGET_FILE:edge-guest>\"\nextra = \"role=${_words}\"\nvcpus = 1\nmemory = 16\n")
endforeach()
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/events-tsc-deadline.cfg
  CONTENT "name = \"events\"\nkernel = \"$<TARGET_FILE:events-guest>\"\nextra = \"events=2000\"\nvcpus = 2\nmemory = 16\n")
add_test(NAME bochs.edge_and_debug_entry
  COMMAND pvmmu-run --platform bochs --timeout 200 --hv-args selftest=dbentry
          --config ${CMAKE_CURRENT_BINARY_DIR}/events-tsc-deadline.cfg
          --config ${CMAKE_CURRENT_BINARY_DIR}/edge-handled.cfg --config ${CMAKE_CURRENT_BINARY_DIR}/edge-icebp-tf.cfg
          --config ${CMAKE_CURRENT_BINARY_DIR}/edge-icebp-db.cfg --config ${CMAKE_CURRENT_BINARY_DIR}/edge-handled-2.cfg)
set_tests_properties(bochs.edge_and_debug_entry PROPERTIES LABELS bochs TIMEOUT 240 SKIP_RETURN_CODE 3 COST 60
  PASS_REGULAR_EXPRESSION "domain 5 vCPU 0 crashed: a #DB on the #DB entry overwrote its frame[^\n]*\n(.*\n)*pvmmu-run: domain 1 \\(events\\): powered off\npvmmu-run: domain 2 \\(edge-handled\\): powered off\npvmmu-run: domain 3 \\(edge-icebp-tf\\): powered off\npvmmu-run: domain 4 \\(edge-icebp-db\\): powered off\npvmmu-run: domain 5 \\(edge-handled-2\\): CRASHED \\(exit 6\\)"
  FAIL_REGULAR_EXPRESSION "PANIC|EXCEPTION|FAILED|timed out|lapic timer: one-shot")
# SMAP: the hypervisor reads a present page of the guest outside
# guest_copy's STAC window, which must fault, then inside it; the guest then
# runs its checks with SMAP on, as every guest test does (boot_test.sh).
pvmmu_qemu_test(qemu_guest_smap_selftest --cpus 2 --guest $<TARGET_FILE:isolation-guest> --domains 2 --selftest smap
  --expect isolation)
pvmmu_qemu_test(qemu_guest_refused_iret --cpus 2 --guest $<TARGET_FILE:gdt-guest> --domains 2 --selftest badreturn
  --expect refused-return --no-smap)

# Without isa-debug-exit (as under libvirt): the hypervisor
# powers the machine off by ACPI S5 after its last domain (pc and q35), and
# reports a panic through pvpanic (QEMU -device pvpanic -action
# panic=exit-failure), a failed boot check too.
# The hello guest far-returns in ring 3, which QEMU 7.2's TCG gets wrong under
# SMAP (--no-smap, as for qemu_guest_hello).
pvmmu_qemu_test(qemu_acpi_poweroff --ends acpi --cpus 2 --guest $<TARGET_FILE:hello-guest> --expect poweroff --no-smap)
pvmmu_qemu_test(qemu_acpi_poweroff_q35 --ends acpi --machine q35 --cpus 2 --guest $<TARGET_FILE:hello-guest>
  --expect poweroff --no-smap)
pvmmu_qemu_test(qemu_pvpanic_exception --ends acpi --cpus 2 --selftest trap)
pvmmu_qemu_test(qemu_pvpanic_failed_check --ends acpi --cpus 2 --selftest badmap)
# pvpanic elsewhere than 0x505 (0x530: 0x510 is QEMU's fw_cfg): the port is the one ACPI names.
pvmmu_qemu_test(qemu_pvpanic_acpi_port --ends acpi --pvpanic-port 0x530 --cpus 1 --selftest trap)

# The same from the GRUB ISO: guests as module2 lines, each domain's words
# (vcpus=1) on its own module string.
pvmmu_qemu_test(qemu_iso_guest_hello --iso --cpus 2 --guest $<TARGET_FILE:hello-guest> --expect poweroff --no-smap)
pvmmu_qemu_test(qemu_iso_isolation --iso --cpus 2 --guest $<TARGET_FILE:isolation-guest> --domains 2
  --expect isolation)
set_tests_properties(qemu_iso_guest_hello qemu_iso_isolation PROPERTIES LABELS "qemu;image")

# Console input (docs/boot.md "Console input"): a line piped into
# `pvmmu-run --console` reaches the console guest's ring and raises its port;
# the guest echoes it and checks it (tests/qemu/console_test.sh; about 3 s of
# TCG, then 8 s of the same run without --console, which must time out).
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/console-guest.cfg
  CONTENT "name = \"console\"\nkernel = \"$<TARGET_FILE:console-guest>\"\nvcpus = 1\nmemory = 16\n")
add_test(NAME qemu_console_input
  COMMAND ${_qemu_dir}/console_test.sh $<TARGET_FILE:pvmmu-run> ${CMAKE_CURRENT_BINARY_DIR}/console-guest.cfg)
set_tests_properties(qemu_console_input PROPERTIES LABELS qemu TIMEOUT 120 SKIP_RETURN_CODE 77)

# Two domains described in xl.cfg syntax (read with Xen's libxlutil), each a
# guest test program with 2 vCPUs, running at once on 4 CPUs: both must
# report SUCCESS and power off.
add_test(NAME qemu_config_two_domains
  COMMAND pvmmu-run --accel tcg --timeout 100 --config ${_qemu_dir}/configs/atomic-ad.cfg
          --config ${_qemu_dir}/configs/tlb.cfg)
set_tests_properties(qemu_config_two_domains PROPERTIES LABELS qemu TIMEOUT 120)

# Two domains that share a ring through a grant and signal by an
# interdomain event channel (tests/qemu/grant_guest), from two xl.cfg files
# written here: domain 1 grants (gref 8, the copy page gref 9) and allocates
# port 2 for domain 2, which maps the ring, binds to that port and exchanges
# 4000 messages, 2 vCPUs each; then GNTTABOP_copy both ways. The words of
# `extra` are how each learns the other's domain id, gref and port
# (docs/architecture.md §11). About 3 s of TCG; msgs=100000 in both files
# for the issue's 10^5 (docs/results.md). One maptrack frame (256
# handles) for the mapper to exhaust (tests/qemu/grant_guest/abuse.cc).
# qemu_grant_pair_4: the same at 4 vCPUs each (the ring served by vCPU 3).
foreach(_vcpus 2 4)
  foreach(_role granter mapper)
    if(_role STREQUAL granter)
      set(_other 2)
      set(_words "")
    else()
      set(_other 1)
      set(_words " invariant-check")
    endif()
    file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/grant${_vcpus}-${_role}.cfg
      CONTENT "name = \"grant-${_role}\"\nkernel = \"$<TARGET_FILE:grant-guest>\"\nvcpus = ${_vcpus}\nmemory = 16\nmax_grant_frames = 4\nmax_maptrack_frames = 1\nextra = \"role=${_role} other=${_other} ref=8 port=2 msgs=4000${_words}\"\n")
  endforeach()
endforeach()
add_test(NAME qemu_grant_pair
  COMMAND pvmmu-run --accel tcg --timeout 60 --config ${CMAKE_CURRENT_BINARY_DIR}/grant2-granter.cfg
          --config ${CMAKE_CURRENT_BINARY_DIR}/grant2-mapper.cfg)
add_test(NAME qemu_grant_pair_4
  COMMAND pvmmu-run --accel tcg --timeout 60 --config ${CMAKE_CURRENT_BINARY_DIR}/grant4-granter.cfg
          --config ${CMAKE_CURRENT_BINARY_DIR}/grant4-mapper.cfg)
# qemu_grant_teardown: the mapper (word keep-mapped) powers off with the
# ring still mapped; its teardown must release the pin, so the granter sees
# GTF_reading and GTF_writing go and revokes, and both domains give every
# frame back with the invariants clean. 1000 messages, 1 vCPU each.
# qemu_grant_granter_first: the granter (word exit-mapped) powers off first,
# the ring mapped: the mapper (outlive-granter) sees its end of the channel
# closed, a new map of its grant refused, the ring still unmaps, the
# invariant check holds with the granter's frames kept for the mapping, and
# after the unmap the granter is gone (a map is GNTST_bad_domain).
# One maptrack frame each, as in the pairs: the mapper fills it (abuse.cc).
set(_teardown_words_granter "role=granter other=2")
set(_teardown_words_mapper "role=mapper other=1 keep-mapped invariant-check")
set(_first_words_granter "role=granter other=2 exit-mapped")
set(_first_words_mapper "role=mapper other=1 outlive-granter invariant-check")
foreach(_case teardown first)
  foreach(_role granter mapper)
    file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/grant-${_case}-${_role}.cfg
      CONTENT "name = \"grant-${_role}\"\nkernel = \"$<TARGET_FILE:grant-guest>\"\nvcpus = 1\nmemory = 16\nmax_maptrack_frames = 1\nextra = \"${_${_case}_words_${_role}} ref=8 port=2 msgs=1000\"\n")
  endforeach()
endforeach()
add_test(NAME qemu_grant_teardown
  COMMAND pvmmu-run --accel tcg --timeout 60 --config ${CMAKE_CURRENT_BINARY_DIR}/grant-teardown-granter.cfg
          --config ${CMAKE_CURRENT_BINARY_DIR}/grant-teardown-mapper.cfg)
add_test(NAME qemu_grant_granter_first
  COMMAND pvmmu-run --accel tcg --timeout 60 --config ${CMAKE_CURRENT_BINARY_DIR}/grant-first-granter.cfg
          --config ${CMAKE_CURRENT_BINARY_DIR}/grant-first-mapper.cfg)
set_tests_properties(qemu_grant_pair qemu_grant_pair_4 qemu_grant_teardown qemu_grant_granter_first PROPERTIES
  LABELS qemu TIMEOUT 90)

# The same machine as a libvirt domain (label libvirt): started by
# pvmmu-run through libvirt's embedded QEMU driver (no daemon), TCG, judged
# from the console; SKIP (3) where libvirt cannot be used (no libvirt-dev at
# build time, no QEMU driver). About 3 s, 10 s the first time (the driver
# probes QEMU's capabilities into build/libvirt-embed).
add_test(NAME libvirt_guest_flag_range_basic
  COMMAND pvmmu-run --platform libvirt --accel tcg --timeout 50 flag-range-basic)
set_tests_properties(libvirt_guest_flag_range_basic PROPERTIES LABELS "libvirt;qemu" TIMEOUT 60
  SKIP_RETURN_CODE 3)
# Where the QEMU driver is missing, the run is a SKIP that names the package:
# libvirt looks for its drivers in LIBVIRT_DRIVER_DIR, here a folder that
# does not exist (or the SKIP of a pvmmu-run built without libvirt-dev).
add_test(NAME libvirt_missing_driver_skips COMMAND pvmmu-run --platform libvirt --accel tcg flag-range-basic)
set_tests_properties(libvirt_missing_driver_skips PROPERTIES LABELS libvirt TIMEOUT 30
  ENVIRONMENT LIBVIRT_DRIVER_DIR=/nonexistent/pvmmu-no-drivers
  PASS_REGULAR_EXPRESSION "SKIP \\(exit 3\\).*(no connection driver.*libvirt-daemon-driver-qemu|built without libvirt)")
# How the machine ends as libvirt sees it: shut off
# (shutdown) after a passing run, crashed (panicked) after a panic on purpose,
# in pvmmu-run's output (tests/tools/libvirt_states_test.sh; about 10 s).
set(_tools_tests ${PROJECT_SOURCE_DIR}/tests/tools)
add_test(NAME libvirt_states COMMAND ${_tools_tests}/libvirt_states_test.sh $<TARGET_FILE:pvmmu-run>)
# The same on a daemon host, as `virsh list --all` shows it (persistent
# domains from --print-xml); SKIP (77) unless a daemon answers at qemu:///system.
add_test(NAME libvirt_virsh_states COMMAND ${_tools_tests}/libvirt_virsh_states.sh $<TARGET_FILE:pvmmu-run>)
# ./pvmmu bench mprotect --platform libvirt: one small cell (labels libvirt, bench).
add_test(NAME libvirt_bench_mprotect
  COMMAND ${_tools_tests}/libvirt_bench_test.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(libvirt_states PROPERTIES LABELS "libvirt;qemu" TIMEOUT 150 SKIP_RETURN_CODE 77)
set_tests_properties(libvirt_virsh_states PROPERTIES LABELS libvirt TIMEOUT 600 SKIP_RETURN_CODE 77)
set_tests_properties(libvirt_bench_mprotect PROPERTIES LABELS "libvirt;bench" TIMEOUT 300 SKIP_RETURN_CODE 77)
set_tests_properties(libvirt_guest_flag_range_basic libvirt_states libvirt_bench_mprotect PROPERTIES
  RESOURCE_LOCK libvirt-embed)

# The same guest kernel on Xen 4.17 (label xen): Debian's hypervisor
# image, fetched into build/xen by tools/fetch-xen.sh (never installed),
# boots smoke-guest as dom0 under TCG (pvmmu-run --platform xen); and on
# pvmmu, to show it is the same.
add_test(NAME xen_smoke_guest
  COMMAND ${PROJECT_SOURCE_DIR}/tests/xen/xen_boot_test.sh --run $<TARGET_FILE:pvmmu-run>
          --kernel $<TARGET_FILE:smoke-guest> --passed "smoke guest")
# xen_edge_guest: Xen as the reference for the edge guest: its
# handled checks hold on Xen as on pvmmu (qemu_guest_canonical_edge).
add_test(NAME xen_edge_guest
  COMMAND ${PROJECT_SOURCE_DIR}/tests/xen/xen_boot_test.sh --run $<TARGET_FILE:pvmmu-run>
          --kernel $<TARGET_FILE:edge-guest> --words role=handled --passed "edge guest")
# xen_conform_guest: traps and emulation as Xen delivers them,
# on Xen 4.17 and on pvmmu (qemu_guest_conform).
add_test(NAME xen_conform_guest
  COMMAND ${PROJECT_SOURCE_DIR}/tests/xen/xen_boot_test.sh --run $<TARGET_FILE:pvmmu-run>
          --kernel $<TARGET_FILE:conform-guest> --cpus 2 --passed "conform guest")
# xen_events_guest: the events guest's timer, wake-up and stress checks on
# Xen 4.17 (qemu_guest_events_2 and _4 on pvmmu).
add_test(NAME xen_events_guest
  COMMAND ${PROJECT_SOURCE_DIR}/tests/xen/xen_boot_test.sh --run $<TARGET_FILE:pvmmu-run>
          --kernel $<TARGET_FILE:events-guest> --cpus 4 --passed "events guest")
# xen_low_guest, xen_legacy_guest: Xen's loader takes the loader test kernels
# too (qemu_guest_low, qemu_guest_legacy).
add_test(NAME xen_low_guest
  COMMAND ${PROJECT_SOURCE_DIR}/tests/xen/xen_boot_test.sh --run $<TARGET_FILE:pvmmu-run>
          --kernel $<TARGET_FILE:low-guest> --passed "low guest")
add_test(NAME xen_legacy_guest
  COMMAND ${PROJECT_SOURCE_DIR}/tests/xen/xen_boot_test.sh --run $<TARGET_FILE:pvmmu-run>
          --kernel $<TARGET_FILE:legacy-guest> --passed "legacy guest")
set_tests_properties(xen_smoke_guest xen_edge_guest xen_conform_guest xen_events_guest xen_low_guest xen_legacy_guest PROPERTIES LABELS "xen;qemu" TIMEOUT 150 SKIP_RETURN_CODE 77
  RESOURCE_LOCK xen-image COST 30)
# What the launcher's xen back end refuses, said at once without booting: a
# test needing a second domain or a deny= policy is a SKIP with the reason
# (exit 3); KVM and a second --config are usage errors.
add_test(NAME xen_launcher_skips_peer COMMAND pvmmu-run --platform xen cross-domain-tables)
add_test(NAME xen_launcher_skips_deny COMMAND pvmmu-run --platform xen feature-fallback)
add_test(NAME xen_launcher_refuses_kvm COMMAND pvmmu-run --platform xen --accel kvm tlb-shootdown)
add_test(NAME xen_launcher_refuses_two_configs
  COMMAND pvmmu-run --platform xen --config ${_qemu_dir}/configs/atomic-ad.cfg --config ${_qemu_dir}/configs/tlb.cfg)
set_tests_properties(xen_launcher_skips_peer PROPERTIES PASS_REGULAR_EXPRESSION "SKIP \\(exit 3\\).*second domain")
set_tests_properties(xen_launcher_skips_deny PROPERTIES PASS_REGULAR_EXPRESSION "SKIP \\(exit 3\\).*deny= policy")
set_tests_properties(xen_launcher_refuses_kvm PROPERTIES PASS_REGULAR_EXPRESSION "takes --accel tcg\\|tcg-icount")
set_tests_properties(xen_launcher_refuses_two_configs PROPERTIES PASS_REGULAR_EXPRESSION "at most 1 --config")
set_tests_properties(xen_launcher_skips_peer xen_launcher_skips_deny xen_launcher_refuses_kvm
  xen_launcher_refuses_two_configs PROPERTIES LABELS xen TIMEOUT 30)
# The same for --platform xen-host (tools/run_xen_host.cc), plus: outside a
# Xen host's dom0 a run is a SKIP that says so (in a dom0 it runs: SUCCESS).
add_test(NAME xen_host_launcher_outside_dom0 COMMAND pvmmu-run --platform xen-host tlb-shootdown)
add_test(NAME xen_host_launcher_skips_peer COMMAND pvmmu-run --platform xen-host cross-domain-tables)
add_test(NAME xen_host_launcher_refuses_accel COMMAND pvmmu-run --platform xen-host --accel tcg tlb-shootdown)
set_tests_properties(xen_host_launcher_outside_dom0 PROPERTIES
  PASS_REGULAR_EXPRESSION "SKIP \\(exit 3\\).*not in the dom0 of a Xen host|SUCCESS \\(exit 0\\)")
set_tests_properties(xen_host_launcher_skips_peer PROPERTIES PASS_REGULAR_EXPRESSION "SKIP \\(exit 3\\).*second domain")
set_tests_properties(xen_host_launcher_refuses_accel PROPERTIES PASS_REGULAR_EXPRESSION "xen-host takes no --accel")
set_tests_properties(xen_host_launcher_outside_dom0 xen_host_launcher_skips_peer xen_host_launcher_refuses_accel
  PROPERTIES LABELS "xen;xenhost" TIMEOUT 30)
pvmmu_qemu_test(qemu_guest_conform --cpus 2 --guest $<TARGET_FILE:conform-guest> --words vcpus=2
  --expect "passed:conform guest")
# Events and time while vCPUs run and block (tests/qemu/events_guest): a
# timer against the pvclock through SCHEDOP_block, a wake-up across vCPUs,
# 10^5 events across 2 and 4 vCPUs.
pvmmu_qemu_test(qemu_guest_events_2 --cpus 2 --guest $<TARGET_FILE:events-guest> --words vcpus=2
  --expect "passed:events guest")
pvmmu_qemu_test(qemu_guest_events_4 --cpus 4 --guest $<TARGET_FILE:events-guest> --words vcpus=4
  --expect "passed:events guest")
pvmmu_qemu_test(qemu_guest_surface --cpus 2 --guest $<TARGET_FILE:surface-guest> --words vcpus=2
  --expect "passed:surface guest")
pvmmu_qemu_test(qemu_guest_smoke --cpus 1 --guest $<TARGET_FILE:smoke-guest>
  --words "vcpus=1 hello=world frames=8192 deny=0" --expect "passed:smoke guest")

# The hostile guest on bare metal (docs/security.md §7.10): a short fuzz run
# with a fixed seed, next to tlb-shootdown (3 vCPUs); it passes when both
# report SUCCESS, the machine powers off and the console shows no crash,
# panic or invariant violation. Longer runs: ./pvmmu fuzz --platform qemu.
find_program(PVMMU_QEMU qemu-system-x86_64)
if(PVMMU_QEMU)
  add_test(NAME qemu_fuzz_hostile_short
    COMMAND pvmmu-run --fuzz --accel tcg --seed 12 --ops 30000 --check 500 --quiet --timeout 100)
  set_tests_properties(qemu_fuzz_hostile_short PROPERTIES LABELS qemu TIMEOUT 120)
endif()

# pvmmu-run --cpu: QEMU's -cpu for the qemu back end (a model without SMAP
# still boots a guest, and the hypervisor says SMAP is absent), refused for a
# back end that does not start QEMU itself.
add_test(NAME qemu_launcher_cpu_model COMMAND pvmmu-run --platform qemu --accel tcg --cpu qemu64,+smep,+umip atomic-ad-preserve)
set_tests_properties(qemu_launcher_cpu_model PROPERTIES LABELS qemu TIMEOUT 60
  PASS_REGULAR_EXPRESSION "cpu features: smep=on smap=absent umip=on.*pvmmu-run: atomic-ad-preserve: SUCCESS")
add_test(NAME launcher_cpu_model_refused COMMAND pvmmu-run --platform bochs --cpu qemu64 atomic-ad-preserve)
set_tests_properties(launcher_cpu_model_refused PROPERTIES LABELS unit TIMEOUT 10
  PASS_REGULAR_EXPRESSION "--cpu is for --platform qemu and xen")
pvmmu_label_needs(unit pvmmu-run)
