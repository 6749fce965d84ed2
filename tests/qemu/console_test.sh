#!/usr/bin/env bash
# Console input through the launcher (docs/boot.md "Console input"): a line
# piped into `pvmmu-run --console` reaches the console guest
# (tests/qemu/console_guest), which echoes it and checks it; without
# --console the guest gets nothing and the run times out, which shows the
# line came through the launcher's forwarding and nowhere else.
#
#   console_test.sh PVMMU_RUN CONSOLE_GUEST_CFG
set -uo pipefail
run=${1:?usage: console_test.sh PVMMU_RUN CFG}
cfg=${2:?usage: console_test.sh PVMMU_RUN CFG}
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: no qemu-system-x86_64"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

out=$(printf 'typed at pvmmu-run\n' | "$run" --console --platform qemu --accel tcg --timeout 60 --config "$cfg" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 8
((rc == 0)) || fail "with --console: exit $rc, expected 0"
grep -q '^console guest: read: typed at pvmmu-run$' <<<"$out" || fail "the guest did not echo the line"

out=$(printf 'typed at pvmmu-run\n' | "$run" --platform qemu --accel tcg --timeout 8 --config "$cfg" 2>&1)
rc=$?
printf '%s\n' "$out" | tail -n 2
((rc == 6)) || fail "without --console: exit $rc, expected 6 (no input, timed out)"
! grep -q 'console guest: read:' <<<"$out" || fail "the guest read a line without --console"
echo "PASS: the piped line reached the console guest with --console, and only then"
