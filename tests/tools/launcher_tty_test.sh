#!/usr/bin/env bash
# pvmmu-run as a person runs it: typed at a terminal. `script` gives the
# launcher a pseudo-terminal as its controlling terminal and stdin (CI has
# none), so QEMU, in its own process group, is a background job of that
# terminal: were the terminal its input, -serial stdio would stop it
# (SIGTTIN/SIGTTOU, state T) and the run would time out. Then Ctrl-C's
# SIGINT: the run ends at once, exit 130, no QEMU left behind. With
# --console (docs/boot.md "Console input"): a line typed reaches the console
# guest (tests/qemu/console_guest), the terminal is raw while the run lasts
# and as it was after it, whether the guest ends the run or Ctrl-] does (the
# guest waiting for a line that never comes; exit 130).
#
#   launcher_tty_test.sh PVMMU_RUN CONSOLE_GUEST_CFG
set -uo pipefail
run=${1:?usage: launcher_tty_test.sh PVMMU_RUN CONSOLE_GUEST_CFG}
cfg=${2:?usage: launcher_tty_test.sh PVMMU_RUN CONSOLE_GUEST_CFG}
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

# The terminal's modes (stty -g) before and after a --console run, and one
# taken while it runs by a job in the background (which may read them).
modes() { tr -d '\r' <<<"$1" | grep -E '^[0-9a-f]+(:[0-9a-f]+){10,}$'; }
# The console guest waits for its line, typed 4 s in; the modes are taken at 2 s.
out=$( (sleep 4; printf 'typed at pvmmu-run\n'; sleep 1) | script -qec "stty -g; (sleep 2; stty -g </dev/tty) & $(printf '%q ' "$run" --console --platform qemu --accel tcg --timeout 60 --config "$cfg"); echo rc=\$?; wait; stty -g" /dev/null)
mapfile -t m < <(modes "$out")
grep -q 'rc=0' <<<"$out" || fail "--console at a terminal: no rc=0 (the typed line did not reach the guest?)"
grep -q 'console guest: read: typed at pvmmu-run' <<<"$out" || fail "--console: the typed line was not echoed"
((${#m[@]} == 3)) || fail "--console: expected three stty -g lines, got ${#m[@]}"
[[ ${m[0]} != "${m[1]}" ]] || fail "--console: the terminal was not raw while the run lasted"
[[ ${m[0]} == "${m[2]}" ]] || fail "--console: the terminal's modes changed after the run"

out=$( (sleep 4; printf '\035'; sleep 1) | script -qec "stty -g; $(printf '%q ' "$run" --console --platform qemu --accel tcg --timeout 60 --config "$cfg"); echo rc=\$?; stty -g" /dev/null)
mapfile -t m < <(modes "$out")
grep -q 'rc=130' <<<"$out" || fail "Ctrl-] did not end the run with 130"
grep -q 'ended at the terminal by Ctrl-]' <<<"$out" || fail "no Ctrl-] verdict"
((${#m[@]} == 2)) || fail "Ctrl-]: expected two stty -g lines, got ${#m[@]}"
[[ ${m[0]} == "${m[1]}" ]] || fail "Ctrl-]: the terminal's modes changed after the run"
echo "PASS: a run at a terminal ends SUCCESS; SIGINT ends it with 130 and no QEMU left;" \
  "--console: raw while it runs, restored after it and after Ctrl-]"
