#!/usr/bin/env bash
# The linters ./pvmmu test runs (CTest label `lint`, tests/lint.cmake):
#   tools/lint.sh shell          shellcheck on every shell script in the tree
#   tools/lint.sh python         pyflakes on every Python file in the tree
#   tools/lint.sh tidy BUILD     clang-tidy (.clang-tidy) on the hypervisor and the
#                                core, from BUILD/compile_commands.json
# Each exits 0 when clean, 1 with the findings printed, 77 when its tool is missing
# (CTest reports that as a skip).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

need() { command -v "$1" >/dev/null || { echo "lint: $1 is not installed (tools/deps.txt)"; exit 77; }; }

# Tracked files whose first line names bash or sh, and *.sh.
shell_scripts() {
  git ls-files -z | while IFS= read -r -d '' f; do
    [[ -f $f ]] || continue
    if [[ $f == *.sh ]] || head -n1 -- "$f" | grep -qE '^#!.*\b(ba)?sh\b'; then
      printf '%s\n' "$f"
    fi
  done
}

lint_shell() {
  need shellcheck
  local files
  mapfile -t files < <(shell_scripts)
  echo "shellcheck: ${#files[@]} scripts"
  shellcheck -x -- "${files[@]}"
}

lint_python() {
  need pyflakes3
  local files
  mapfile -t files < <(git ls-files '*.py')
  echo "pyflakes: ${#files[@]} files"
  pyflakes3 "${files[@]}"
}

# clang-tidy reads one compile command per file: the hosted core's
# (pvmmu_core) and the bare-metal image's own sources' (pvmmu-hv; not the
# image's freestanding compile of the core, pvmmu_hv_core), without two GCC
# options that only shape code generation: -mgeneral-regs-only (with it
# clang rejects libstdc++'s long double declarations, which GCC accepts) and
# -fno-tree-loop-distribute-patterns (unknown to clang). Parsing them with
# clang is a check of its own: clang refuses a `constinit` object that is not
# constant-initialized, which GCC 12 can accept
# (hypervisor/arch/x86_64/CMakeLists.txt), and any error fails this.
lint_tidy() {
  local build=${1:?usage: tools/lint.sh tidy BUILD_DIR}
  need clang-tidy
  [[ -f $build/compile_commands.json ]] || { echo "lint: no $build/compile_commands.json"; exit 1; }
  # Global, not local: the EXIT trap runs after this function has returned.
  db=$(mktemp -d)
  trap 'rm -rf "$db"' EXIT
  python3 - "$build/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, re, sys
entries = json.load(open(sys.argv[1]))
keep = []
for e in entries:
    cmd = e.get("command", "")
    if not e["file"].endswith(".cc"):
        continue
    if not re.search(r"CMakeFiles/(pvmmu_core|pvmmu-hv)\.dir/", cmd):
        continue
    e["command"] = cmd.replace(" -mgeneral-regs-only", "").replace(" -fno-tree-loop-distribute-patterns", "")
    keep.append(e)
json.dump(keep, open(sys.argv[2], "w"))
print(f"clang-tidy: {len(keep)} files")
PY
  local files
  mapfile -t files < <(python3 -c 'import json,sys; [print(e["file"]) for e in json.load(open(sys.argv[1]))]' "$db/compile_commands.json")
  local rc=0
  for f in "${files[@]}"; do
    clang-tidy -p "$db" --quiet "$f" 2>/dev/null || rc=1
  done
  return "$rc"
}

case ${1:-} in
  shell) lint_shell ;;
  python) lint_python ;;
  tidy) shift; lint_tidy "$@" ;;
  *) echo "usage: tools/lint.sh shell|python|tidy BUILD_DIR" >&2; exit 2 ;;
esac
