# shellcheck shell=bash
# ./pvmmu run: a guest program on one of pvmmu-run's platforms.
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage_run() {
  cat <<'EOF'
usage: ./pvmmu run [ARGS]

Installs missing packages, builds build/, then runs build/tools/pvmmu-run with
ARGS (launches a domain running a guest program) on one of its platforms:
  --platform sim    the simulated machine (default)
  --platform qemu   the bare-metal hypervisor under QEMU (KVM when /dev/kvm is
                    usable and passes the self-test, --kvm-self-test, else TCG
                    with a line saying why; --accel kvm|tcg|tcg-icount chooses)
  --platform xen    the guest kernel as dom0 of Debian's Xen 4.17 under QEMU's
                    TCG (the image is fetched into build/xen when missing)
  --platform xen-host
                    in the dom0 of a Xen host (as root): the guest kernel as a
                    PV domU of that Xen, created through libxenlight, its
                    console read from xenconsoled's pty
  --platform bochs  pvmmu's GRUB ISO under Bochs 2.7 (Ice Lake CPU model)
  --platform libvirt[=URI]
                    the qemu platform's machine as a libvirt domain, through
                    libvirt's embedded QEMU driver in build/libvirt-embed (no
                    daemon) unless a URI names one (qemu:///system)
Exit: 0 SUCCESS, 3 SKIP, 4 ERROR, 5 FAILURE, 6 CRASHED (or timed out), 7
REFUSED (the hypervisor did not build a domain: named, with the loader's
reason), 2 usage error or an unreadable config or kernel, 128+N ended by
signal N (Ctrl-C: 130; the machine is stopped, the run's files removed).
With several --config, one line per domain; 0 only if every domain powered off.
What is typed goes to the guest's console (pvmmu-run --console, always
passed): at a terminal in raw mode, so Ctrl-C reaches the guest; Ctrl-] ends
the run (exit 130) and the terminal is restored; piped input is forwarded.
e.g.
  ./pvmmu run --platform qemu --cpus 2 atomic-ad-preserve
  ./pvmmu run --platform xen tlb-shootdown
  ./pvmmu run --platform libvirt --accel tcg flag-range-basic
`./pvmmu run --help` also shows pvmmu-run's own options once built.
EOF
}

cmd_run() {
  local tool="$ROOT/build/tools/pvmmu-run"
  if is_help "${1:-}"; then usage_run; forward_help "$tool"; return 0; fi
  maybe_deps
  build_tree main || die "build of build/ failed"
  [[ -x $tool ]] || die "guest runs are not built yet: build/tools/pvmmu-run does not exist"
  exec "$tool" --console "$@"
}

