# shellcheck shell=bash
# ./pvmmu bench: the core microbenchmarks and the guest benchmarks (perf/).
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage_bench() {
  cat <<'EOF'
usage: ./pvmmu bench core [ARGS]
       ./pvmmu bench mprotect [ARGS]
       ./pvmmu bench tlb-miss [ARGS]
       ./pvmmu bench fault [ARGS]
       ./pvmmu bench linux [ARGS]

Installs missing packages, builds what the benchmark needs in build/, then runs it with ARGS:
  core      the core's instructions and time per PTE: perf/bench-core.sh
  mprotect  the mprotect scaling benchmark: perf/bench_mprotect.py
            running the guest program guest/bench/mprotect; with
            --hosts URI1,URI2,... [--per-host N] a sweep over libvirt hosts
            (perf/sweep.py), merged with a host column
  tlb-miss  cost of a TLB miss, protected walk against unprotected:
            perf/bench_tlb_miss.py running guest/bench/tlb-miss
  fault     page fault and map latency, TLB flushes per fault:
            perf/bench_fault.py running guest/bench/fault
  linux     Linux 6.1's own mprotect, faults and fork, instructions per
            changed page natively, as dom0 of Xen 4.17 and on pvmmu, under
            QEMU TCG with -icount: perf/bench_linux.py running
            tests/linux/user/mm_bench.c in the Linux tests' initramfs
mprotect, tlb-miss and fault run on --platform sim (default), qemu, xen or
libvirt[=URI] (pvmmu under QEMU as a libvirt domain; README "Running through
libvirt"), several comma-separated side by side.
`./pvmmu bench <name> --help` also shows the benchmark's own options.
EOF
}

cmd_bench() {
  local what=${1:-}
  if [[ -z $what ]]; then usage_bench >&2; exit 2; fi
  if is_help "$what"; then usage_bench; return 0; fi
  shift

  case $what in
    core)
      local script="$ROOT/perf/bench-core.sh"
      if is_help "${1:-}"; then usage_bench; forward_help "$script"; return 0; fi
      maybe_deps
      build_tree main || die "build of build/ failed"
      if [[ -x $script ]]; then exec "$script" "$@"; fi
      exec bash "$script" "$@"
      ;;
    mprotect | tlb-miss | fault)
      # A guest benchmark program (guest/bench/NAME) and its host driver (perf/).
      local driver="$ROOT/perf/bench_${what//-/_}.py"
      if is_help "${1:-}"; then usage_bench; printf '\noptions of %s:\n' "${driver#"$ROOT"/}"; python3 "$driver" --help; return 0; fi
      command -v python3 >/dev/null 2>&1 || die "python3 is missing (apt-get install python3)"
      maybe_deps
      # On a hypervisor (qemu, xen, libvirt: under QEMU; xen-host: this Xen
      # host's): also its guest kernel and the runner (which brings the hypervisor).
      local bench_targets="guest-$what" a platforms='sim'
      for a in "$@"; do
        [[ $platforms == next ]] && platforms=$a
        case $a in --platform) platforms=next ;; --platform=*) platforms=${a#--platform=} ;; esac
        # A sweep over libvirt hosts (perf/sweep.py) boots the qemu platform's machine.
        case $a in --hosts | --hosts=*) platforms+=',qemu' ;; esac
      done
      if [[ ,$platforms, == *,qemu,* || ,$platforms, == *,xen,* || ,$platforms, == *,xen-host,* ||
            ,$platforms, == *,libvirt[,=]* ]]; then
        bench_targets+=" xenpv-bench-$what pvmmu-run"
      fi
      build_tree main "$bench_targets" || die "build of build/ failed"
      exec python3 "$driver" --build-dir "$ROOT/build" "$@"
      ;;
    linux)
      local driver="$ROOT/perf/bench_linux.py"
      if is_help "${1:-}"; then usage_bench; printf '\noptions of %s:\n' "${driver#"$ROOT"/}"; python3 "$driver" --help; return 0; fi
      command -v python3 >/dev/null 2>&1 || die "python3 is missing (apt-get install python3)"
      maybe_deps
      # pvmmu's column boots through the launcher (which brings the hypervisor).
      build_tree main pvmmu-run || die "build of build/ failed"
      exec python3 "$driver" --build-dir "$ROOT/build" "$@"
      ;;
    *) usage_error bench "unknown benchmark '$what' (core, mprotect, tlb-miss, fault, linux)" ;;
  esac
}
