#!/usr/bin/env bash
# Boots pvmmu-hv under QEMU (TCG) and checks what its console says.
#
#   boot_test.sh --image PATH [--iso [--as-disk]] [--cpus N] [--mem MIB] [--timeout S]
#                [--selftest trap|overflow|badmap|badreturn|smap] [--no-smap] [--accel tcg|kvm --kvm-check PVMMU_RUN]
#                [--ends acpi [--pvpanic-port P]] [--machine pc|q35]
#                [--guest KERNEL [--domains N] [--words W]
#                 --expect poweroff|crash|crash-pf|bad-iret|bad-stack|isolation|stop|vcpu-down|edge|debug-entry|
#                          refused-return|passed:WHO]
#
# The image boots by Multiboot 1 (QEMU -kernel; the banner must say
# "Multiboot 1, qemu"), or with --iso by Multiboot 2: tools/make-iso.sh puts
# it (and the guest, as a module2) on a GRUB ISO that QEMU boots from its
# CD-ROM through SeaBIOS (the banner must say "Multiboot 2, GRUB 2..."); every
# check below is the same for both. --as-disk: the ISO is the machine's hard
# disk instead, booted through its MBR, as from a USB stick the image was
# written to.
#
# A normal boot must: end QEMU through isa-debug-exit with HV_EXIT_SUCCESS
# (status 33, hypervisor/arch/x86_64/boot/boot_defs.h); announce every CPU once ("cpu K online" for
# K = 0..N-1); print the memory map with a usable region; pass the
# hypervisor's own page-table invariants ("invariants: ok") and the core's
# ("core invariants: ok"); report no violation, exception or panic.
# --selftest trap boots with "selftest=trap": the hypervisor raises #UD after
# boot and must report vector 6 with its RIP and end with HV_EXIT_PANIC (37).
# --selftest overflow: the boot CPU recurses into its stack's guard page; the
# page fault cannot be delivered on that stack, so #DF must be reported (it
# runs on its own IST stack) with CR2 in the guard page, status 37.
# --selftest badmap boots with "selftest=badmap": the hypervisor plants a W+X
# page, a user page and a lower-half page before its invariant check, which
# must name all three and end with HV_EXIT_FAILURE (35) — the check is shown
# to catch what it looks for.
# --guest KERNEL passes a guest kernel as a Multiboot module (QEMU -initrd):
# the hypervisor runs it as domain 1 in ring 3. --expect poweroff: the guest
# (tests/qemu/hello_guest) must print that all its checks passed and shut
# down with SHUTDOWN_poweroff (status 65); --expect crash: the guest's ud2,
# with no trap table, must be reported and end the domain as a crash (71);
# crash-pf: the same for a write to an unmapped page, reported with the
# CPU's error code (0x6: W, U/S); bad-iret / bad-stack: an iret to a non-canonical RIP (a #GP without a handler), or an exception whose
# bounce frame cannot be written, must crash the domain (71), not the
# hypervisor. The domain gets one vCPU per CPU (vcpus=N). --domains N boots
# the kernel N times, one vCPU each; --expect isolation: every domain's
# attempts on the others' frames are refused (tests/qemu/isolation_guest),
# domain 2's frames follow domain 1's, all power off (65), and the lines the
# domains print a byte at a time, at once, reach the console whole. --expect stop
# boots the kernel as "role=spin vcpus=2" and "role=wait vcpus=1": once the
# spinning domain has shut down, its vCPU 1 prints at most one more line.
# --words W goes on the module's string (a single domain). --expect
# vcpu-down boots the kernel as "role=down" with 2 vCPUs: vCPU 1 goes down,
# then vCPU 0, the last one up, and the domain must shut down with poweroff.
# --ends acpi: QEMU without isa-debug-exit, as under libvirt, with a pvpanic
# device and -action panic=exit-failure: the machine must end by ACPI
# soft-off (QEMU exit 0, the console's "powering off (ACPI S5" line) or, after
# a panic or a failed boot check, by pvpanic (exit 1, "reporting the panic"
# line). The exit status then stands for the code the console's ending line
# names, so every check below is the same. --machine q35: QEMU's other PC
# (its ACPI tables and PM ports differ from pc's). --pvpanic-port P: the
# device at port P, which the hypervisor must take from ACPI (the DSDT's
# QEMU0001 device), not assume.
# Every guest run checks that each domain's frames were all given back when
# it ended, and that the core's invariants held after that.
# --expect passed:WHO: the guest prints "WHO: all checks passed" and its
# domain powers off (65).
# --expect edge boots the kernel (tests/qemu/edge_guest) as "role=crash",
# "role=handled", "role=icebp-tf" and "role=icebp-db": a SYSCALL whose next
# RIP is not canonical crashes the first domain, the second sees its traps
# and powers off, the last two run MOV SS then INT1 and either see their #DB
# and power off or are crashed; the hypervisor runs on.
# --selftest dbentry --expect debug-entry boots the edge guest twice as
# "role=handled": the second domain's first #DB is made into a #DB held over
# an INT1 (traps.cc); that domain must be crashed, alone.
# --selftest badreturn --expect refused-return: the hypervisor plants its own
# stack selector (RPL 3) in the last domain's first entry; the IRETQ's #GP,
# taken in ring 0 on the guest's %gs on the last CPU, must crash that domain,
# not the hypervisor: the other domains pass their checks and power off.
# --selftest smap (with a guest): before the guest starts, the hypervisor
# reads its entry point without STAC, which SMAP must fault, then with STAC;
# the line saying so must be there, and the guest must run as usual.
#
# The CPU is QEMU's default model with SMEP, SMAP and UMIP (TCG implements
# all three), as pvmmu-run's (tools/qemu_machine.h, read through
# tools/defs.sh as every fact below the C++ defines too), so every boot
# checks that pvmmu-hv turns them on ("cpu features: smep=on smap=on
# umip=on nx=on wp=on", and the invariants on every CPU); QEMU_CPU overrides
# the model (then a feature may be "absent", never "off"). --no-smap: the
# model without SMAP, for the guests that far-return or IRET in ring 3:
# QEMU 7.2's TCG pops those with a supervisor access, which SMAP refuses on
# the guest's user pages (#PF, error code 0x1), where a CPU reads the stack at
# CPL 3 (docs/boot.md "CPU features"). Every boot prints
# its boot time (TSC) at the first guest entry or at the end of boot.
# --accel kvm (label kvm): KVM with -cpu host, only where `PVMMU_RUN
# --kvm-self-test` passes (tools/kvm_probe.h); else a SKIP saying why.
#
# Exit: 0 pass, 1 fail (also when QEMU hangs: it runs under `timeout`),
# 77 skip — only when qemu-system-x86_64 is not installed, or, with --iso,
# grub-mkrescue, GRUB's BIOS modules or xorriso.
set -uo pipefail

