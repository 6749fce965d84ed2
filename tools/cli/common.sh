# shellcheck shell=bash
# What every ./pvmmu subcommand file (tools/cli/SUB.sh) shares: the repository
# root, colours and messages, the Debian packages of tools/deps.txt, and the
# build trees. Sourced once, by the subcommand files themselves.
if [[ -n ${PVMMU_CLI_COMMON:-} ]]; then return 0; fi
PVMMU_CLI_COMMON=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=tools/defs.sh
source "$ROOT/tools/defs.sh"
DEPS_FILE="$ROOT/tools/deps.txt"

# Colours only when a person is watching (stdout and stderr both terminals).
# shellcheck disable=SC2034 # the subcommand files use them all
if [[ -t 1 && -t 2 && -z "${NO_COLOR:-}" && "${TERM:-dumb}" != dumb ]]; then
  C_BOLD=$'\e[1m' C_RED=$'\e[31m' C_GREEN=$'\e[32m' C_YELLOW=$'\e[33m' C_OFF=$'\e[0m'
else
  C_BOLD='' C_RED='' C_GREEN='' C_YELLOW='' C_OFF=''
fi

say()  { printf '%s==>%s %s\n' "$C_BOLD" "$C_OFF" "$*" >&2; }
warn() { printf '%spvmmu: warning:%s %s\n' "$C_YELLOW" "$C_OFF" "$*" >&2; }
die()  { printf '%spvmmu: error:%s %s\n' "$C_RED" "$C_OFF" "$*" >&2; exit 1; }
usage_error() { printf 'pvmmu: %s (see ./pvmmu %s --help)\n' "$2" "$1" >&2; exit 2; }

is_help() { [[ ${1:-} == -h || ${1:-} == --help || ${1:-} == help ]]; }

# Shows a built tool's own --help below ours, without building anything.
forward_help() {
  local tool=$1
  if [[ -x $tool ]]; then
    printf '\noptions of %s:\n' "${tool#"$ROOT"/}"
    "$tool" --help || true
  fi
}

# --- dependencies ---------------------------------------------------------------

deps_list() {
  local line
  while IFS= read -r line || [[ -n $line ]]; do
    line="${line%%#*}"
    line="${line//[[:space:]]/}"
    if [[ -n $line ]]; then printf '%s\n' "$line"; fi
  done <"$DEPS_FILE"
}

# Prints the packages of tools/deps.txt that are not installed (one dpkg-query
# for all of them, so the common case costs a few milliseconds).
missing_deps() {
  local -a pkgs
  mapfile -t pkgs < <(deps_list)
  local installed
  installed="$(dpkg-query -W -f='${Package} ${Status}\n' "${pkgs[@]}" 2>/dev/null |
               awk '$NF == "installed" && $(NF-1) == "ok" { print $1 }' || true)"
  local p
  for p in "${pkgs[@]}"; do
    if ! grep -qxF -- "$p" <<<"$installed"; then printf '%s\n' "$p"; fi
  done
}

# ensure_deps [verbose]
ensure_deps() {
  local verbose=${1:-}
  [[ -f $DEPS_FILE ]] || die "missing $DEPS_FILE"
  if ! command -v dpkg-query >/dev/null 2>&1; then
    warn "dpkg-query not found (not Debian?): install the packages listed in tools/deps.txt yourself"
    return 0
  fi
  local -a missing
  mapfile -t missing < <(missing_deps)
  if ((${#missing[@]} == 0)); then
    if [[ -n $verbose ]]; then say "all packages of tools/deps.txt are installed"; fi
    return 0
  fi

  local -a sudo=()
  if ((EUID != 0)); then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      die "missing Debian packages: ${missing[*]}
  run as root: apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  say "installing missing Debian packages: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update </dev/null ||
    die "apt-get update failed"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}" </dev/null ||
    die "apt-get install failed for: ${missing[*]}"

  mapfile -t missing < <(missing_deps)
  ((${#missing[@]} == 0)) || die "still not installed after apt-get: ${missing[*]}"
}

maybe_deps() {
  if [[ ${PVMMU_SKIP_DEPS:-0} != 1 ]]; then ensure_deps ''; fi
}

# --- building -----------------------------------------------------------------

# Build trees, by flavour: directory and PVMMU_SANITIZE value.
flavour_dir() {
  case $1 in
    main) echo build ;;
    asan) echo build-asan ;;
    tsan) echo build-tsan ;;
  esac
}
flavour_sanitize() {
  case $1 in
    main) echo '' ;;
    asan) echo 'address;undefined' ;;
    tsan) echo 'thread' ;;
  esac
}

# Runs "$@" with address-space randomisation off when the kernel allows it:
# TSan in g++ 12 dies with "unexpected memory mapping" on kernels with
# vm.mmap_rnd_bits > 28, and tsan binaries also run at build time (gtest
# discovery), so builds and tests of build-tsan/ go through this.
no_aslr() {
  if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
    setarch "$(uname -m)" -R "$@"
  else
    "$@"
  fi
}

# quiet_build HEADER: passes a build's output (stdin) to stderr without the
# lines a build that has nothing to do prints as well ("[ 42%] Built target X",
# CMake's dependency bookkeeping), and says HEADER before the first line it
# keeps: a build that compiles shows its progress and its errors as they come,
# one with nothing to do prints nothing.
quiet_build() {
  local header=$1 line shown=0
  while IFS= read -r line || [[ -n $line ]]; do
    case $line in
      *'] Built target '* | 'Consolidate compiler generated dependencies of target '*) continue ;;
    esac
    if ((!shown)); then say "$header"; shown=1; fi
    printf '%s\n' "$line" >&2
  done
}

# build_tree FLAVOUR [TARGET]: configures when the tree or its options are
# missing, then builds incrementally (CMake re-runs itself when a CMakeLists.txt
# changed): everything, or only TARGET and what it needs.
# CMake's output goes to stderr, so a benchmark's stdout holds only its results.
build_tree() {
  local flavour=$1
  local -a only=()
  if [[ -n ${2:-} ]]; then
    local -a targets
    read -ra targets <<<"$2"   # one or more, separated by spaces
    only=(--target "${targets[@]}")
  fi
  local name dir san
  name="$(flavour_dir "$flavour")"
  dir="$ROOT/$name"
  san="$(flavour_sanitize "$flavour")"
  local cache="$dir/CMakeCache.txt"
  if [[ ! -f $cache ]] ||
     ! grep -qxF 'PVMMU_WERROR:BOOL=ON' "$cache" ||
     ! grep -qxF "PVMMU_SANITIZE:STRING=$san" "$cache" ||
     [[ ! -f $dir/Makefile && ! -f $dir/build.ninja ]]; then
    say "configuring $name/${san:+ (PVMMU_SANITIZE=$san)}"
    cmake -S "$ROOT" -B "$dir" -DPVMMU_WERROR=ON -DPVMMU_SANITIZE="$san" >&2 || return 1
  fi
  local -a build=(cmake --build "$dir" -j"$(nproc)" "${only[@]}")
  if [[ $flavour == tsan ]]; then build=(no_aslr "${build[@]}"); fi
  "${build[@]}" 2>&1 | quiet_build "building $name/${2:+ (target $2)}" || return 1
}
