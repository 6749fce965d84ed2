#!/usr/bin/env bash
# pvmmu-run --config as a user meets it, with what it is handed taken as
# untrusted (docs/security.md "The launcher's inputs").
#
#   launcher_config_test.sh PVMMU_RUN inputs    host only: files that are no
#       regular file, a NUL byte, a missing file, a name with escape sequences;
#       each a clear error (exit 2), never an abort, a hang or a raw escape
#   launcher_config_test.sh PVMMU_RUN domains   boots (QEMU): two domains, the
#       last one crashed on purpose (selftest=badreturn): one line per domain,
#       exit 6; a kernel the hypervisor refuses: exit 7 naming the domain and
#       the loader's reason
set -uo pipefail
run=${1:?usage: launcher_config_test.sh PVMMU_RUN inputs|domains}
mode=${2:?usage: launcher_config_test.sh PVMMU_RUN inputs|domains}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect CODE REGEX ARGS...: pvmmu-run ARGS exits CODE and prints REGEX (its
# output left in $out).
expect() {
  local code=$1 regex=$2 rc
  shift 2
  out=$(timeout 120 "$run" "$@" 2>&1)
  rc=$?
  printf '%s\n' "$out" | grep 'pvmmu-run' | tail -n 4
  ((rc == code)) || fail "pvmmu-run $*: exit $rc, expected $code"
  grep -qE -- "$regex" <<<"$out" || fail "pvmmu-run $*: no line matching '$regex'"
  if grep -q $'\033' <<<"$out"; then fail "pvmmu-run $*: an escape byte reached the terminal"; fi
}

case $mode in
inputs)
  printf 'kernel = "."\n' >"$dir/dot.cfg"
  expect 2 "kernel: not a guest program, and the file '\\.': not a regular file" --config "$dir/dot.cfg"
  printf 'kernel = "/dev/zero"\n' >"$dir/zero.cfg"
  expect 2 "the file '/dev/zero': not a regular file" --config "$dir/zero.cfg"
  mkfifo "$dir/fifo"
  printf 'kernel = "%s"\n' "$dir/fifo" >"$dir/fifo.cfg"
  expect 2 "fifo': not a regular file" --timeout 5 --config "$dir/fifo.cfg"
  printf 'kernel = "a\0b"\n' >"$dir/nul.cfg"
  expect 2 "has a NUL byte" --config "$dir/nul.cfg"
  expect 2 "missing.cfg': No such file or directory" --config "$dir/missing.cfg"
  # A kernel bigger than the domain's memory (4 MiB) is refused unread.
  truncate -s 5M "$dir/big"
  printf 'kernel = "%s"\nmemory = 4\n' "$dir/big" >"$dir/big.cfg"
  expect 2 "5242880 bytes, more than the 4194304" --config "$dir/big.cfg"
  # A name and a kernel path with escape sequences: shown escaped. xen-host
  # prints the domain's line, then is a SKIP outside a Xen dom0.
  cp "$0" "$dir/"$'\033[31mk'
  printf 'name = "a\033]0;title\007b"\nkernel = "%s"\n' "$dir/"$'\033[31mk' >"$dir/esc.cfg"
  out=$(timeout 60 "$run" --platform xen-host --config "$dir/esc.cfg" 2>&1)
  printf '%s\n' "$out" | head -n 2
  grep -qF 'a\x1b]0;title\x07b: kernel ' <<<"$out" || fail "the name is not shown escaped"
  grep -qF '\x1b[31mk' <<<"$out" || fail "the kernel path is not shown escaped"
  if grep -q $'\033' <<<"$out"; then fail "an escape byte reached the terminal"; fi
  # `ramdisk` is checked as the kernel is; a key the launcher does not use
  # is a warning naming it, one that changes what boots an error.
  printf 'kernel = "%s"\nramdisk = "."\n' "$0" >"$dir/rd-dir.cfg"
  expect 2 "ramdisk: '\\.': not a regular file" --config "$dir/rd-dir.cfg"
  : >"$dir/empty"
  printf 'kernel = "%s"\nramdisk = "%s"\n' "$0" "$dir/empty" >"$dir/rd-empty.cfg"
  expect 2 "ramdisk: '.*/empty' is empty" --config "$dir/rd-empty.cfg"
  printf 'kernel = "%s"\nmemory = 4\nramdisk = "%s"\n' "$0" "$dir/big" >"$dir/rd-big.cfg"
  expect 2 "ramdisk: .*5242880 bytes, more than the 4194304" --config "$dir/rd-big.cfg"
  printf 'kernel = "%s"\nbootloader = "pygrub"\n' "$0" >"$dir/pygrub.cfg"
  expect 2 "\`bootloader\` is set" --config "$dir/pygrub.cfg"
  printf 'kernel = "%s"\nmaxmem = 512\non_crash = "preserve"\n' "$0" >"$dir/unused.cfg"
  expect 3 "warning: '.*unused.cfg': \`maxmem\` is not used by pvmmu-run: ignored" --platform xen-host \
    --config "$dir/unused.cfg"
  grep -qF -- "\`on_crash\` is not used" <<<"$out" || fail "the second unused key is not named"
  # The grant table limits: past what the hypervisor takes, refused before
  # anything boots, naming the key and its range.
  printf 'kernel = "%s"\nmax_grant_frames = 65\n' "$0" >"$dir/gnt.cfg"
  expect 2 "gnt.cfg': \`max_grant_frames\` must be a number 1\\.\\.64" --config "$dir/gnt.cfg"
  printf 'kernel = "%s"\nmax_maptrack_frames = "lots"\n' "$0" >"$dir/mt.cfg"
  expect 2 "mt.cfg': \`max_maptrack_frames\` must be a number 0\\.\\.1024" --config "$dir/mt.cfg"
  echo "PASS: every hostile input refused with its path and reason, nothing raw on the terminal"
  ;;
domains)
  command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: no qemu-system-x86_64"; exit 77; }
  cfg=$(dirname "$0")/../qemu/configs
  # The last domain built starts on a ring-0 stack selector and crashes; the
  # first powers off. The run is CRASHED, whichever ends last.
  expect 6 'domain 2 \(tlb\): CRASHED \(exit 6\): shut down \(crash\)' --accel tcg --timeout 100 \
    --hv-args selftest=badreturn --config "$cfg/atomic-ad.cfg" --config "$cfg/tlb.cfg"
  grep -q 'domain 1 (atomic-ad): powered off' <<<"$out" || fail "domain 1 is not said to have powered off"
  printf 'not an ELF\n' >"$dir/notelf"
  printf 'name = "bad"\nkernel = "%s"\nmemory = 16\n' "$dir/notelf" >"$dir/bad.cfg"
  expect 7 'REFUSED \(exit 7\): domain 2 \(bad\): refused: shorter than an ELF header' --accel tcg --timeout 60 \
    --config "$cfg/atomic-ad.cfg" --config "$dir/bad.cfg"
  echo "PASS: each domain judged by its own end; a refused domain is exit 7 with its reason"
  ;;
*) fail "unknown mode '$mode'" ;;
esac