# shellcheck source=tools/defs.sh
source "$(dirname "$0")/../../tools/defs.sh"

image='' iso=0 disk=0 cpus=4 mem='' limit=60 selftest='' guest='' expect='' domains=1 words='' accel=tcg kvm_check='' no_smap=0
ends=debug-exit machine=$(pvmmu_define PVMMU_QEMU_MACHINE) pvpanic_port=
while (($#)); do
  case $1 in
    --image) image=$2; shift ;;
    --iso) iso=1 ;;
    --as-disk) disk=1 ;;
    --cpus) cpus=$2; shift ;;
    --mem) mem=$2; shift ;;
    --timeout) limit=$2; shift ;;
    --selftest) selftest=$2; shift ;;
    --guest) guest=$2; shift ;;
    --expect) expect=$2; shift ;;
    --domains) domains=$2; shift ;;
    --words) words=$2; shift ;;
    --ends) ends=$2; shift ;;
    --machine) machine=$2; shift ;;
    --pvpanic-port) pvpanic_port=$2; shift ;;
    --accel) accel=$2; shift ;;
    --kvm-check) kvm_check=$2; shift ;;
    --no-smap) no_smap=1 ;;
    *) echo "boot_test.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -n $image && -f $image ]] || { echo "boot_test.sh: no image at '${image}'" >&2; exit 1; }

QEMU=${QEMU:-qemu-system-x86_64}
if ! command -v "$QEMU" >/dev/null 2>&1; then
  echo "############################################################################"
  echo "SKIP: $QEMU is not installed, so the bare-metal boot was NOT tested."
  echo "      Install it with ./pvmmu deps (Debian package qemu-system-x86)."
  echo "############################################################################"
  exit 77
fi

