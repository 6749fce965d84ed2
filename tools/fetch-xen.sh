#!/usr/bin/env bash
# Puts Debian 12's Xen 4.17 hypervisor image, unpacked, at OUT/xen-4.17-amd64
# (a Multiboot ELF that QEMU's -kernel boots), without installing the package:
# installing xen-hypervisor-4.17-amd64 would touch the host's boot set-up
# (GRUB entries), so the package is fetched with `apt-get download` and
# unpacked with `dpkg-deb -x` into a folder of the build.
#
#   tools/fetch-xen.sh OUT
#
# Prints the image's path. Exit 0 with the image in place (fetched now or
# before), 77 when the package cannot be downloaded (no apt, no network, no
# such package), 1 on any other failure.
set -euo pipefail

pkg=xen-hypervisor-4.17-amd64 image=xen-4.17-amd64
out=${1:?usage: tools/fetch-xen.sh OUT}
mkdir -p "$out"
if [[ -s $out/$image ]]; then
  echo "$out/$image"
  exit 0
fi
for tool in apt-get dpkg-deb gunzip; do
  command -v "$tool" >/dev/null || { echo "fetch-xen: no $tool on this machine" >&2; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt-get writes into the current folder; as root it warns that _apt cannot
# (the download is unsandboxed), which is harmless here.
if ! (cd "$work" && apt-get download "$pkg" >"$work/apt.log" 2>&1); then
  echo "fetch-xen: apt-get download $pkg failed:" >&2
  tail -3 "$work/apt.log" >&2
  exit 77
fi
deb=$(ls "$work"/"$pkg"_*.deb)
dpkg-deb -x "$deb" "$work/root"
gunzip -c "$work/root/boot/$image.gz" >"$out/$image.tmp"
mv "$out/$image.tmp" "$out/$image"
echo "fetch-xen: $(basename "$deb") unpacked" >&2
echo "$out/$image"
