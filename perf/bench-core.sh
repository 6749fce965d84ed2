#!/bin/sh
# `./pvmmu bench core`: the core's instructions and time per PTE.
# Options are bench_core.py's (--help); build/ must already be built.
command -v python3 >/dev/null || { echo "bench core: python3 missing (apt-get install python3)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "bench core: valgrind missing (apt-get install valgrind)" >&2; exit 2; }
exec python3 "$(dirname "$0")/bench_core.py" "$@"
