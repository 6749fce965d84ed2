# The accelerator qualification (included from
# hypervisor/arch/x86_64, with the image's other tests): syscall-probe, a
# Multiboot kernel of its own that enters ring 3 and comes back by SYSCALL
# with pvmmu-hv's GDT/STAR/LSTAR/FMASK/EFER/CR4 set-up (syscall_probe.S).
#
# qemu_syscall_probe (label qemu): under TCG, which must pass every case, so
#   the probe itself is tested on every run.
# kvm_syscall_probe (label kvm): under KVM where /dev/kvm is usable; skipped
#   otherwise, and skipped with the reason where this KVM does not qualify
#   (probe_test.sh, docs/boot.md "KVM that is not a CPU").
set(_kvm_dir ${PROJECT_SOURCE_DIR}/tests/kvm)
add_executable(syscall-probe-elf64 ${_kvm_dir}/syscall_probe.S)
target_link_options(syscall-probe-elf64 PRIVATE
  -nostdlib -static -no-pie -Wl,-Ttext=0x100000 -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,noseparate-code)
# QEMU's -kernel loads ELF32 Multiboot images only (an ELF64 one needs the
# a.out kludge pvmmu-hv uses); the code is 64-bit from its far jump on.
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/syscall-probe
  COMMAND ${CMAKE_OBJCOPY} -O elf32-i386 $<TARGET_FILE:syscall-probe-elf64> ${CMAKE_CURRENT_BINARY_DIR}/syscall-probe
  DEPENDS syscall-probe-elf64 VERBATIM)
add_custom_target(syscall-probe ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/syscall-probe)

add_test(NAME qemu_syscall_probe
  COMMAND ${_kvm_dir}/probe_test.sh --image ${CMAKE_CURRENT_BINARY_DIR}/syscall-probe --accel tcg)
add_test(NAME kvm_syscall_probe
  COMMAND ${_kvm_dir}/probe_test.sh --image ${CMAKE_CURRENT_BINARY_DIR}/syscall-probe --accel kvm)
set_tests_properties(qemu_syscall_probe PROPERTIES LABELS qemu TIMEOUT 90 SKIP_RETURN_CODE 77)
set_tests_properties(kvm_syscall_probe PROPERTIES LABELS kvm TIMEOUT 90 SKIP_RETURN_CODE 77)

# The boot test under KVM with -cpu host at 2 CPUs (label kvm), only where
# `pvmmu-run --kvm-self-test` passes (the same probe, its verdict cached per
# host boot); skipped (77) with the verdict's line otherwise. The guest tests
# under KVM are kvm2.* (guest/tests/CMakeLists.txt).
add_test(NAME kvm_boot_smp2
  COMMAND ${PROJECT_SOURCE_DIR}/tests/qemu/boot_test.sh --image $<TARGET_FILE:pvmmu-hv> --cpus 2 --accel kvm
          --kvm-check $<TARGET_FILE:pvmmu-run>)
set_tests_properties(kvm_boot_smp2 PROPERTIES LABELS kvm TIMEOUT 90 SKIP_RETURN_CODE 77)
