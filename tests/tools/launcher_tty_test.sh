#!/usr/bin/env bash
# pvmmu-run as a person runs it: typed at a terminal. `script` gives the
# launcher a pseudo-terminal as its controlling terminal and stdin (CI has
# none), so QEMU, in its own process group, is a background job of that
# terminal: were the terminal its input, -serial stdio would stop it
# (SIGTTIN/SIGTTOU, state T) and the run would time out. Then Ctrl-C's
# SIGINT: the run ends at once, exit 130, no QEMU left behind.
#
#   launcher_tty_test.sh PVMMU_RUN
set -uo pipefail
run=${1:?usage: launcher_tty_test.sh PVMMU_RUN}
command -v script >/dev/null || { echo "SKIP: no script(1) (util-linux)"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: no qemu-system-x86_64"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

out=$(script -qec "$(printf '%q ' "$run" --platform qemu --accel tcg --timeout 100 atomic-ad-preserve)" /dev/null </dev/null)
rc=$?
printf '%s\n' "$out" | tail -n 3
((rc == 0)) || fail "at a terminal: exit $rc, expected 0"
grep -q 'atomic-ad-preserve: SUCCESS (exit 0)' <<<"$out" || fail "no SUCCESS line at a terminal"

# SIGINT once the machine runs (its first console line came).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$run" --platform qemu --accel tcg --timeout 100 atomic-ad-preserve >"$log" 2>&1 &
pid=$!
for _ in $(seq 200); do grep -q '^pvmmu' "$log" && break; sleep 0.1; done
qemu=$(pgrep -P "$pid" || true)
[[ -n $qemu ]] || fail "no QEMU under pvmmu-run $pid"
kill -INT "$pid"
wait "$pid"
rc=$?
tail -n 1 "$log"
((rc == 130)) || fail "after SIGINT: exit $rc, expected 130"
grep -q 'INTERRUPTED (exit 130).*interrupted by SIGINT' "$log" || fail "no INTERRUPTED line"
! kill -0 "$qemu" 2>/dev/null || fail "QEMU $qemu still runs after the launcher ended"
echo "PASS: a run at a terminal ends SUCCESS; SIGINT ends it with 130 and no QEMU left"
