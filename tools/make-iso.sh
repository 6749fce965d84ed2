#!/usr/bin/env bash
# Makes a BIOS-bootable ISO 9660 image (El Torito; also a hybrid image that
# boots from a USB stick) in which GRUB 2 boots the hypervisor through
# Multiboot 2 (`multiboot2`) and passes each guest kernel as a module
# (`module2`): what `./pvmmu iso` and the ISO boot test (tests/qemu) run.
#
#   make-iso.sh --image PVMMU_HV --out ISO [--append CMDLINE]
#               [--module KERNEL STRING | KERNEL[=STRING]]...
#
# The hypervisor gets CMDLINE; guest kernels are ELF files, one module2 and
# one domain each, in the order given. STRING (default: the file's name) is
# the module's string: a name, then the domain's words (vcpus=N frames=F;
# docs/abi.md §10). In KERNEL=STRING the first '=' ends the path; a path
# that has a '=' of its own goes with --module, which takes it whole. GRUB
# talks on the serial console (COM1, 115200 8N1) and on
# the screen, and boots at once (timeout 0).
#
# Needs grub-mkrescue (Debian grub-common), GRUB's i386-pc modules
# (grub-pc-bin) and xorriso. Exit: 0 done, 1 failed, 2 usage, 77 a tool is
# missing (said on stderr) — the tests' "skip" code.
set -euo pipefail

image='' out='' append=''
paths=() strings=()   # one per module, in order
while (($#)); do
  case $1 in
    --image) image=${2:?--image needs a path}; shift ;;
    --out) out=${2:?--out needs a path}; shift ;;
    --append) append=${2?--append needs a command line}; shift ;;
    --module)
      (($# >= 3)) || { echo "make-iso.sh: --module needs a path and a string" >&2; exit 2; }
      paths+=("$2") strings+=("$3"); shift 2 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make-iso.sh: unknown option '$1'" >&2; exit 2 ;;
    *)
      # KERNEL=STRING: the path ends at the first '='; KERNEL alone: its name.
      if [[ $1 == *=* ]]; then paths+=("${1%%=*}") strings+=("${1#*=}"); else paths+=("$1") strings+=("${1##*/}"); fi ;;
  esac
  shift
done
[[ -n $image && -n $out ]] || { echo "make-iso.sh: --image and --out are required" >&2; exit 2; }
[[ -f $image ]] || { echo "make-iso.sh: no hypervisor image at '$image'" >&2; exit 1; }

missing=()
command -v grub-mkrescue >/dev/null 2>&1 || missing+=("grub-mkrescue (package grub-common)")
command -v xorriso >/dev/null 2>&1 || missing+=("xorriso (package xorriso)")
[[ -f /usr/lib/grub/i386-pc/multiboot2.mod ]] || missing+=("GRUB's BIOS modules, /usr/lib/grub/i386-pc (package grub-pc-bin)")
if ((${#missing[@]})); then
  printf 'make-iso.sh: cannot make a bootable ISO, missing: %s\n' "${missing[@]}" >&2
  echo "make-iso.sh: install them with ./pvmmu deps (tools/deps.txt)" >&2
  exit 77
fi

# grub.cfg is a script: keep the command lines to plain words, so nothing in
# them is GRUB syntax.
safe() { [[ $1 =~ ^[A-Za-z0-9._=,:/+\ -]*$ ]]; }
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
trap 'exit 129' HUP   # through the EXIT trap: no folder left behind
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$tree/boot/grub"
cp "$image" "$tree/boot/pvmmu-hv"
safe "$append" || { printf 'make-iso.sh: --append %q has characters GRUB would read as syntax\n' "$append" >&2; exit 2; }
mods=''
i=0
for ((j = 0; j < ${#paths[@]}; ++j)); do
  path=${paths[j]} string=${strings[j]}
  [[ -f $path ]] || { printf 'make-iso.sh: no guest kernel at %q\n' "$path" >&2; exit 1; }
  safe "$string" || { printf 'make-iso.sh: module string %q has characters GRUB would read as syntax\n' "$string" >&2; exit 2; }
  cp -- "$path" "$tree/boot/guest$i"
  mods+="  module2 /boot/guest$i $string"$'\n'
  i=$((i + 1))
done
title=pvmmu-hv
((i == 0)) || title+=" with $i guest(s)"

cat >"$tree/boot/grub/grub.cfg" <<CFG
# Made by tools/make-iso.sh (./pvmmu iso); docs/boot.md "The ISO".
serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1
terminal_input serial console
terminal_output serial console
set timeout=0
set default=0
menuentry "$title" {
  multiboot2 /boot/pvmmu-hv $append
${mods}  boot
}
CFG

# Only the i386-pc platform: the hypervisor finds ACPI the BIOS way (EBDA,
# BIOS ROM), so a UEFI-only machine needs its CSM (docs/boot.md).
mkdir -p "$(dirname "$out")"
if ! log=$(grub-mkrescue --directory=/usr/lib/grub/i386-pc -o "$out" "$tree" 2>&1); then
  printf '%s\n' "$log" >&2
  echo "make-iso.sh: grub-mkrescue failed" >&2
  exit 1
fi
echo "make-iso.sh: $out: GRUB (BIOS) boots $title by Multiboot 2"
