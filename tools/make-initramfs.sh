#!/usr/bin/env bash
# The initramfs of the Linux tests and of `./pvmmu linux`: Debian's busybox
# (busybox-static, fetched with `apt-get download` and unpacked with
# `dpkg-deb -x` into OUT, as tools/make-xen-host.sh does: never installed on
# the host) and the project's own static user programs (tests/linux/user/*.c,
# built with the host's gcc -static), with an /init that runs them.
#
#   tools/make-initramfs.sh OUT [MODULES]
#       OUT/initramfs.cpio.gz, made again only when the programs, this script,
#       the package or the module changed; prints its path. MODULES: a folder
#       with Linux's xen-privcmd.ko (tools/make-xen-host.sh's
#       base/lib/modules), put into the image as /lib/modules/xen-privcmd.ko
#       for mm-bench's --pvmmu-counts (an image without it is made when the
#       folder has none). Exit 0, 77 when busybox-static
#       cannot be downloaded (no apt, no network, no such package) or the host
#       cannot link static programs, 1 on any other failure.
#
# /init mounts proc, sys and devtmpfs, loads xen-privcmd.ko when the image
# has it (quietly: natively the module refuses to load), prints `linux-user: /init after S s`
# (the kernel's uptime), then, by the kernel's command line:
#   (default)          runs each program (fork-exec, threads, mprotect, timer,
#                      signals), each printing one line `NAME: PASS|FAIL ...`
#                      (a program killed or crashed gets its line from /init),
#                      then `linux-user: N of M passed`, mm-bench's line of
#                      one small mprotect loop with --pvmmu-counts, and `Test result:
#                      SUCCESS` or `Test result: FAILURE` (pvmmu-run's result
#                      line), and powers off (busybox poweroff -f);
#   linux-user=shell   runs busybox's shell on the console (its controlling
#                      terminal); when it exits the machine powers off;
#   linux-bench=ARGS   runs the benchmark mm-bench (tests/linux/user/mm_bench.c,
#                      `./pvmmu bench linux`) with ARGS, its words separated
#                      by ':', prints `linux-bench: exit N` and the result
#                      line, and powers off.
# The programs are also in the image as /usr/libexec/linux-user/NAME.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$here/../tests/linux/user
programs=(fork_exec threads mprotect timer signals)
tools=(mm_bench)   # in the image, not run as tests

out=${1:?usage: tools/make-initramfs.sh OUT [MODULES]}
privcmd=${2:+$2/xen-privcmd.ko}
[[ -n $privcmd && ! -f $privcmd ]] && privcmd=''
abi=$here/../abi/include/pvmmu/abi.h
mkdir -p "$out"
out=$(cd "$out" && pwd)
image=$out/initramfs.cpio.gz
root=$out/root   # busybox-static, unpacked

# One maker at a time (tests running in parallel share OUT).
exec 9>"$out/.lock"
flock 9

fetch() {
  [[ -x $root/bin/busybox && -f $root/.complete ]] && return 0
  for tool in apt-get dpkg-deb; do
    command -v "$tool" >/dev/null || { echo "make-initramfs: no $tool on this machine" >&2; exit 77; }
  done
  mkdir -p "$out/debs"
  rm -f "$out"/debs/busybox-static_*.deb
  # apt-get writes into the current folder (as root it warns that _apt
  # cannot: the download is unsandboxed, which is harmless here).
  if ! (cd "$out/debs" && apt-get download busybox-static >"$out/apt.log" 2>&1); then
    echo "make-initramfs: apt-get download busybox-static failed:" >&2
    tail -3 "$out/apt.log" >&2
    exit 77
  fi
  rm -rf "$root"
  mkdir -p "$root"
  dpkg-deb -x "$out"/debs/busybox-static_*.deb "$root"
  touch "$root/.complete"
}

