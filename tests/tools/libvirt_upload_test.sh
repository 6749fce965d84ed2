#!/bin/bash
# The images uploaded to a libvirt storage pool (a remote host;
# tools/run_libvirt_host.cc): pvmmu-run --pool on the daemon of this
# machine (qemu:///system), the path a remote URI takes. A transient dir pool
# in the build tree; the run must pass, pvmmu-hv and the guest kernel must be
# read from the pool's volumes (the hypervisor prints the paths it was given),
# and no volume may be left behind. SKIP (77) where no daemon answers.
#
# usage: libvirt_upload_test.sh PVMMU_RUN WORK_DIR
set -u
run=$1 work=$2
uri=qemu:///system pool=pvmmu-upload-test-$$ dir=$work/pool-$$
if ! timeout 20 virsh -q -c "$uri" uri >/dev/null 2>&1; then
  echo "SKIP: no libvirt daemon answers at $uri (start libvirtd and virtlogd as root)"
  exit 77
fi
mkdir -p "$dir" && chmod 755 "$dir"
if ! virsh -q -c "$uri" pool-create-as "$pool" dir --target "$dir" >/dev/null; then
  echo "SKIP: cannot make a storage pool on $uri"
  exit 77
fi
trap 'virsh -q -c "$uri" pool-destroy "$pool" >/dev/null 2>&1; rm -rf "$dir"' EXIT
out=$("$run" --platform "libvirt=$uri" --pool "$pool" --accel tcg --timeout 240 flag-range-basic 2>&1)
status=$?
printf '%s\n' "$out" | grep -v '^  ' | tail -25
bad=0
[[ $status == 0 ]] || { echo "FAILED: pvmmu-run exited $status"; bad=1; }
grep -q "^boot: cmdline \"$dir/pvmmu-flag-range-basic-[0-9]*-1-pvmmu-hv" <<<"$out" ||
  { echo "FAILED: pvmmu-hv was not booted from the pool ($dir)"; bad=1; }
grep -q "loading module 0 (\"$dir/pvmmu-flag-range-basic-[0-9]*-1-domain0 " <<<"$out" ||
  { echo "FAILED: the guest kernel was not loaded from the pool ($dir)"; bad=1; }
left=$(virsh -q -c "$uri" vol-list "$pool" | grep -c . || true)
[[ $left == 0 ]] || { echo "FAILED: $left volume(s) left in the pool"; bad=1; }
[[ $bad == 0 ]] && echo "upload ok: both images from pool $pool, no volume left"
exit $bad
