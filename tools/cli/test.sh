# shellcheck shell=bash
# ./pvmmu test: build/ and its tests, then the ASan/UBSan, TSan and fuzz stages.
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# shellcheck source=tools/cli/libfuzzer.sh
source "$(dirname "${BASH_SOURCE[0]}")/libfuzzer.sh"

TEST_JOBS="${PVMMU_TEST_JOBS:-2}"

usage_test() {
  cat <<EOF
usage: ./pvmmu test [--quick] [-L LABEL] [-- CTEST_ARGS]

Installs missing packages, builds build/ and runs every test there
(ctest --output-on-failure -j$TEST_JOBS). Unless --quick or -L is given, it then
builds in build-asan/ what the tests labelled 'unit' need (target tests-unit)
and runs them there, builds in build-tsan/ what the tests labelled
'concurrency' need (tests-concurrency) and runs them there, and fuzzes the
hypercalls and the guest image loader for ${PVMMU_FUZZ_TIME:-120} seconds in all,
half each (./pvmmu fuzz; PVMMU_FUZZ_TIME; skipped without clang and libFuzzer). A sanitizer stage whose label has no tests yet is
skipped with a message; the main stage fails when it finds no tests at all.

  --quick        only build/ (no sanitizer and fuzz stages)
  -L LABEL       only build/, only tests whose label matches LABEL
                 (unit, concurrency, guest, ...); may be repeated
  -- CTEST_ARGS  passed to every ctest run (for example: -- -R FlagRange)

Prints one summary line per stage; exits 0 only when no stage failed.
EOF
}

SUMMARY=()
FAILED=0
record() { # STATUS STAGE MESSAGE
  local colour=$C_GREEN
  case $1 in
    FAIL) colour=$C_RED; FAILED=1 ;;
    SKIP) colour=$C_YELLOW ;;
  esac
  SUMMARY+=("$(printf '%s%-4s%s  %-11s %s' "$colour" "$1" "$C_OFF" "$2" "$3")")
}

# count_tests DIR CTEST_ARGS...: how many tests ctest would run.
count_tests() {
  local out n
  out="$(ctest --test-dir "$1" -N "${@:2}" 2>&1 || true)"
  n="$(sed -n 's/^Total Tests: *\([0-9][0-9]*\).*/\1/p' <<<"$out" | tail -n 1)"
  echo "${n:-0}"
}

