# shellcheck shell=bash
# The libFuzzer runs of ./pvmmu fuzz and of the fuzz stage of ./pvmmu test:
# build-fuzz/ (clang), the fuzzers, their corpora and progress.
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

FUZZ_DIR="$ROOT/build-fuzz"
FUZZ_SANITIZE='address;undefined;fuzzer-no-link'
FUZZ_SUMMARY=''   # run_fuzz's figures, for fuzz.sh and test.sh

# True when clang can link a libFuzzer program (clang and libclang-rt-14-dev).
fuzz_toolchain() {
  command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1 || return 1
  local probe rc=0
  probe="$(mktemp -d)"
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
    >"$probe/probe.cc"
  clang++ -fsanitize=fuzzer "$probe/probe.cc" -o "$probe/probe" >/dev/null 2>&1 || rc=1
  rm -rf "$probe"
  return $rc
}

# Configures build-fuzz/ when needed (clang, PVMMU_FUZZ=ON) and builds only the
# fuzzers and what they link: the rest of the tree is not built there.
build_fuzz() {
  local cache="$FUZZ_DIR/CMakeCache.txt"
  if [[ ! -f $cache ]] ||
     ! grep -qxF 'PVMMU_FUZZ:BOOL=ON' "$cache" ||
     ! grep -qxF 'PVMMU_WERROR:BOOL=ON' "$cache" ||
     ! grep -qxF "PVMMU_SANITIZE:STRING=$FUZZ_SANITIZE" "$cache" ||
     ! grep -q '^CMAKE_CXX_COMPILER:.*clang' "$cache" ||
     [[ ! -f $FUZZ_DIR/Makefile && ! -f $FUZZ_DIR/build.ninja ]]; then
    say "configuring build-fuzz/ (clang, PVMMU_SANITIZE=$FUZZ_SANITIZE)"
    rm -f "$cache"
    cmake -S "$ROOT" -B "$FUZZ_DIR" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DPVMMU_FUZZ=ON -DPVMMU_WERROR=ON -DPVMMU_SANITIZE="$FUZZ_SANITIZE" >&2 || return 1
  fi
  cmake --build "$FUZZ_DIR" -j"$(nproc)" --target hypercall_fuzzer hypercall_fuzzer_ad image_fuzzer 2>&1 |
    quiet_build "building build-fuzz/ (the fuzzers)" || return 1
}

# The latest libFuzzer status line of a log, without the mutation details.
fuzz_status() {
  tail -n 200 "$1" 2>/dev/null | grep -E '^#[0-9]+' | tail -n 1 | sed -E 's/ (L|MS): .*//' || true
}

