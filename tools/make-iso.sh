#!/usr/bin/env bash
# Makes a bootable ISO (BIOS; GRUB 2 via grub-mkrescue) that loads pvmmu-hv by
# Multiboot 2 with guest kernels as modules (docs/boot.md "Booting from GRUB").
#
#   make-iso.sh OUT.iso HV_IMAGE [--cmdline WORDS] ["KERNEL WORDS"]...
#
# Each "KERNEL WORDS" is one module: a guest kernel file and the words of its
# module string (vcpus=N frames=N). The console is the serial port (COM1,
# 115200), as the hypervisor's; GRUB waits no time. Needs grub-pc-bin,
# grub-common, xorriso and mtools (tools/deps.txt).
set -euo pipefail
out=$1 hv=$2
shift 2
cmdline=''
if [[ ${1:-} == --cmdline ]]; then cmdline=$2; shift 2; fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/boot/grub"
cp "$hv" "$stage/boot/pvmmu-hv"
{
  echo 'set timeout=0'
  echo 'set default=0'
  echo 'serial --unit=0 --speed=115200'
  echo 'terminal_input serial'
  echo 'terminal_output serial'
  echo 'menuentry "pvmmu" {'
  echo "  multiboot2 /boot/pvmmu-hv $cmdline"
  i=0
  for m in "$@"; do
    read -r kernel words <<<"$m"
    cp "$kernel" "$stage/boot/guest$i"
    echo "  module2 /boot/guest$i guest$i $words"
    i=$((i + 1))
  done
  echo '  boot'
  echo '}'
} >"$stage/boot/grub/grub.cfg"
grub-mkrescue -o "$out" "$stage" 2>/dev/null || { echo "make-iso.sh: grub-mkrescue failed" >&2; exit 1; }
echo "make-iso.sh: wrote $out ($# guest modules)"
