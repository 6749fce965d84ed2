#!/usr/bin/env bash
# A Xen host to run under QEMU: Debian 12's Linux kernel as
# dom0 of Debian's Xen 4.17 (tools/fetch-xen.sh) with an initramfs holding
# busybox and Xen's toolstack (xl, xenstored, xenconsoled and the libraries
# they load), so `pvmmu-run --platform xen-host` runs in a dom0 as it would on
# a real Xen host. Everything comes from Debian packages fetched with
# `apt-get download` and unpacked with `dpkg-deb -x` into OUT (installing them
# would touch the host: its boot set-up, its services); the Xen libraries the
# tools load that libxen-dev already brought (tools/deps.txt) are the host's.
#
#   tools/make-xen-host.sh OUT
#       OUT/vmlinuz (dom0's kernel) and OUT/base.cpio (its initramfs); prints
#       both paths. Made once: later calls reuse them.
#   tools/make-xen-host.sh OUT --image NAME --run SCRIPT [FILE...]
#       OUT/NAME: base.cpio followed by a second archive with each FILE at its
#       own absolute path (with the shared libraries it loads, per ldd) and
#       SCRIPT as /etc/xen-host-run; prints OUT/NAME. Linux unpacks both
#       archives into one initramfs.
#
# The initramfs's /init mounts what the toolstack needs (proc, sys, devtmpfs,
# devpts, xenfs at /proc/xen after loading xen-privcmd, xen-evtchn, xen-gntdev
# and xenfs), starts xenstored, xen-init-dom0 and xenconsoled, prints `xl
# info`, runs /etc/xen-host-run when there is one, prints
# "xen-host: run exit N" and powers dom0 off (Xen then halts: noreboot).
#
# Exit 0 with the files in place, 77 when a package cannot be downloaded (no
# apt, no network, no such package), 1 on any other failure.
set -euo pipefail

kernel_pkg=linux-image-6.1.0-57-amd64 kver=6.1.0-57-amd64
# Not in libxen-dev's dependencies: xl's own packages and libyajl (xl's JSON).
pkgs=("$kernel_pkg" busybox-static xen-utils-4.17 xen-utils-common libxenmisc4.17 libyajl2)