default_cpu=$(pvmmu_define PVMMU_QEMU_TCG_CPU)
((no_smap)) && default_cpu=$(pvmmu_define PVMMU_QEMU_TCG_CPU_NO_SMAP)
[[ $accel == kvm ]] && default_cpu=$(pvmmu_define PVMMU_QEMU_KVM_CPU)
cpu=${QEMU_CPU:-$default_cpu}
if [[ $accel == kvm ]]; then
  if ! verdict=$("$kvm_check" --kvm-self-test 2>&1); then
    echo "SKIP: KVM does not run pvmmu here: ${verdict#pvmmu-run: }"
    exit 77
  fi
fi

log=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$log" "$work"' EXIT
# The hypervisor's command line and the modules, each "KERNEL STRING": the
# module's string starts with the kernel's path (QEMU) or name (GRUB).
cmdline='' mods=()
[[ -n $selftest ]] && cmdline="selftest=$selftest"
if [[ -n $guest ]]; then
  if [[ $expect == stop ]]; then
    mods=("$guest role=spin vcpus=2" "$guest role=wait vcpus=1")
  elif [[ $expect == debug-entry ]]; then
    mods=("$guest role=handled vcpus=1" "$guest role=handled vcpus=1")
  elif [[ $expect == edge ]]; then
    mods=("$guest role=crash vcpus=1" "$guest role=handled vcpus=1" "$guest role=icebp-tf vcpus=1 frames=4096"
          "$guest role=icebp-db vcpus=1 frames=4096")
  elif ((domains == 1)); then
    cmdline="${cmdline:+$cmdline }vcpus=$cpus" mods=("$guest${words:+ $words}")
  else
    for ((d = 0; d < domains; d++)); do mods+=("$guest vcpus=1"); done
  fi
