# shellcheck shell=bash
# ./pvmmu fuzz: libFuzzer on the hypercalls or the guest image loader, or the
# hostile guest on the bare-metal hypervisor under QEMU (--platform qemu).
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=tools/cli/libfuzzer.sh
source "$(dirname "${BASH_SOURCE[0]}")/libfuzzer.sh"

usage_fuzz() {
  cat <<'EOF'
usage: ./pvmmu fuzz [--target hypercall|image] [--time S] [--jobs J] [--runs N] [--concurrent] [--merge]
       ./pvmmu fuzz --platform qemu [--accel tcg|kvm] [--time S] [--seed N] [--ops N]
                    [--check N] [--trace N] [--no-edges] [--with NAME|none] [--timeout S]

Fuzzes the hypercall interface with libFuzzer (fuzz/harness.cc): each
input is a sequence of hypercalls from one or two domains, and after every
hypercall round the invariant checker
(hypervisor/core/include/core/invariants.h) must pass and a refused request
must have left the machine unchanged. Configures build-fuzz/
with clang (ASan + UBSan + libFuzzer), builds the fuzzers only, and runs
  build-fuzz/fuzz/hypercall_fuzzer build-fuzz/corpus/ fuzz/corpus/
printing progress every 10 s and a summary: executions, exec/s, coverage
(libFuzzer's cov and ft), corpus size. The working corpus is build-fuzz/corpus/;
fuzz/corpus/ holds the seeds and is only read. A crash is saved in
build-fuzz/crashes/ with the harness's report, and the command fails.

  --target T     hypercall (default) or image: the guest image loader
                 (fuzz/image_harness.h). Each input is a guest kernel file, ELF
                 or bzImage, read (hypervisor/arch/x86_64/pv/elf.cc),
                 placed (pv/place.cc), built by the core's builder and
                 written through a fake memory that records every byte; every
                 write must land inside the domain's frames, and everything
                 placed inside it, apart. bzImages go through pvmmu-run's
                 unpacker (tools/bzimage.cc), capped. Seeds: fuzz/image_corpus/
                 (fuzz/make_image_seeds.py) and build/'s guest kernels, copied
                 to build-fuzz/image-seeds/; working corpus
                 build-fuzz/corpus-image/
  --time S       seconds to fuzz (default 120)
  --runs N       stop after N inputs instead (libFuzzer's -runs), --time still
                 bounding the run
  --jobs J       parallel fuzzing processes sharing the corpus (default 1)
  --concurrent   the variant with a thread setting A/D bits in the live tables
                 meanwhile (hypercall_fuzzer_ad)
  --merge        afterwards, minimise build-fuzz/corpus/ into fuzz/corpus/ (the
                 corpus kept in the repository; it must stay below 1 MiB)

Needs clang and libclang-rt-14-dev (tools/deps.txt). Replay one input with
  PVMMU_FUZZ_VERBOSE=1 build-fuzz/fuzz/hypercall_fuzzer FILE
  PVMMU_FUZZ_VERBOSE=1 build-fuzz/fuzz/image_fuzzer FILE

With --platform qemu, the bare-metal hypervisor instead (docs/security.md
§7.10): builds build/ (pvmmu-hv, the hostile guest, pvmmu-run) and runs
  build/tools/pvmmu-run --fuzz ...
which boots, under QEMU (TCG unless --accel kvm), the hostile guest
(tests/qemu/hostile_guest) next to a well-behaved guest program. From the
seed, the hostile guest makes random hypercalls (every number pvmmu has and
some it has not, random and boundary arguments), executes random privileged
and faulting instructions and SYSCALLs at page and canonical boundaries, and
takes its exceptions through random handlers; every --check N operations the
hypervisor checks its invariants (pvmmu_op PVMMUOP_check_invariants). The
seed is printed first and with any failure; a run passes when both domains
report SUCCESS, the machine ends powered off and the console shows no
panic, crash or violation; otherwise it exits non-zero with the seed, the
console's last lines and the command that replays it.

  --time S       stop after S seconds (with no --ops: no operation limit)
  --seed N       the seed (default: from the clock; printed)
  --ops N        stop after N operations (default 100000 without --time)
  --check N      the invariant check every N operations (default 1000)
  --trace N      print every operation from the N-th on, before it runs, and
                 check the guest's own page tables after each
  --no-edges     no SYSCALL at the canonical boundary (0x7ffffffffffe)
  --with NAME    the well-behaved domain's guest program (default
                 tlb-shootdown; none: the hostile guest alone)
  --accel A      tcg (default here) or kvm
  --timeout S    kill QEMU after S seconds (default: the run's length + 180)
EOF
}

# ./pvmmu fuzz --platform qemu: the hostile guest on the bare-metal
# hypervisor (pvmmu-run --fuzz), with the options it takes passed on.
cmd_fuzz_qemu() {
  local -a args=(--fuzz)
  local accel=tcg
  while (($#)); do
    case $1 in
      --platform) shift ;;
      --accel) (($# >= 2)) || usage_error fuzz "--accel needs tcg or kvm"; accel=$2; shift ;;
      --time | --seed | --ops | --check | --trace | --with | --timeout)
        (($# >= 2)) || usage_error fuzz "$1 needs a value"; args+=("$1" "$2"); shift ;;
      --no-edges) args+=("$1") ;;
      --jobs | --concurrent | --merge) usage_error fuzz "$1 is for the libFuzzer run, not --platform qemu" ;;
      *) usage_error fuzz "unknown option '$1'" ;;
    esac
    shift
  done
  [[ $accel == tcg || $accel == kvm ]] || usage_error fuzz "--accel takes tcg or kvm"
  maybe_deps
  build_tree main "pvmmu-run" || die "build of build/ failed"
  exec "$ROOT/build/tools/pvmmu-run" "${args[@]}" --accel "$accel"
}


cmd_fuzz() {
  local secs=120 jobs=1 concurrent=0 merge=0 target=hypercall runs=0
  local a platform=''
  for a in "$@"; do
    if [[ $a == -h || $a == --help || $a == help ]]; then usage_fuzz; return 0; fi
  done
  for ((a = 1; a <= $#; ++a)); do
    if [[ ${!a} == --platform ]]; then
      local next=$((a + 1))
      platform=${!next:-}
    fi
  done
  case $platform in
    '') ;;
    qemu) cmd_fuzz_qemu "$@"; return ;;
    *) usage_error fuzz "--platform takes qemu (without it: the libFuzzer run)" ;;
  esac
  while (($#)); do
    case $1 in
      -h | --help | help) usage_fuzz; return 0 ;;
      --seed | --ops | --accel | --check | --trace | --with | --no-edges)
        usage_error fuzz "$1 goes with --platform qemu" ;;
      --time) (($# >= 2)) || usage_error fuzz "--time needs seconds"; secs=$2; shift ;;
      --jobs) (($# >= 2)) || usage_error fuzz "--jobs needs a number"; jobs=$2; shift ;;
      --target) (($# >= 2)) || usage_error fuzz "--target needs hypercall or image"; target=$2; shift ;;
      --runs) (($# >= 2)) || usage_error fuzz "--runs needs a number"; runs=$2; shift ;;
      --concurrent) concurrent=1 ;;
      --merge) merge=1 ;;
      *) usage_error fuzz "unknown option '$1'" ;;
    esac
    shift
  done
  [[ $secs =~ ^[1-9][0-9]*$ ]] || usage_error fuzz "--time wants a positive number of seconds"
  [[ $jobs =~ ^[1-9][0-9]*$ ]] || usage_error fuzz "--jobs wants a positive number"
  [[ $runs =~ ^[0-9]+$ ]] || usage_error fuzz "--runs wants a number of inputs"
  [[ $target == hypercall || $target == image ]] || usage_error fuzz "--target takes hypercall or image"
  if [[ $target == image ]] && ((concurrent || merge)); then
    usage_error fuzz "--concurrent and --merge are for --target hypercall"
  fi
  maybe_deps
  fuzz_toolchain || die "clang cannot link a libFuzzer program: apt-get install clang libclang-rt-14-dev"
  build_fuzz || die "build of build-fuzz/ failed"
  local bin="$FUZZ_DIR/fuzz/hypercall_fuzzer"
  if ((concurrent)); then bin="$FUZZ_DIR/fuzz/hypercall_fuzzer_ad"; fi
  local rc=0
  if [[ $target == image ]]; then
    image_seeds || die "fuzz/make_image_seeds.py failed"
    run_fuzz "$secs" "$jobs" "$FUZZ_DIR/fuzz/image_fuzzer" "$FUZZ_DIR/image-seeds" "$FUZZ_DIR/corpus-image" 8192 \
      "$runs" || rc=$?
  else
    run_fuzz "$secs" "$jobs" "$bin" "" "" "" "$runs" || rc=$?
  fi
  ((rc != 2)) || die "build-fuzz/ is busy: another ./pvmmu fuzz (or test) is fuzzing there"
  say "fuzz: $FUZZ_SUMMARY"
  ((rc == 0)) || die "the fuzzer found a failure (above; inputs in build-fuzz/crashes/)"
  if ((merge)); then
    local tmp="$FUZZ_DIR/merged" f
    rm -rf "$tmp" && mkdir -p "$tmp"
    say "merging build-fuzz/corpus/ into fuzz/corpus/ (minimised)"
    "$bin" -merge=1 "$tmp" "$ROOT/fuzz/corpus" "$FUZZ_DIR/corpus" >"$FUZZ_DIR/logs/merge.log" 2>&1 ||
      die "merge failed (build-fuzz/logs/merge.log)"
    for f in "$tmp"/*; do
      if [[ ! -e $ROOT/fuzz/corpus/${f##*/} ]]; then cp "$f" "$ROOT/fuzz/corpus/"; fi
    done
    say "fuzz/corpus/: $(find "$ROOT/fuzz/corpus" -type f | wc -l) inputs, $(du -sk --apparent-size "$ROOT/fuzz/corpus" | cut -f1) KiB"
  fi
}