# run_fuzz SECONDS JOBS BINARY [SEEDS CORPUS MAX_LEN RUNS]: fuzzes, shows
# progress every 10 s, leaves the figures in FUZZ_SUMMARY; returns 1 on a crash
# (or any other libFuzzer failure), 2 when another fuzz run holds build-fuzz/
# (its logs and corpus are shared). SEEDS (read only; default fuzz/corpus/)
# and CORPUS (default build-fuzz/corpus/) are the fuzzer's corpus; RUNS, if
# not 0, stops after that many inputs.
run_fuzz() {
  local secs=$1 jobs=$2 bin=$3 seeds=${4:-$ROOT/fuzz/corpus} corpus=${5:-$FUZZ_DIR/corpus}
  local max_len=${6:-2048} runs=${7:-0}
  local crashes="$FUZZ_DIR/crashes" logs="$FUZZ_DIR/logs"
  mkdir -p "$corpus" "$crashes" "$logs"
  exec 9>"$FUZZ_DIR/.fuzz.lock"
  if ! flock -n 9; then
    warn "another fuzz run is using build-fuzz/"
    exec 9>&-
    return 2
  fi
  rm -f "$logs"/fuzz-*.log
  touch "$logs/.start"
  local -a args=(-max_total_time="$secs" -timeout=10 -max_len="$max_len" -print_final_stats=1
                 -artifact_prefix="$crashes/")
  if ((runs > 0)); then args+=(-runs="$runs"); fi
  args+=("$corpus" "$seeds")
  say "fuzzing: ${bin#"$ROOT"/}, ${secs}s$( ((runs > 0)) && echo ", at most $runs inputs"), $jobs job(s); corpus ${corpus#"$ROOT"/}/ + ${seeds#"$ROOT"/}/; logs build-fuzz/logs/"
  local pid rc=0
  if ((jobs > 1)); then
    # -workers defaults to half the CPUs: name it, so J jobs really run at once.
    (cd "$logs" && exec "$bin" -jobs="$jobs" -workers="$jobs" "${args[@]}") >"$logs/driver.log" 2>&1 &
  else
    "$bin" "${args[@]}" >"$logs/fuzz-0.log" 2>&1 &
  fi
  pid=$!
  trap 'kill "$pid" 2>/dev/null; exit 130' INT TERM
  local start=$SECONDS next=10 line
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if ((SECONDS - start >= next)); then
      next=$((next + 10))
      line="$(fuzz_status "$logs/fuzz-0.log")"
      if [[ -n $line ]]; then printf '  [%4ds] job 0: %s
' $((SECONDS - start)) "$line" >&2; fi
    fi
  done
  wait "$pid" || rc=$?
  trap - INT TERM
  exec 9>&-

  # Totals over the jobs: executions and exec/s add up; coverage is the largest.
  local execs=0 rate=0 cov=0 ft=0 j n
  for j in "$logs"/fuzz-*.log; do
    [[ -f $j ]] || continue
    n="$(sed -n 's/^stat::number_of_executed_units: *//p' "$j" | tail -n 1)"; execs=$((execs + ${n:-0}))
    n="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$j" | tail -n 1)"; rate=$((rate + ${n:-0}))
    n="$(grep -oE 'cov: [0-9]+' "$j" | tail -n 1 | cut -d' ' -f2)"; if ((${n:-0} > cov)); then cov=$n; fi
    n="$(grep -oE 'ft: [0-9]+' "$j" | tail -n 1 | cut -d' ' -f2)"; if ((${n:-0} > ft)); then ft=$n; fi
  done
  local files kib
  files="$(find "$corpus" -type f | wc -l)"
  kib="$(find "$corpus" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", (s + 1023) / 1024 }')"
  # shellcheck disable=SC2034 # read by fuzz.sh and test.sh
  FUZZ_SUMMARY="${bin##*/}: $execs executions, $rate exec/s, cov $cov, ft $ft, corpus $files inputs (${kib} KiB), $((SECONDS - start))s x $jobs job(s)"
  # libFuzzer also saves inputs that merely ran slowly (slow-unit-*, >= 10 s
  # wall-clock, e.g. on a starved CPU): reported, not failures. A real hang is
  # a timeout-* (-timeout) and fails like a crash.
  local found slow
  found="$(find "$crashes" -type f ! -name 'slow-unit-*' -newer "$logs/.start" 2>/dev/null | head -n 5)"
  slow="$(find "$crashes" -type f -name 'slow-unit-*' -newer "$logs/.start" 2>/dev/null | head -n 5)"
  if [[ -n $slow ]]; then
    warn "slow input(s) (not a failure; replay one to time it):"$'\n'"$slow"
  fi
  if ((rc != 0)) || [[ -n $found ]]; then
    grep -hE -A 14 'pvmmu fuzz:|^==[0-9]+== ?ERROR' "$logs"/fuzz-*.log 2>/dev/null | head -n 40 >&2 || true
    if [[ -n $found ]]; then printf 'crash input(s):
%s
' "$found" >&2; fi
    return 1
  fi
}


# The image fuzzer's seeds in build-fuzz/image-seeds/: fuzz/image_corpus/'s
# and build/'s guest kernels (made small by fuzz/make_image_seeds.py), when
# build/ has them.
image_seeds() {
  local dir="$FUZZ_DIR/image-seeds" k
  local -a args=("$dir")
  rm -rf "$dir"
  for k in "$ROOT"/build/guest/platform/xenpv/*/kernel; do
    if [[ -f $k ]]; then args+=(--kernel "$k"); fi
  done
  python3 "$ROOT/fuzz/make_image_seeds.py" "${args[@]}" >&2 || return 1
  cp "$ROOT"/fuzz/image_corpus/* "$dir"/ 2>/dev/null || true
}
