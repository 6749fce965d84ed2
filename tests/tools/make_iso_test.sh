#!/usr/bin/env bash
# tools/make-iso.sh puts the file it is given in the ISO, whatever its path
# holds: a kernel path with '=' (KERNEL=STRING ends the path at the first
# '=', which would put `dir/k` in the ISO for `dir/k=v`) goes whole through
# --module, as the Bochs back end and ./pvmmu iso pass it.
#
#   make_iso_test.sh PVMMU_HV KERNEL
set -uo pipefail
image=${1:?usage: make_iso_test.sh PVMMU_HV KERNEL} kernel=${2:?usage: make_iso_test.sh PVMMU_HV KERNEL}
make_iso=$(dirname "$0")/../../tools/make-iso.sh
command -v xorriso >/dev/null || { echo "SKIP: no xorriso"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cp "$kernel" "$dir/k=v"
echo "the wrong file" >"$dir/k"
"$make_iso" --image "$image" --out "$dir/a.iso" --module "$dir/k=v" "k vcpus=1 frames=4096"
rc=$?
((rc == 77)) && exit 77
((rc == 0)) || fail "make-iso.sh --module: exit $rc"
xorriso -osirrox on -indev "$dir/a.iso" -extract /boot/guest0 "$dir/guest0" >/dev/null 2>&1 ||
  fail "no /boot/guest0 in the ISO"
cmp -s "$dir/guest0" "$dir/k=v" || fail "the ISO's module is not the file 'k=v'"
xorriso -osirrox on -indev "$dir/a.iso" -extract /boot/grub/grub.cfg "$dir/grub.cfg" >/dev/null 2>&1
grep -q 'module2 /boot/guest0 k vcpus=1 frames=4096$' "$dir/grub.cfg" || fail "the module string is not the one given"
echo "PASS: a kernel path with '=' is the file in the ISO, with its own string"
