# shellcheck shell=bash
# ./pvmmu boot: the bare-metal hypervisor image under QEMU (TCG).
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage_boot() {
  cat <<'EOF2'
usage: ./pvmmu boot [--cpus N] [--mem MIB] [--append CMDLINE] [--timeout S] [-- QEMU_ARGS]

Installs missing packages, builds the bare-metal image
build/hypervisor/arch/x86_64/pvmmu-hv and boots it with qemu-system-x86_64
-kernel (Multiboot 1; TCG, so no KVM is needed), streaming its serial console.
The hypervisor ends QEMU itself (isa-debug-exit) once boot and its checks are
done; see docs/boot.md.

  --cpus N          CPUs (default 4)
  --mem MIB         memory in MiB (default 256)
  --append CMDLINE  the Multiboot command line (selftest=trap, selftest=overflow,
                    selftest=badmap make the hypervisor fail on purpose)
  --timeout S       stop QEMU after S seconds (default: no limit; Ctrl-C stops it)
  -- QEMU_ARGS      more arguments for QEMU (for example: -- -d int -D qemu.log)

Exit status: 0 booted and every check passed, 1 a check failed or the
hypervisor panicked (or QEMU ended another way), 124 the timeout ran out.
EOF2
}

# QEMU exit statuses from the hypervisor's isa-debug-exit codes
# (hypervisor/arch/x86_64/boot/boot_defs.h): status = (code << 1) | 1.
cmd_boot() {
  local cpus=4 mem=256 append='' limit=''
  local -a extra=()
  while (($#)); do
    case $1 in
      -h | --help | help) usage_boot; return 0 ;;
      --cpus | --mem | --append | --timeout)
        (($# >= 2)) || usage_error boot "$1 needs a value"
        case $1 in
          --cpus) cpus=$2 ;;
          --mem) mem=$2 ;;
          --append) append=$2 ;;
          --timeout) limit=$2 ;;
        esac
        shift ;;
      --) shift; extra=("$@"); break ;;
      *) usage_error boot "unknown option '$1'" ;;
    esac
    shift
  done
  [[ $cpus =~ ^[1-9][0-9]*$ ]] || usage_error boot "--cpus wants a positive number, not '$cpus'"
  [[ $mem =~ ^[1-9][0-9]*$ ]] || usage_error boot "--mem wants a size in MiB, not '$mem'"

  maybe_deps
  command -v qemu-system-x86_64 >/dev/null 2>&1 ||
    die "qemu-system-x86_64 not found: run ./pvmmu deps (Debian package qemu-system-x86)"
  build_tree main pvmmu-hv || die "build of the hypervisor image failed"
  local image="$ROOT/build/hypervisor/arch/x86_64/pvmmu-hv"
  [[ -f $image ]] || die "no image at $image"

  # The CPU model and machine of pvmmu-run's TCG runs (tools/qemu_machine.h).
  local -a cmd=(qemu-system-x86_64 -accel tcg -cpu "$(pvmmu_define PVMMU_QEMU_TCG_CPU)"
                -machine "$(pvmmu_define PVMMU_QEMU_MACHINE)" -smp "$cpus" -m "$mem"
                -kernel "$image"
                -display none -serial stdio -monitor none -no-reboot
                -device "$(pvmmu_debug_exit)")
  if [[ -n $append ]]; then cmd+=(-append "$append"); fi
  cmd+=("${extra[@]}")
  if [[ -n $limit ]]; then cmd=(timeout --foreground --kill-after=5 "$limit" "${cmd[@]}"); fi
  say "booting: ${cmd[*]}"
  local rc=0
  "${cmd[@]}" || rc=$?
  case $rc in
    "$(pvmmu_status HV_EXIT_SUCCESS)") say "${C_GREEN}the hypervisor booted and every check passed${C_OFF}"; return 0 ;;
    "$(pvmmu_status HV_EXIT_FAILURE)") say "${C_RED}a boot check failed (see the console above)${C_OFF}"; return 1 ;;
    "$(pvmmu_status HV_EXIT_PANIC)") say "${C_RED}the hypervisor panicked (see the console above)${C_OFF}"; return 1 ;;
    124) say "${C_RED}timed out after ${limit}s${C_OFF}"; return 124 ;;
    *) say "${C_RED}QEMU ended with status $rc, not through the hypervisor's exit${C_OFF}"; return 1 ;;
  esac
}
