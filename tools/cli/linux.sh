# shellcheck shell=bash
# ./pvmmu linux: Debian's Linux 6.1 PV kernel to a busybox shell, on pvmmu,
# natively or on Xen 4.17, all under QEMU.
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage_linux() {
  cat <<'EOF'
usage: ./pvmmu linux [--vcpus N] [--platform pvmmu|native|xen] [--mem MIB] [--accel tcg|kvm]
                     [--test] [--timeout S]

Boots Debian 12's Linux 6.1 (linux-image-6.1.0-57-amd64, the kernel of the
xen-host test; fetched into build/xen-host by tools/make-xen-host.sh) with an
initramfs of busybox and the project's user programs (tools/make-initramfs.sh,
into build/linux) under qemu-system-x86_64, and leaves you at its busybox
shell on the console; `exit` (or `poweroff -f`) powers the machine off.
Nothing is installed on the host: the packages are fetched with
`apt-get download` and unpacked.

  --platform pvmmu  a PV domain of pvmmu (default): `./pvmmu run --platform
                    qemu --config` with an xl.cfg naming the kernel and the
                    initramfs as its `ramdisk`; the console is Linux's hvc0
                    through the hypervisor, what you type its input
                    (pvmmu-run --console; Ctrl-] ends the run)
  --platform native the same kernel as an ordinary x86 kernel (console ttyS0)
  --platform xen    dom0 of Debian's Xen 4.17 (tools/fetch-xen.sh into
                    build/xen; a CPU without SMAP under TCG, as the xen-host
                    test); Xen hands the serial console's input to dom0
  --vcpus N         vCPUs (default 1)
  --mem MIB         the domain's (native: the machine's) memory (default 256)
  --accel A         native: tcg (default) or kvm; pvmmu: as ./pvmmu run's
                    --accel (tcg by default here, the CPU model pvmmu's Linux
                    test uses); xen: tcg
  --test            run the user programs instead of the shell, print their
                    results and power off (what the Linux tests do)
  --timeout S       stop the machine after S seconds (default: no limit)

native and xen: QEMU's serial console is your terminal (Ctrl-A X quits QEMU).
Exit status: 0 the machine powered off (with --test: every program passed),
non-zero otherwise (pvmmu: ./pvmmu run's exit codes).
e.g.
  ./pvmmu linux --platform native
  ./pvmmu linux --platform xen --vcpus 2
  ./pvmmu linux --vcpus 2 --test
Docs: docs/boot.md "Linux on pvmmu".
EOF
}