# test_stage FLAVOUR REQUIRED LABELS... -- CTEST_ARGS...
#   REQUIRED=1: zero matching tests is a failure; 0: a skip.
#   Records its outcome in SUMMARY; returns 2 when the build failed.
test_stage() {
  local flavour=$1 required=$2
  shift 2
  local -a labels=() extra=()
  while (($#)) && [[ $1 != -- ]]; do labels+=(-L "$1"); shift; done
  if (($#)); then shift; extra=("$@"); fi

  local name dir what l
  name="$(flavour_dir "$flavour")"
  dir="$ROOT/$name"
  what="ctest"
  for ((l = 1; l < ${#labels[@]}; l += 2)); do what+=" -L ${labels[l]}"; done
  if ((${#extra[@]})); then what+=" ${extra[*]}"; fi

  # build/ is built whole; a sanitizer tree only what its labels' tests need
  # (the targets tests-LABEL, cmake/PvmmuTesting.cmake): not the hypervisor
  # image, the guests, the ISO and the tools that no test of it runs.
  local needs=''
  if [[ $flavour != main ]]; then
    for ((l = 1; l < ${#labels[@]}; l += 2)); do needs+="${needs:+ }tests-${labels[l]}"; done
  fi
  if ! build_tree "$flavour" "$needs"; then
    record FAIL "$name/" "build failed"
    return 2
  fi
  record PASS "$name/" "build"

  local n
  n="$(count_tests "$dir" "${labels[@]}" "${extra[@]}")"
  # A test of the label whose program tests-LABEL does not build would be
  # missing here and never run: as many tests as build/ has, or a failure.
  if [[ -n $needs ]]; then
    local whole
    whole="$(count_tests "$ROOT/build" "${labels[@]}" "${extra[@]}")"
    if ((n < whole)); then
      record FAIL "$name/" "$what: $n tests built, build/ has $whole: name their target with pvmmu_label_needs (cmake/PvmmuTesting.cmake)"
      return 0
    fi
  fi
  if ((n == 0)); then
    if ((required)) && ((${#labels[@]} + ${#extra[@]} == 0)); then
      record FAIL "$name/" "$what: zero tests registered with CTest (see tests/CMakeLists.txt); a run of zero tests is a failure"
    elif ((required)); then
      record FAIL "$name/" "$what: no test matches this selection"
    else
      record SKIP "$name/" "$what: no tests with this label yet"
      say "skipping $what in $name/: no tests with this label yet"
    fi
    return 0
  fi

  say "testing $name/: $what ($n tests)"
  local -a run=(ctest --test-dir "$dir" --output-on-failure -j"$TEST_JOBS" "${labels[@]}" "${extra[@]}")
  local rc=0
  if [[ $flavour == tsan ]]; then no_aslr "${run[@]}" || rc=$?; else "${run[@]}" || rc=$?; fi
  if ((rc == 0)); then
    record PASS "$name/" "$what: $n tests passed"
  else
    record FAIL "$name/" "$what: failures among $n tests (ctest exit $rc)"
  fi
}

cmd_test() {
  local quick=0
  local -a labels=() extra=()
  while (($#)); do
    case $1 in
      -h | --help | help) usage_test; return 0 ;;
      --quick) quick=1 ;;
      -L | --label)
        (($# >= 2)) || usage_error test "$1 needs a label"
        labels+=("$2"); shift ;;
      -L?*) labels+=("${1#-L}") ;;
      --) shift; extra=("$@"); break ;;
      *) usage_error test "unknown option '$1'" ;;
    esac
    shift
  done

  maybe_deps
  local main_rc=0
  test_stage main 1 "${labels[@]}" -- "${extra[@]}" || main_rc=$?
  if ((quick == 0 && ${#labels[@]} == 0)); then
    if ((main_rc == 2)); then
      record SKIP build-asan/ "not built: build/ failed"
      record SKIP build-tsan/ "not built: build/ failed"
      record SKIP build-fuzz/ "not run: build/ failed"
    else
      test_stage asan 0 unit -- "${extra[@]}" || true
      test_stage tsan 0 concurrency -- "${extra[@]}" || true
      fuzz_stage
    fi
  fi

  say "summary"
  printf '%s\n' "${SUMMARY[@]}"
  if ((FAILED)); then
    printf '%spvmmu test: FAILED%s\n' "$C_RED" "$C_OFF"
    return 1
  fi
  printf '%spvmmu test: all stages passed%s\n' "$C_GREEN" "$C_OFF"
}

# The fuzz stage of a full ./pvmmu test: skipped without the toolchain.
fuzz_stage() {
  local secs=${PVMMU_FUZZ_TIME:-120}
  if [[ $secs == 0 ]]; then
    record SKIP build-fuzz/ "PVMMU_FUZZ_TIME=0"
    return 0
  fi
  if ! fuzz_toolchain; then
    record SKIP build-fuzz/ "no clang with libFuzzer (apt-get install clang libclang-rt-14-dev)"
    say "skipping the fuzz stage: clang cannot link a libFuzzer program"
    return 0
  fi
  if ! build_fuzz; then
    record FAIL build-fuzz/ "build failed"
    return 0
  fi
  # The stage's time, split: the hypercalls, then the image loader.
  local half=$(((secs + 1) / 2)) rc=0 both=''
  run_fuzz "$half" 1 "$FUZZ_DIR/fuzz/hypercall_fuzzer" || rc=$?
  both=$FUZZ_SUMMARY
  if ((rc == 0)); then
    if image_seeds; then
      run_fuzz "$((secs - half > 0 ? secs - half : 1))" 1 "$FUZZ_DIR/fuzz/image_fuzzer" "$FUZZ_DIR/image-seeds" \
        "$FUZZ_DIR/corpus-image" 8192 || rc=$?
      both="$both; $FUZZ_SUMMARY"
    else
      rc=1 both="$both; fuzz/make_image_seeds.py failed"
    fi
  fi
  case $rc in
    0) record PASS build-fuzz/ "fuzz: $both; no failure" ;;
    2) record SKIP build-fuzz/ "another fuzz run is using build-fuzz/" ;;
    *) record FAIL build-fuzz/ "fuzz: failure found (build-fuzz/crashes/); $both" ;;
  esac
}
