#!/usr/bin/env bash
# Debian's Linux 6.1 (a Xen PV kernel written by others, CONFIG_XEN_PV) booted
# unchanged as a PV domain of pvmmu under QEMU's TCG, through the launcher as
# a user would (`pvmmu-run --platform qemu --config`, `kernel = "vmlinuz"`):
# how far it gets ("kernels written by others"; docs/results.md).
#
#   linux_guest_test.sh --run PVMMU_RUN --source DIR --build DIR
#                       --furthest MILESTONE --stop REGEX [--timeout S] [--cpu MODEL]
#                       [--vcpus N]
#
# The kernel is the dom0 kernel of the xen-host test: tools/make-xen-host.sh
# fetches Debian's linux-image package with `apt-get download` into
# BUILD/xen-host (or finds it there) and puts the bzImage at
# BUILD/xen-host/vmlinuz; SKIP (77) when it cannot be fetched. Its ramdisk
# is the Linux tests' initramfs (tools/make-initramfs.sh, BUILD/linux), so a
# Linux that gets to /init runs the user programs (tests/linux/user/): the
# last milestones are theirs.
#
# The milestones, in order, each a line of the console; the test prints the
# ones reached. It passes when the launcher unpacked the bzImage, the
# furthest milestone reached is --furthest and a line matches --stop (why it
# stops there); both are pinned in tests/CMakeLists.txt. A run that gets
# further fails too, so that the pin and docs/results.md move on with it.
# Exit: 0 pass, 1 fail, 77 skip.
set -uo pipefail

run='' src='' build='' stop='' furthest='' limit=60 cpu='' vcpus=1
while (($#)); do
  case $1 in
    --run) run=$2; shift ;;
    --source) src=$2; shift ;;
    --build) build=$2; shift ;;
    --stop) stop=$2; shift ;;
    --furthest) furthest=$2; shift ;;
    --timeout) limit=$2; shift ;;
    --cpu) cpu=$2; shift ;;
    --vcpus) vcpus=$2; shift ;;
    *) echo "linux_guest_test.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ -x $run && -d $src && -d $build && -n $stop && -n $furthest ]] ||
  { echo "linux_guest_test.sh: --run, --source, --build, --furthest and --stop are needed" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: no qemu-system-x86_64"; exit 77; }

vmlinuz=$build/xen-host/vmlinuz
if [[ ! -s $vmlinuz ]]; then
  "$src/tools/make-xen-host.sh" "$build/xen-host" >/dev/null
  case $? in 0) ;; 77) echo "SKIP: Debian's linux-image package cannot be fetched (tools/make-xen-host.sh)"; exit 77 ;; *) exit 1 ;; esac
fi
[[ -s $vmlinuz ]] || { echo "FAIL: no $vmlinuz after tools/make-xen-host.sh"; exit 1; }
initrd=$("$src/tools/make-initramfs.sh" "$build/linux")
case $? in 0) ;; 77) echo "SKIP: the initramfs cannot be made (tools/make-initramfs.sh, above)"; exit 77 ;; *) exit 1 ;; esac

cfg=$(mktemp --suffix=.cfg) log=$(mktemp)
trap 'rm -f "$cfg" "$log"' EXIT
cat >"$cfg" <<CFG
name = "linux"
kernel = "$vmlinuz"
ramdisk = "$initrd"
vcpus = $vcpus
memory = 256
extra = "earlyprintk=xen console=hvc0 loglevel=8"
CFG
start=$(date +%s.%N)
"$run" --platform qemu --accel tcg ${cpu:+--cpu "$cpu"} --timeout "$limit" --config "$cfg" >"$log" 2>&1
code=$?
secs=$(printf "%.1f" "$(echo "$(date +%s.%N) - $start" | bc)")
sed -i 's/\r$//' "$log"
echo "linux_guest_test: pvmmu-run exit $code after ${secs} s ($vcpus vCPUs); the console's last lines:"
tail -n 15 "$log" | sed 's/^/  | /'

# name|regex: what each milestone's line looks like.
milestones=(
  "unpacked|^pvmmu-run: kernel .*: a bzImage, its ELF \([0-9]+ bytes\) unpacked"
  "module read|^domain 1: loading module 0 "
  "domain built|^domain 1: [0-9]+ frames from mfn"
  "ramdisk placed|^domain 1: initial module at 0x[0-9a-f]+ \(pfn 0x[0-9a-f]+\), [0-9]+ bytes; start_info mod_start 0x[0-9a-f]+ \(SIF_MOD_START_PFN\)"
  "vCPU started|^domain 1: starting vCPU 0"
  "Linux's first words|^about to get started"
  "banner|Linux version 6\.1"
  "start_kernel's memory set-up|Zone ranges:"
  "per-CPU areas|setup_percpu:"
  "scheduler|sched_clock:|Dentry cache hash table"
  "console|printk: console \[hvc0\] enabled"
  "init|Run /init as init process|Kernel panic - not syncing: VFS"
  "user space|^linux-user: /init after"
  "user programs|^Test result: SUCCESS"
)
reached=0 last=''
for i in "${!milestones[@]}"; do
  name=${milestones[$i]%%|*} re=${milestones[$i]#*|}
  if grep -Eq -- "$re" "$log"; then
    echo "linux_guest_test: reached: $name"
    reached=$((i + 1)) last=$name
  fi
done
ok=1
grep -Eq -- "${milestones[0]#*|}" "$log" || { echo "FAIL: the launcher did not unpack the bzImage"; ok=0; }
if ! grep -Eq -- "$stop" "$log"; then
  echo "FAIL: no line matching /$stop/ (where Linux stops today)"; ok=0
fi
if [[ $last != "$furthest" ]]; then
  echo "FAIL: the furthest milestone is '${last:-none}', pinned '$furthest': if Linux got further, move --furthest and --stop (tests/CMakeLists.txt) and docs/results.md on"
  ok=0
fi
echo "linux_guest_test: furthest milestone: ${last:-none} ($reached of ${#milestones[@]})"
((ok)) && { echo "PASS: Linux stops where pinned: /$stop/"; exit 0; }
exit 1