cmd_linux() {
  local platform=pvmmu vcpus=1 mem=256 accel=tcg limit='' test=0
  while (($#)); do
    case $1 in
      -h | --help | help) usage_linux; return 0 ;;
      --platform | --vcpus | --mem | --accel | --timeout)
        (($# >= 2)) || usage_error linux "$1 needs a value"
        case $1 in
          --platform) platform=$2 ;;
          --vcpus) vcpus=$2 ;;
          --mem) mem=$2 ;;
          --accel) accel=$2 ;;
          --timeout) limit=$2 ;;
        esac
        shift ;;
      --test) test=1 ;;
      *) usage_error linux "unknown option '$1'" ;;
    esac
    shift
  done
  [[ $platform =~ ^(pvmmu|native|xen)$ ]] || usage_error linux "--platform takes pvmmu, native or xen, not '$platform'"
  [[ $vcpus =~ ^[1-9][0-9]*$ && $vcpus -le 64 ]] || usage_error linux "--vcpus takes 1..64, not '$vcpus'"
  [[ $mem =~ ^[1-9][0-9]*$ && $mem -ge 64 && $mem -le 2048 ]] || usage_error linux "--mem takes 64..2048 (MiB), not '$mem'"
  [[ -z $limit || $limit =~ ^[1-9][0-9]*$ ]] || usage_error linux "--timeout takes a number of seconds, not '$limit'"
  case $platform:$accel in
    native:tcg | native:kvm | pvmmu:tcg | pvmmu:tcg-icount | pvmmu:kvm | xen:tcg) ;;
    *) usage_error linux "--platform $platform does not take --accel $accel" ;;
  esac

  maybe_deps
  command -v qemu-system-x86_64 >/dev/null 2>&1 ||
    die "qemu-system-x86_64 not found: run ./pvmmu deps (Debian package qemu-system-x86)"
  local bdir=$ROOT/build rc=0
  say "fetching Debian's Linux kernel (tools/make-xen-host.sh build/xen-host)"
  "$ROOT/tools/make-xen-host.sh" "$bdir/xen-host" >/dev/null || rc=$?
  ((rc == 0)) || die "Debian's linux-image package could not be fetched or unpacked (exit $rc; see above)"
  local initrd
  say "making the initramfs (tools/make-initramfs.sh build/linux)"
  initrd=$("$ROOT/tools/make-initramfs.sh" "$bdir/linux") || die "the initramfs could not be made (see above)"
  local vmlinuz=$bdir/xen-host/vmlinuz
  local words="loglevel=4 panic=-1"
  ((test)) || words+=" linux-user=shell"

  local -a run=()
  case $platform in
    native)
      run=(qemu-system-x86_64 -accel "$accel" -cpu "$([[ $accel == kvm ]] && echo host || echo max)" -machine pc
           -smp "$vcpus" -m "$mem" -kernel "$vmlinuz" -initrd "$initrd" -append "console=ttyS0 $words"
           -display none -serial mon:stdio -monitor none -no-reboot) ;;
    xen)
      local xen
      xen=$("$ROOT/tools/fetch-xen.sh" "$bdir/xen") || die "Xen 4.17 could not be fetched (tools/fetch-xen.sh)"
      # Xen loads dom0 from a bzImage itself; its module string is the
      # kernel's command line, the next module dom0's initrd.
      run=(qemu-system-x86_64 -accel tcg -cpu max,-smap -machine pc -smp "$vcpus" -m "$((mem + 256))"
           -kernel "$xen" -initrd "$vmlinuz console=hvc0 $words,$initrd"
           -append "console=com1 dom0_mem=${mem}M dom0_max_vcpus=$vcpus"
           -display none -serial mon:stdio -monitor none -no-reboot) ;;
    pvmmu)
      build_tree main pvmmu-run || die "build of build/ failed"
      local cfg
      cfg=$(mktemp --suffix=.cfg)
      # shellcheck disable=SC2064 # the path is known here
      trap "rm -f '$cfg'" EXIT
      cat >"$cfg" <<CFG
name = "linux"
kernel = "$vmlinuz"
ramdisk = "$initrd"
vcpus = $vcpus
memory = $mem
extra = "console=hvc0 $words"
CFG
      # The CPU model of the Linux tests on pvmmu (tests/CMakeLists.txt):
      # TCG's without SMAP, so Linux's ring-3 IRETs are not refused.
      local -a cpu=() input=()
      [[ $accel != kvm ]] && cpu=(--cpu qemu64,+smep,+umip)
      # The shell's input: what is typed goes to hvc0 (pvmmu-run --console).
      ((test)) || input=(--console)
      run=("$bdir/tools/pvmmu-run" --platform qemu --accel "$accel" "${cpu[@]}" "${input[@]}"
           --timeout "${limit:-31536000}" --config "$cfg") ;;
  esac
  if [[ -n $limit && $platform != pvmmu ]]; then run=(timeout --foreground --kill-after=5 "$limit" "${run[@]}"); fi
  say "booting Linux ($platform, $vcpus vCPUs): ${run[*]}"
  rc=0
  if ((test)) && [[ $platform != pvmmu ]]; then
    # QEMU exits 0 on any power-off: the programs' verdict is the console's.
    local log
    log=$(mktemp)
    "${run[@]}" </dev/null | tee "$log" || rc=$?
    ((rc == 0)) && ! grep -q '^Test result: SUCCESS' "$log" && rc=1
    rm -f "$log"
  else
    "${run[@]}" || rc=$?
  fi
  if ((rc == 0)); then say "${C_GREEN}the machine powered off${C_OFF}"; else say "${C_RED}the run ended with status $rc${C_OFF}"; fi
  return "$rc"
}
