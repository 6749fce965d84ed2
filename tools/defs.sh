# shellcheck shell=bash
# What the bash needs of the facts the C++ defines once, read from the headers
# themselves: hypervisor/arch/x86_64/boot/boot_defs.h (the exit codes, the
# debug-exit port, a domain's default size) and tools/qemu_machine.h (QEMU's
# CPU models and machine, the hypervisor's own memory). Sourced by
# tests/qemu/boot_test.sh and tools/cli/; tests/tools/machine_defs_test.cc
# checks that the bash and the C++ read the same.

PVMMU_DEFS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# pvmmu_define NAME: the value of `#define NAME VALUE` (a number, or a string
# without its quotes).
pvmmu_define() {
  local v
  v=$(sed -nE "s/^#define $1[[:space:]]+(\"([^\"]*)\"|([^[:space:]]+)).*/\\2\\3/p" \
        "$PVMMU_DEFS_DIR/qemu_machine.h" "$PVMMU_DEFS_DIR/../hypervisor/arch/x86_64/boot/boot_defs.h" | head -n 1)
  if [[ -z $v ]]; then
    echo "tools/defs.sh: no '#define $1' in tools/qemu_machine.h or boot_defs.h" >&2
    return 1
  fi
  printf '%s\n' "$v"
}

# pvmmu_status NAME [R]: QEMU's exit status for isa-debug-exit code NAME (+ R,
# a shutdown reason with HV_EXIT_SHUTDOWN): the device exits with (v << 1) | 1.
pvmmu_status() {
  local code
  code=$(pvmmu_define "$1") || return 1
  echo $((((code + ${2:-0}) << 1) | 1))
}

# pvmmu_debug_exit: QEMU's -device for the hypervisor's exit port.
pvmmu_debug_exit() {
  local port
  port=$(pvmmu_define DEBUG_EXIT_PORT) || return 1
  printf 'isa-debug-exit,iobase=0x%x,iosize=0x04\n' "$port"
}

# pvmmu_machine 'WORDS'...: "CPUS MIB", the machine pvmmu needs for domains
# with these module words, as pvmmu-run sizes it (tools/run_qemu.cc
# pvmmu_machine): a CPU per vCPU and one per peer=, the hypervisor's memory and
# every frame. The first vcpus=, frames= and peer= of each, as the hypervisor
# reads them (boot/main.cc).
pvmmu_machine() {
  local hv_mib def_frames grant_mib w v f p cpus=0 frames=0
  hv_mib=$(pvmmu_define PVMMU_HV_MIB) || return 1
  def_frames=$(pvmmu_define HV_DEFAULT_FRAMES) || return 1
  grant_mib=$(pvmmu_define HV_GRANT_MIB) || return 1
  for w in "$@"; do
    v=$(grep -oE '(^| )vcpus=[0-9]+' <<<"$w" | head -n 1) || true
    f=$(grep -oE '(^| )frames=[0-9]+' <<<"$w" | head -n 1) || true
    p=$(grep -oE '(^| )peer=[0-9]+' <<<"$w" | head -n 1) || true
    v=${v#*=} f=${f#*=} p=${p#*=}
    cpus=$((cpus + ${v:-1} + (${p:-0} > 0 ? 1 : 0)))
    frames=$((frames + ${f:-$def_frames} + ${p:-0}))
  done
  echo "$cpus $((hv_mib + frames * 4096 / (1024 * 1024) + $# * grant_mib))"
}
