#!/usr/bin/env bash
# Debian's Linux 6.1 (the xen-host test's dom0 kernel, tools/make-xen-host.sh)
# booted to user space with the project's initramfs (tools/make-initramfs.sh:
# busybox and the static programs of tests/linux/user/): one boot runs every
# program, each prints `NAME: PASS|FAIL ...`, /init prints `Test result:
# SUCCESS|FAILURE` and powers off. The same kernel and initramfs on each
# platform:
#   native  the kernel as an ordinary x86 kernel under QEMU (console ttyS0);
#           the reference
#   xen     dom0 of Debian's Xen 4.17 under QEMU (pvmmu-run --platform xen
#           --config, `ramdisk =`; console hvc0)
#   pvmmu   a PV domain of pvmmu under QEMU (pvmmu-run --platform qemu
#           --config, `ramdisk =`; console hvc0)
#
#   linux_user_test.sh --platform native|xen|pvmmu --source DIR --build DIR
#                      [--run PVMMU_RUN] [--vcpus N] [--accel tcg|tcg-icount]
#                      [--cpu MODEL] [--timeout S] [--extra ARGS] [--pending]
#
# --extra: words added to the kernel's command line (xen.fifo_events=0: the
# 2-level event channels on xen and pvmmu). --pending: SKIP at once, saying
# why (tests/CMakeLists.txt registers the pvmmu runs so when
# PVMMU_LINUX_USER_ON_PVMMU is off).
# It passes when /init ran, every program printed PASS, mm-bench's line of
# pvmmu's counts is what the platform gives (counts on pvmmu, the reason
# there are none natively and on Xen), the result line is SUCCESS and the
# machine powered off. --accel tcg-icount (QEMU -icount
# shift=0,sleep=off): every instruction takes 1 ns of the guest's clock, so
# the `/init after S s` line counts instructions (docs/results.md).
# KEEP_LOG=FILE keeps the console. Exit: 0 pass, 1 fail, 77 skip (no QEMU, a
# package that cannot be fetched).
set -uo pipefail

platform='' run='' src='' build='' vcpus=1 accel=tcg cpu='' limit=240 pending=0 extra=''
while (($#)); do
  case $1 in
    --platform) platform=$2; shift ;;
    --run) run=$2; shift ;;
    --source) src=$2; shift ;;
    --build) build=$2; shift ;;
    --vcpus) vcpus=$2; shift ;;
    --accel) accel=$2; shift ;;
    --cpu) cpu=$2; shift ;;
    --timeout) limit=$2; shift ;;
    --extra) extra=$2; shift ;;
    --pending) pending=1 ;;
    *) echo "linux_user_test.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ $platform =~ ^(native|xen|pvmmu)$ && -d $src && -d $build ]] ||
  { echo "linux_user_test.sh: --platform native|xen|pvmmu, --source and --build are needed" >&2; exit 2; }
[[ $platform == native || -x $run ]] || { echo "linux_user_test.sh: --platform $platform needs --run PVMMU_RUN" >&2; exit 2; }
[[ $accel =~ ^(tcg|tcg-icount)$ ]] || { echo "linux_user_test.sh: --accel takes tcg or tcg-icount" >&2; exit 2; }
if ((pending)); then
  echo "SKIP: Linux on $platform is off in this build; configure with -DPVMMU_LINUX_USER_ON_PVMMU=ON to run this test"
  exit 77
fi
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: no qemu-system-x86_64"; exit 77; }

vmlinuz=$build/xen-host/vmlinuz
if [[ ! -s $vmlinuz ]]; then
  "$src/tools/make-xen-host.sh" "$build/xen-host" >/dev/null
  case $? in 0) ;; 77) echo "SKIP: Debian's linux-image package cannot be fetched (tools/make-xen-host.sh)"; exit 77 ;; *) exit 1 ;; esac