fi
if ((iso)); then
  isomods=() strings=()
  for m in "${mods[@]}"; do
    k=${m%% *} words=${m#"$k"}
    isomods+=("$k=${k##*/}$words")
    strings+=("${k##*/}$words")
  done
  rc=0
  "$(dirname "$0")/../../tools/make-iso.sh" --image "$image" --out "$work/pvmmu.iso" \
    --append "$cmdline" "${isomods[@]}" || rc=$?
  if ((rc == 77)); then
    echo "############################################################################"
    echo "SKIP: the tools to make a GRUB ISO are missing (above), so the Multiboot 2"
    echo "      boot was NOT tested. Install them with ./pvmmu deps."
    echo "############################################################################"
    exit 77
  fi
  ((rc == 0)) || { echo "boot_test.sh: tools/make-iso.sh failed ($rc)"; exit 1; }
  boot=(-cdrom "$work/pvmmu.iso" -boot d)
  ((disk)) && boot=(-drive "file=$work/pvmmu.iso,format=raw,if=ide,snapshot=on")
  banner='\(Multiboot 2, GRUB 2\.[0-9][^)]*\)$'
else
  boot=(-kernel "$image") strings=("${mods[@]}")
  if ((${#mods[@]})); then
    initrd=$(IFS=,; echo "${mods[*]}")
    boot+=(-initrd "$initrd")
  fi
  [[ -n $cmdline ]] && boot+=(-append "$cmdline")
  banner='\(Multiboot 1, qemu\)$'
fi

# The memory: --mem, else what pvmmu-run would give these domains
# (pvmmu_machine, peers included), 256 MiB at least.
if [[ -z $mem ]]; then
  read -r _ mem < <(pvmmu_machine "${strings[@]}")
  ((mem >= 256)) || mem=256
fi
# -no-reboot: a triple fault ends QEMU instead of looping through resets.
cmd=("$QEMU" -accel "$accel" -cpu "$cpu" -machine "$machine" -smp "$cpus" -m "$mem" "${boot[@]}"
     -display none -serial stdio -monitor none -no-reboot)
if [[ $ends == acpi ]]; then
  cmd+=(-device "pvpanic${pvpanic_port:+,ioport=$((pvpanic_port))}" -action panic=exit-failure)
else
  cmd+=(-device "$(pvmmu_debug_exit)")
fi
echo "running: ${cmd[*]}"
start=$SECONDS
timeout --kill-after=5 "$limit" "${cmd[@]}" </dev/null >"$log" 2>&1
rc=$?
tr -d '\r' <"$log" >"$log.txt" && mv "$log.txt" "$log"
echo "---- console (QEMU exit status $rc after $((SECONDS - start)) s) ----"
cat "$log"
echo "----"

# QEMU's exit statuses for the hypervisor's exit codes (boot_defs.h).
S_SUCCESS=$(pvmmu_status HV_EXIT_SUCCESS) S_FAILURE=$(pvmmu_status HV_EXIT_FAILURE)
S_PANIC=$(pvmmu_status HV_EXIT_PANIC) S_POWEROFF=$(pvmmu_status HV_EXIT_SHUTDOWN 0)
S_CRASH=$(pvmmu_status HV_EXIT_SHUTDOWN 3)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { grep -Eq -- "$1" "$log" || fail "no line matching /$1/ ($2)"; }
refuse() { ! grep -Eq -- "$1" "$log" || fail "a line matches /$1/ ($2)"; }

# --ends acpi: how the machine ended, then the status isa-debug-exit would have given.
if [[ $ends == acpi ]]; then
  if ((rc == 0)); then
    expect '^pvmmu: powering off \(ACPI S5: SLP_TYP [0-7] into port 0x[0-9a-f]+\)$' "the soft-off"
    code=$(sed -nE 's/.*ending \(isa-debug-exit code (0x[0-9a-f]+)\)$/\1/p' "$log" | tail -1)
    [[ -n $code ]] || code=$(pvmmu_define HV_EXIT_SUCCESS)   # "boot complete; no domain to run yet"
    echo "QEMU exit 0 (ACPI soft-off) stands for isa-debug-exit code $code"
    rc=$(((code << 1) | 1))
  elif ((rc == 1)); then
    expect '^pvmmu: reporting the panic to the host \(pvpanic at port 0x[0-9a-f]+\)$' "the pvpanic write"
    if grep -q '^PANIC: ' "$log"; then rc=$S_PANIC; else rc=$S_FAILURE; fi   # a panic, else a failed boot check
    echo "QEMU exit 1 (pvpanic, -action panic=exit-failure) stands for status $rc"
  fi
  refuse 'no pvpanic device|cannot power off' "the machine ended as its host understands"
  if [[ -n $pvpanic_port ]]; then
    expect "^acpi: .*; pvpanic at $(printf '0x%x' $((pvpanic_port))) \\(ACPI QEMU0001\\)\$" "pvpanic's port from ACPI"
  fi
fi
# Domains 1..N each gave all their frames back when they ended (none kept),
# and the core's invariants then held over the machine with no table left.
given_back() {
  local d n
  for ((d = 1; d <= $1; d++)); do
    n=$(sed -nE "s/^domain $d: ([0-9]+) frames from mfn .*/\1/p" "$log")
    expect "^pvmmu: domain $d: ${n:-?} frames given back, 0 kept\$" "domain $d's memory given back"
  done
  expect '^core invariants: ok \([0-9]+ frames, 0 tables, 0 entries\)$' "the core's invariants after the teardown"
}
# Domains 1..N each powered off (from vCPU 0), the last one ended QEMU with
# status S_POWEROFF, their memory was given back, and nothing failed.
powered_off() {
  local d
  ((rc == S_POWEROFF)) || fail "QEMU exit status $rc, expected $S_POWEROFF (the last domain powered off)"
  for ((d = 1; d <= $1; d++)); do
    expect "^pvmmu: domain $d shut down \\(poweroff\\) by vCPU 0\$" "domain $d powered off"
  done
  given_back "$1"
  refuse 'FAILED|PANIC|EXCEPTION|crashed' "nothing went wrong"
}

if ((rc == 124 || rc == 137)); then
  fail "QEMU did not end within ${limit}s: the boot hung (last console line above)"
fi
expect "^pvmmu-hv: x86-64 paravirtual-MMU hypervisor $banner" "the protocol that booted, and the loader"
# A guest line in the hypervisor's words (the hello guest prints one) is
# marked with its domain, so the launcher never reads it as the hypervisor's.
refuse '^pvmmu: .*\(forged by the guest\)' "a guest's line passed for the hypervisor's"
# GRUB passes the words after the image's path, exactly.
((iso)) && expect "^boot: cmdline \"$cmdline\"\$" "the command line from grub.cfg"
# The protection features: on wherever the CPU has them, all of them on the
# default model (hypervisor/arch/x86_64/cpu/cpu_features.h).
if [[ $cpu == "$default_cpu" && $accel == tcg ]]; then
  smap=on
  ((no_smap)) && smap=absent
  expect "^cpu features: smep=on smap=$smap umip=on nx=on wp=on\$" "SMEP, SMAP, UMIP, NX and WP on"
else
  expect '^cpu features: smep=(on|absent) smap=(on|absent) umip=(on|absent) nx=on wp=on$' \
    "every protection feature of the CPU on"
fi
if [[ $selftest != trap && $selftest != overflow && $selftest != badmap ]]; then
  expect '^boot time: (first guest entry|boot complete) [0-9]+ us after reset, [0-9]+ us after the hypervisor.s entry \(TSC, [0-9]+ kHz\)$' \
    "the boot time"
fi
if [[ $selftest == smap ]]; then
  expect '^selftest: smap: guest address 0x[0-9a-f]+: without STAC the read faulted \(#PF, cr2 0x[0-9a-f]+\); with STAC it read$' \
    "SMAP kept the hypervisor out of the guest's page outside guest_copy"
fi
# Each module's string arrives whole (its domain's vcpus= and frames=).
for ((i = 0; i < ${#strings[@]}; i++)); do
  grep -Fq "domain $((i + 1)): loading module $i (\"${strings[i]}\", " "$log" ||
    fail "no line 'domain $((i + 1)): loading module $i (\"${strings[i]}\", ...' (the module's string)"
done

if [[ $expect == stop ]]; then
  powered_off 2
  expect '^stop guest: spinning$' "vCPU 1 of the spinning domain ran"
  expect '^stop guest: waited$' "the other domain ran on"
  l1=$(grep -n '^pvmmu: domain 1 shut down' "$log" | head -1 | cut -d: -f1)
  l2=$(grep -n '^stop guest: waited$' "$log" | head -1 | cut -d: -f1)
  { [[ -n $l1 && -n $l2 ]] && ((l1 < l2)); } || fail "the waiting domain did not outlast the spinning one"
  after=$(sed -n '/^pvmmu: domain 1 shut down/,$p' "$log" | grep -c '^stop guest: spinning$')
  ((after <= 1)) || fail "the spinning vCPU printed $after lines after its domain shut down"
elif [[ $expect == isolation ]]; then
  powered_off "$domains"
  n=$(grep -c '^isolation guest: all checks passed$' "$log")
  ((n == domains)) || fail "$n domains passed their checks, expected $domains"
  # Domain 2's frames right after domain 1's: the frames each domain tried
  # just past its ends are the other's.
  read -r f1 n1 < <(sed -nE 's/^domain 1: ([0-9]+) frames from mfn (0x[0-9a-f]+),.*/\2 \1/p' "$log")
  read -r f2 _ < <(sed -nE 's/^domain 2: ([0-9]+) frames from mfn (0x[0-9a-f]+),.*/\2 \1/p' "$log")
  { [[ -n ${f1:-} && -n ${f2:-} ]] && (( f2 == f1 + n1 )); } || fail "domain 2's frames (${f2:-?}) do not follow domain 1's (${f1:-?} + ${n1:-?})"
  # Each domain printed 30 lines a byte per console_io call, all at once:
  # every line must still be whole, the hypervisor's messages at line starts.
  n=$(grep -Ec '^isolation guest: frames 0x[0-9a-f]+\.\.0x[0-9a-f]+ line 0x[0-9a-f]+$' "$log")
  ((n == 30 * domains)) || fail "$n whole 'isolation guest: frames' lines, expected $((30 * domains))"
  n=$(grep -Ec '.isolation guest:|.pvmmu:' "$log")
  ((n == 0)) || fail "$n lines where a guest line or a hypervisor message starts mid-line"
elif [[ $expect == edge ]]; then
  # Domain 1 crashed on its return to 0x800000000000; domain 2 saw every
  # trap it expected and powered off; whichever ended last set the status.
  ((rc == S_POWEROFF || rc == S_CRASH)) ||
    fail "QEMU exit status $rc, expected $S_POWEROFF or $S_CRASH (the last domain's shutdown)"
  expect '^pvmmu: domain 1 vCPU 0 crashed: return to a non-canonical rip: vector 13 \(#GP general protection\), error code 0x0, rip 0x800000000000,' \
    "the domain with no handler was crashed at the non-canonical rip"
  expect '^pvmmu: domain 1 shut down \(crash\) by vCPU 0$' "the crash ended domain 1"
  expect '^pvmmu: domain 2 shut down \(poweroff\) by vCPU 0$' "domain 2 ran on and powered off"
  expect '^edge guest: all checks passed$' "domain 2 saw each trap as the CPU raises it"
  # Domains 3 and 4: MOV SS (TF, a data breakpoint), then INT1. TCG does not
  # hold the #DB over: the guest sees its INT1's #DB and powers off; a CPU
  # (Bochs) does, over the INT1's frame: the domain is crashed (traps.cc).
  for d in 3 4; do
    grep -Eq "^pvmmu: domain $d shut down \(poweroff\) by vCPU 0\$" "$log" ||
      expect "^pvmmu: domain $d vCPU 0 crashed: a #DB on the #DB entry overwrote its frame" \
        "domain $d saw its INT1's #DB or was crashed"
  done
  given_back 4
  refuse 'FAILED|PANIC|EXCEPTION' "the hypervisor itself did not fail"
elif [[ $expect == debug-entry ]]; then
  # selftest=dbentry: domain 2's first #DB (a single step) becomes a
  # #DB held over an INT1, whose frame overwrote the guest's on the #DB IST
  # stack (traps.cc): domain 2 is crashed, domain 1 passes its checks.
  ((rc == S_POWEROFF || rc == S_CRASH)) ||
    fail "QEMU exit status $rc, expected $S_POWEROFF or $S_CRASH (the last domain's shutdown)"
  expect '^selftest: dbentry: the #DB stub.s frame over the guest.s$' "the selftest ran"
  expect '^pvmmu: domain 2 vCPU 0 crashed: a #DB on the #DB entry overwrote its frame' \
    "the domain whose frame was lost was crashed"
  expect '^pvmmu: domain 2 shut down \(crash\) by vCPU 0$' "the crash ended domain 2"
  expect '^pvmmu: domain 1 shut down \(poweroff\) by vCPU 0$' "domain 1 ran on and powered off"
  expect '^edge guest: all checks passed$' "domain 1 saw each trap as the CPU raises it"
  given_back 2
  refuse 'FAILED|PANIC|EXCEPTION' "the hypervisor itself did not fail"
elif [[ $expect == refused-return ]]; then
  # selftest=badreturn: the last domain's first entry (on the last CPU) has
  # SS 0xe013: #GP(0xe010); the other domains run their checks and power off.
  ((rc == S_POWEROFF || rc == S_CRASH)) ||
    fail "QEMU exit status $rc, expected $S_POWEROFF or $S_CRASH (the last domain's shutdown)"
  expect "^selftest: domain $domains starts with a ring-0 stack selector\$" "the self-test ran"
  expect "^pvmmu: domain $domains vCPU 0 crashed: the CPU refused the return to the guest: vector 13 \\(#GP general protection\\), error code 0xe010, rip 0x80002" \
    "the IRETQ's fault crashed the domain"
  expect "^pvmmu: domain $domains shut down \\(crash\\) by vCPU 0\$" "the crash ended the domain"
  for ((d = 1; d < domains; d++)); do
    expect "^pvmmu: domain $d shut down \\(poweroff\\) by vCPU 0\$" "domain $d ran on and powered off"
  done
  n=$(grep -c ': all checks passed$' "$log")
  ((n == domains - 1)) || fail "$n domains passed their checks, expected $((domains - 1))"
  given_back "$domains"
  refuse 'FAILED|PANIC|EXCEPTION' "the hypervisor itself did not fail"
elif [[ $expect == vcpu-down ]]; then
  powered_off 1   # by the last VCPUOP_down
  expect '^stop guest: vCPU 1 went down, vCPU 0 goes down last$' "vCPU 1 went down, the domain ran on"
elif [[ $expect == passed:* ]]; then
  powered_off 1
  expect "^${expect#passed:}: all checks passed\$" "every check of the guest passed"
elif [[ -n $guest ]]; then
  expect '^domain 1: [0-9]+ frames from mfn 0x[0-9a-f]+, virt_base 0x8000000000, entry 0x' "the guest was loaded"
  expect '^core invariants: ok ' "the core's invariants with the guest's domain built"
  expect '^hello guest: running in ring 3$' "the guest's console_io output"
  if [[ $expect == poweroff ]]; then
    powered_off 1
    expect '^hello guest: all checks passed$' "every check of the guest passed"
    expect '^hello guest: through the console ring$' "the console ring was printed"
    n=$(grep -Ec '^hello guest: continued write \.{98}$' "$log")
    ((n == 17)) || fail "$n of the 17 lines of the continued console_io write"
  else
    given_back 1
    ((rc == S_CRASH)) || fail "QEMU exit status $rc, expected $S_CRASH (domain shut down: crash)"
    case $expect in
      crash) why='exception in the guest: vector 6 \(#UD invalid opcode\), error code 0x0, rip 0x80002' ;;
      # The CPU's error code (W | U/S, not present), not the one Xen would
      # have delivered to the guest's handler (U/S clear).
      crash-pf) why='exception in the guest: vector 14 \(#PF page fault\), error code 0x6, rip 0x80002[0-9a-f]+, rsp 0x[0-9a-f]+, cr2 0x1000$' ;;
      # iret does not check RIP (as Xen): the return to it is a #GP(0) at
      # that RIP, as the CPU raises it, crashing a guest without a handler.
      bad-iret) why='return to a non-canonical rip: vector 13 \(#GP general protection\), error code 0x0, rip 0x800000000000' ;;
      bad-stack) why='exception in the guest: vector 6 \(#UD invalid opcode\), error code 0x0, rip 0x80002[0-9a-f]+, rsp 0xffff830000100000' ;;
    esac
    expect "^pvmmu: domain 1 vCPU 0 crashed: $why" "the guest's fault was reported as a crash"
    expect '^pvmmu: domain 1 shut down \(crash\) by vCPU 0$' "the crash ended the domain"
    refuse 'PANIC|EXCEPTION' "the hypervisor itself did not fail"
  fi
elif [[ $selftest == trap ]]; then
  ((rc == S_PANIC)) || fail "QEMU exit status $rc, expected $S_PANIC (HV_EXIT_PANIC)"
  expect '^selftest: raising #UD$' "the self-test ran"
  expect '^EXCEPTION on cpu 0: vector 6 \(#UD invalid opcode\), error code 0x0$' "the exception was reported"
  expect '^  rip ffff8280[0-9a-f]{8}  cs e008 ' "RIP in the image and the hypervisor's CS"
  expect '^PANIC: cpu 0: unhandled exception 6 at rip 0xffff8280' "it ended through panic"
elif [[ $selftest == overflow ]]; then
  ((rc == S_PANIC)) || fail "QEMU exit status $rc, expected $S_PANIC (HV_EXIT_PANIC)"
  expect '^EXCEPTION on cpu 0: vector 8 \(#DF double fault\), error code 0x0$' "#DF reported"
  # CPU 0's guard page is its per-CPU area (0xffff808000000000) + 0x10000.
  expect '^  rsp [0-9a-f]{16}  ss e010  cr2 ffff808000010[0-9a-f]{3} ' "the fault hit the guard page"
elif [[ $selftest == badmap ]]; then
  ((rc == S_FAILURE)) || fail "QEMU exit status $rc, expected $S_FAILURE (HV_EXIT_FAILURE)"
  expect '^invariants: VIOLATION: writable and executable: va 0xffff808004000000 ' "the W+X page"
  expect '^invariants: VIOLATION: user-accessible: va 0xffff808004001000 ' "the user page"
  expect "^invariants: VIOLATION: mapping outside the hypervisor's L4 slots: va 0x0000400000000000 " \
    "the lower-half page"
  expect '^invariants: FAILED \(3 violations\)$' "exactly those three"
  refuse '^invariants: ok' "the check did not pass"
else
  ((rc == S_SUCCESS)) || fail "QEMU exit status $rc, expected $S_SUCCESS (HV_EXIT_SUCCESS)"
  for ((k = 0; k < cpus; k++)); do
    n=$(grep -Ec "^cpu $k online \(apic id [0-9]+" "$log")
    ((n == 1)) || fail "cpu $k announced $n times, expected once"
  done
  n=$(grep -Ec '^cpu [0-9]+ online' "$log")
  ((n == cpus)) || fail "$n CPUs announced, expected $cpus"
  expect '^memory map \(multiboot, [0-9]+ entries\):$' "the memory map header"
  expect '^  \[[0-9a-f]{16}-[0-9a-f]{16}\] usable$' "a usable region"
  expect "^smp: $cpus of $cpus CPUs online$" "the SMP summary"
  expect '^invariants: ok ' "the hypervisor's page-table invariants"
  expect '^core invariants: ok ' "the core's invariants"
  expect '^pvmmu: boot complete' "the end of boot"
  refuse 'VIOLATION|PANIC|EXCEPTION|FAILED' "nothing went wrong"
fi

if ((fails)); then
  echo "qemu boot test: FAILED ($fails checks)"
  exit 1
fi
echo "qemu boot test: passed"
