#!/usr/bin/env bash
# What `virsh list --all` shows on a libvirt daemon host for pvmmu machines
# that ended: two persistent domains defined from
# `pvmmu-run --print-xml` (virsh define, virsh start, as a user of virsh or
# virt-manager would), one running a passing guest program, one whose
# hypervisor panics on purpose (--hv-args selftest=trap). The first must end
# "shut off" (reason shutdown: pvmmu-hv's ACPI soft-off), the second stay
# "crashed" (reason panicked: pvpanic, <on_crash>preserve). Both are removed
# at the end. Exit 77 (SKIP) where no daemon answers at URI.
#
#   libvirt_virsh_states.sh PVMMU_RUN [URI]     (URI default qemu:///system)
set -uo pipefail
run=$1 uri=${2:-qemu:///system}
v() { virsh -q -c "$uri" "$@"; }
if ! command -v virsh >/dev/null 2>&1 || ! v version >/dev/null 2>&1; then
  echo "SKIP: no libvirt daemon answers at $uri (libvirtd not running?), so virsh's states were NOT tested."
  exit 77
fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
work=$(mktemp -d)
off=pvmmu-states-off-$$ panicked=pvmmu-states-panic-$$
cleanup() {
  for d in $off $panicked; do
    v destroy "$d" >/dev/null 2>&1
    v undefine "$d" >/dev/null 2>&1
  done
  rm -rf "$work"
}
trap cleanup EXIT

# define NAME [pvmmu-run options]: the generated XML, renamed, defined and started.
define() {
  local name=$1
  shift
  "$run" --accel tcg "$@" --print-xml flag-range-basic |
    sed "s|<name>pvmmu-flag-range-basic</name>|<name>$name</name>|" >"$work/$name.xml" || return 1
  v define "$work/$name.xml" >/dev/null && v start "$name" >/dev/null
}
define "$off" || fail "cannot define and start $off"
define "$panicked" --hv-args selftest=trap || fail "cannot define and start $panicked"

# Both end by themselves: wait for neither to run any more.
for ((i = 0; i < 60; i++)); do
  s1=$(v domstate "$off" 2>/dev/null) s2=$(v domstate "$panicked" 2>/dev/null)
  [[ $s1 != running && $s2 != running ]] && break
  sleep 1
done
echo "---- virsh -c $uri list --all ----"
v list --all | grep -E "pvmmu-states-(off|panic)-$$"
echo "----"
list=$(v list --all)
grep -Eq "^ *- +$off +shut off\$" <<<"$list" || fail "$off is not listed as 'shut off'"
grep -Eq "^ *[0-9]+ +$panicked +crashed\$" <<<"$list" || fail "$panicked is not listed as 'crashed'"
r1=$(v domstate --reason "$off") r2=$(v domstate --reason "$panicked")
echo "domstate --reason: $off: $r1; $panicked: $r2"
[[ $r1 == "shut off (shutdown)" ]] || fail "$off: '$r1', expected 'shut off (shutdown)'"
[[ $r2 == "crashed (panicked)" ]] || fail "$panicked: '$r2', expected 'crashed (panicked)'"
((fails == 0)) && echo "virsh states: passed" || echo "virsh states: FAILED ($fails checks)"
((fails == 0))