fi
initrd=$("$src/tools/make-initramfs.sh" "$build/linux" "$build/xen-host/base/lib/modules")
case $? in 0) ;; 77) echo "SKIP: the initramfs cannot be made (tools/make-initramfs.sh, above)"; exit 77 ;; *) exit 1 ;; esac

log=$(mktemp) cfg=$(mktemp --suffix=.cfg)
trap '[[ -n ${KEEP_LOG:-} ]] && cp "$log" "$KEEP_LOG"; rm -f "$log" "$cfg"' EXIT
start=$(date +%s.%N)
case $platform in
native)
  args=(-accel tcg -cpu "${cpu:-max}" -machine pc -smp "$vcpus" -m 256 -kernel "$vmlinuz" -initrd "$initrd"
        -append "console=ttyS0 loglevel=4 panic=-1${extra:+ $extra}" -display none -serial stdio -monitor none -no-reboot)
  [[ $accel == tcg-icount ]] && args+=(-icount shift=0,sleep=off)
  timeout "$limit" qemu-system-x86_64 "${args[@]}" </dev/null >"$log" 2>&1
  code=$? ;;
xen | pvmmu)
  cat >"$cfg" <<CFG
name = "linux"
kernel = "$vmlinuz"
ramdisk = "$initrd"
vcpus = $vcpus
memory = 256
extra = "console=hvc0 loglevel=4 panic=-1${extra:+ $extra}"
CFG
  back=qemu
  [[ $platform == xen ]] && back=xen
  "$run" --platform "$back" --accel "$accel" ${cpu:+--cpu "$cpu"} --timeout "$limit" --config "$cfg" >"$log" 2>&1
  code=$? ;;
esac
sed -i 's/\r$//' "$log"   # a serial console's line ends
secs=$(printf "%.1f" "$(echo "$(date +%s.%N) - $start" | bc)")
echo "linux_user_test: $platform, $vcpus vCPU(s), $accel: exit $code after ${secs} s; the console's last lines:"
tail -n 12 "$log" | sed 's/^/  | /'

ok=1
# The launcher's SKIP (exit 3): Xen's image cannot be fetched, no QEMU.
if [[ $platform != native && $code == 3 ]]; then
  echo "SKIP: $(grep -m1 'SKIP (exit 3)' "$log")"
  exit 77
fi
init=$(grep -m1 -o 'linux-user: /init after [0-9.]* s' "$log" | grep -o '[0-9.]* s$')
if [[ -z $init ]]; then
  echo "FAIL: Linux did not reach /init"
  exit 1
fi
echo "linux_user_test: /init after $init of the guest's uptime ($accel)"
for p in fork-exec threads mprotect timer signals; do
  line=$(grep -m1 -E "^$p: (PASS|FAIL)" "$log")
  echo "  ${line:-$p: no line}"
  [[ $line == "$p: PASS"* ]] || ok=0
done
# pvmmu's counts through Linux's privcmd (tests/linux/user/pvmmu_counts.h):
# on pvmmu the loop's mmu_update requests and hypercalls, counted; natively
# and on Xen, the reason there are none (no privcmd device, pvmmu_op -ENOSYS).
counts=$(grep -m1 '^mm-bench: pvmmu workload=threads' "$log")
echo "  ${counts:-mm-bench: no counts line}"
case $platform in
pvmmu) want=' hypercalls=[1-9][0-9]* .* requests=[1-9]' ;;
native) want=' unavailable=no-privcmd' ;;
xen) want=' unavailable=pvmmu_op:ENOSYS' ;;
esac
[[ $counts =~ $want ]] || { echo "FAIL: mm-bench --pvmmu-counts printed no '$want'"; ok=0; }
grep -qx 'Test result: SUCCESS' "$log" || { echo "FAIL: no 'Test result: SUCCESS'"; ok=0; }
[[ $code == 0 ]] || { echo "FAIL: the run ended with exit $code, not a clean power-off"; ok=0; }
((ok)) && { echo "PASS: Linux on $platform ran every user program and powered off"; exit 0; }
exit 1
