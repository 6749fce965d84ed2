#!/usr/bin/env bash
# How a pvmmu machine ends under libvirt, through
# pvmmu-run --platform libvirt[=URI] (default: the embedded driver, no daemon):
# a guest program that passes must leave its domain "shut off (shutdown)"
# (pvmmu-hv's ACPI soft-off, <on_poweroff>destroy), one whose hypervisor
# panics on purpose (pvmmu-hv's command line selftest=trap: #UD after boot)
# "crashed (panicked)" (pvpanic, <on_crash>preserve), as libvirt's lifecycle
# events and state say. Exit 77 (SKIP) where pvmmu-run cannot use libvirt.
#
#   libvirt_states_test.sh PVMMU_RUN [URI]
set -uo pipefail
run=$1 platform=libvirt${2:+=$2}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# one EXIT WORDS [pvmmu-run options]: a run must exit EXIT and say its domain ended WORDS.
one() {
  local want=$1 words=$2 out rc
  shift 2
  echo "running: $run --platform $platform --accel tcg --timeout 50 $* flag-range-basic"
  out=$("$run" --platform "$platform" --accel tcg --timeout 50 "$@" flag-range-basic 2>&1)
  rc=$?
  echo "$out"
  if ((rc == 3)); then
    echo "SKIP: pvmmu-run cannot use libvirt here (above), so the states were NOT tested."
    exit 77
  fi
  ((rc == want)) || fail "pvmmu-run exit $rc, expected $want"
  grep -Eq "^pvmmu-run: libvirt: domain pvmmu-flag-range-basic-[0-9]+-[0-9]+ ended $words\$" <<<"$out" ||
    fail "no line 'pvmmu-run: libvirt: domain ... ended $words'"
}

one 0 'shut off \(shutdown\)'
# The panic's run is a crash to pvmmu-run (6): pvmmu-hv's PANIC line, not a result.
one 6 'crashed \(panicked\)' --hv-args selftest=trap
((fails == 0)) && echo "libvirt states: passed" || echo "libvirt states: FAILED ($fails checks)"
((fails == 0))
