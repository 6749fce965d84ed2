# shellcheck shell=bash
# ./pvmmu build: the build trees build/, build-asan/ and build-tsan/.
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage_build() {
  cat <<'EOF'
usage: ./pvmmu build [--asan] [--tsan]

Configures (when needed) and builds, with -DPVMMU_WERROR=ON:
  (default)  build/
  --asan     build-asan/  with -DPVMMU_SANITIZE="address;undefined"
  --tsan     build-tsan/  with -DPVMMU_SANITIZE=thread
Both flags together build both sanitizer trees.
EOF
}

cmd_build() {
  local -a flavours=()
  while (($#)); do
    case $1 in
      -h | --help | help) usage_build; return 0 ;;
      --asan) flavours+=(asan) ;;
      --tsan) flavours+=(tsan) ;;
      *) usage_error build "unknown option '$1'" ;;
    esac
    shift
  done
  ((${#flavours[@]})) || flavours=(main)
  maybe_deps
  local f
  for f in "${flavours[@]}"; do
    build_tree "$f" || die "build of $(flavour_dir "$f")/ failed"
  done
}