out=${1:?usage: tools/make-xen-host.sh OUT [--image NAME --run SCRIPT [FILE...]]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$out/root   # the packages, unpacked
xenbin=$root/usr/lib/xen-4.17/bin

fetch() {
  [[ -f $root/.complete ]] && return 0
  for tool in apt-get dpkg-deb; do
    command -v "$tool" >/dev/null || { echo "make-xen-host: no $tool on this machine" >&2; exit 77; }
  done
  mkdir -p "$out/debs"
  # apt-get writes into the current folder; as root it warns that _apt cannot
  # (the download is unsandboxed), which is harmless here.
  if ! (cd "$out/debs" && apt-get download "${pkgs[@]}" >"$out/apt.log" 2>&1); then
    echo "make-xen-host: apt-get download ${pkgs[*]} failed:" >&2
    tail -3 "$out/apt.log" >&2
    exit 77
  fi
  rm -rf "$root"
  mkdir -p "$root"
  for deb in "$out"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
  touch "$root/.complete"
}

# FILE and the libraries it loads into the image folder IMG, each at its own
# absolute path, or for the unpacked packages' files where the package puts
# them (their libraries are found first).
copy_with_libs() {
  local file=$1 img=$2 lib
  local to=${file#"$root"}   # a file of the unpacked packages goes where its package puts it
  mkdir -p "$img$(dirname "$to")"
  cp -L "$file" "$img$to"
  file -L "$file" | grep -q 'dynamically linked' || return 0
  # ldd's lines: "name => /path (addr)" or "/path (addr)" for the loader.
  LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu ldd "$file" | awk '/=> \//{print $3} /^\t\//{print $1}' |
    while read -r lib; do
      local at=${lib#"$root"}
      [[ -e $img$at ]] && continue
      mkdir -p "$img$(dirname "$at")"
      cp -L "$lib" "$img$at"
    done
}

make_base() {
  [[ -s $out/base.cpio && -s $out/vmlinuz && $out/base.cpio -nt $0 ]] && return 0
  local img=$out/base
  rm -rf "$img"
  mkdir -p "$img"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,var/log/xen,var/lib/xen,var/run/xen,var/run/xenstored}
  mkdir -p "$img"/etc/xen "$img"/lib/modules
  cp "$root/bin/busybox" "$img/bin/busybox"
  for applet in $("$img/bin/busybox" --list); do
    [[ -e $img/bin/$applet ]] || ln -s busybox "$img/bin/$applet"
  done
  # The daemons and xl, run directly (not through Debian's xen-utils-wrapper,
  # which wants /proc/xen before it exists).
  for b in xl xenstored xenconsoled xen-init-dom0; do
    copy_with_libs "$xenbin/$b" "$img"
    ln -sf "${xenbin#"$root"}/$b" "$img/sbin/$b"
  done
  # xl's defaults (xl.conf(5)): the packaged file.
  cp "$root/etc/xen/xl.conf" "$img/etc/xen/xl.conf" 2>/dev/null || true
  # Debian builds these as modules (xenfs needs xen-privcmd).
  local mods=$root/lib/modules/$kver/kernel/drivers/xen
  for m in xen-privcmd.ko xen-evtchn.ko xen-gntdev.ko xenfs/xenfs.ko; do cp "$mods/$m" "$img/lib/modules/"; done
  cat >"$img/init" <<'EOF'
#!/bin/sh
# dom0's init (tools/make-xen-host.sh): Xen's toolstack up, then the run.
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# The archive has no /dev/console, so the kernel gave init no descriptors:
# the console (hvc0, Xen's console) from devtmpfs.
exec </dev/console >/dev/console 2>&1
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
mount -t tmpfs tmp /run && mkdir -p /run/xen /run/xenstored /var/run
for m in xen-privcmd xen-evtchn xen-gntdev xenfs; do insmod /lib/modules/$m.ko || echo "xen-host: insmod $m failed"; done
mount -t xenfs xenfs /proc/xen || echo "xen-host: no xenfs"
echo "xen-host: dom0 up after $(cut -d' ' -f1 /proc/uptime) s; $(cat /proc/xen/capabilities 2>/dev/null)"
xenstored --pid-file /run/xenstored.pid
xen-init-dom0 >/dev/null || echo "xen-host: xen-init-dom0 failed"
xenconsoled --pid-file=/run/xenconsoled.pid
xl info | grep -E '^(xen_version|nr_cpus|total_memory|free_memory|xen_commandline)' | sed 's/^/xen-host: /'
rc=0
if [ -x /etc/xen-host-run ]; then
  /etc/xen-host-run
  rc=$?
fi
echo "xen-host: run exit $rc"
poweroff -f
EOF
  chmod +x "$img/init"
  (cd "$img" && find . | sort | "$root/bin/busybox" cpio -o -H newc >"$out/base.cpio.tmp" 2>/dev/null)
  mv "$out/base.cpio.tmp" "$out/base.cpio"
  cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz"
}

fetch
make_base
if (($# == 0)); then
  echo "$out/vmlinuz"
  echo "$out/base.cpio"
  exit 0
fi

name='' script=''
files=()
while (($#)); do
  case $1 in
    --image) name=$2; shift ;;
    --run) script=$2; shift ;;
    *) files+=("$(realpath "$1")") ;;
  esac
  shift
done
[[ -n $name && -f $script ]] || { echo "make-xen-host: --image NAME and --run SCRIPT are needed" >&2; exit 2; }
img=$(mktemp -d)
trap 'rm -rf "$img"' EXIT
for f in "${files[@]}"; do copy_with_libs "$f" "$img"; done
mkdir -p "$img/etc"
cp "$script" "$img/etc/xen-host-run"
chmod +x "$img/etc/xen-host-run"
(cd "$img" && find . -mindepth 1 | sort | "$root/bin/busybox" cpio -o -H newc >"$out/overlay.cpio" 2>/dev/null)
cat "$out/base.cpio" "$out/overlay.cpio" >"$out/$name"
rm -f "$out/overlay.cpio"
echo "$out/$name"