up_to_date() {
  [[ -s $image && $image -nt $0 && $image -nt $root/.complete ]] || return 1
  local f
  for f in "$src"/*.c "$src"/*.h "$abi" $privcmd; do [[ $image -nt $f ]] || return 1; done
  # The module's presence as the image has it (a stamp beside the image).
  [[ $(cat "$image.modules" 2>/dev/null) == "${privcmd:+privcmd}" ]]
}

fetch
if up_to_date; then
  echo "$image"
  exit 0
fi

img=$(mktemp -d "$out/image.XXXXXX")
trap 'rm -rf "$img"' EXIT
mkdir -p "$img"/{bin,sbin,etc,proc,sys,dev,tmp,root,lib/modules,usr/libexec/linux-user}
[[ -n $privcmd ]] && cp "$privcmd" "$img/lib/modules/xen-privcmd.ko"
cp "$root/bin/busybox" "$img/bin/busybox"
for applet in $("$img/bin/busybox" --list); do
  [[ -e $img/bin/$applet ]] || ln -s busybox "$img/bin/$applet"
done

# The programs: static, so the image needs no C library.
cc=${CC:-gcc}
for p in "${programs[@]}" "${tools[@]}"; do
  name=${p//_/-}
  if ! "$cc" -static -O2 -Wall -Wextra -Werror -pthread -I"$here/../abi/include" -o "$img/usr/libexec/linux-user/$name" "$src/$p.c" \
       2>"$out/cc.log"; then
    if grep -qE 'cannot find -l(c|pthread)' "$out/cc.log"; then
      echo "make-initramfs: $cc cannot link static programs here (libc6-dev's libc.a):" >&2
      tail -3 "$out/cc.log" >&2
      exit 77
    fi
    echo "make-initramfs: $cc failed on $p.c:" >&2
    cat "$out/cc.log" >&2
    exit 1
  fi
done

cat >"$img/init" <<EOF
#!/bin/sh
# The Linux tests' init (tools/make-initramfs.sh).
export PATH=/bin:/sbin:/usr/libexec/linux-user
programs="${programs[*]//_/-}"
EOF
cat >>"$img/init" <<'EOF'
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# The archive has no /dev/console node, so the kernel gave init no
# descriptors: the console (ttyS0 natively, hvc0 on Xen and pvmmu) from devtmpfs.
exec </dev/console >/dev/console 2>&1
# Linux's privcmd driver, for mm-bench --pvmmu-counts (its hypercalls). In a
# domain other than dom0 it lets hypercalls through only with
# unrestricted=1 (drivers/xen/privcmd.c: otherwise an open waits for
# xenstore's "target" key, which no one writes on pvmmu).
[ -f /lib/modules/xen-privcmd.ko ] && insmod /lib/modules/xen-privcmd.ko unrestricted=1 2>/dev/null
echo "linux-user: /init after $(cut -d' ' -f1 /proc/uptime) s; $(nproc) CPUs; Linux $(uname -r)"
case " $(cat /proc/cmdline) " in
*" linux-user=shell "*)
  echo "linux-user: busybox sh on the console; 'exit' or 'poweroff -f' powers the machine off"
  setsid cttyhack sh -l
  poweroff -f ;;
*" linux-bench="*)
  for w in $(cat /proc/cmdline); do
    case $w in linux-bench=*) args=$(echo "${w#linux-bench=}" | tr ':' ' ') ;; esac
  done
  mm-bench $args
  rc=$?
  echo "linux-bench: exit $rc after $(cut -d' ' -f1 /proc/uptime) s"
  if [ "$rc" = 0 ]; then echo "Test result: SUCCESS"; else echo "Test result: FAILURE"; fi
  poweroff -f ;;
esac
passed=0 total=0
for p in $programs; do
  total=$((total + 1))
  timeout 120 "$p"
  rc=$?
  case $rc in
  0) passed=$((passed + 1)) ;;
  1) ;;   # the program printed its FAIL line
  *) echo "$p: FAIL exit status $rc (killed, crashed or timed out after 120 s)" ;;
  esac
done
echo "linux-user: $passed of $total passed after $(cut -d' ' -f1 /proc/uptime) s"
# pvmmu's counts through privcmd (or why there are none), on a small loop:
# tests/linux/linux_user_test.sh reads the line.
timeout 60 mm-bench --pvmmu-counts --workloads threads --tasks 1 --pages 16 --iters 1
if [ "$passed" = "$total" ]; then echo "Test result: SUCCESS"; else echo "Test result: FAILURE"; fi
poweroff -f
EOF
chmod +x "$img/init"
(cd "$img" && find . -mindepth 1 | LC_ALL=C sort | "$root/bin/busybox" cpio -o -H newc 2>/dev/null) |
  gzip -9n >"$image.tmp"
mv "$image.tmp" "$image"
echo "${privcmd:+privcmd}" >"$image.modules"
echo "$image"
