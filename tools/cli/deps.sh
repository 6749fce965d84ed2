# shellcheck shell=bash
# ./pvmmu deps: installs the missing Debian packages of tools/deps.txt.
# shellcheck source=tools/cli/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage_deps() {
  cat <<'EOF'
usage: ./pvmmu deps

Checks every package of tools/deps.txt with dpkg-query and installs the missing
ones with apt-get (apt-get update once, then install --no-install-recommends).
Runs as root, through sudo when not root, or prints the apt-get command and
fails when neither is possible. Does nothing, quickly, when nothing is missing.
EOF
}

cmd_deps() {
  if is_help "${1:-}"; then usage_deps; return 0; fi
  (($# == 0)) || usage_error deps "unexpected argument '$1'"
  ensure_deps verbose
}
