#!/usr/bin/env bash
# Configures and builds one flavour of Kairos.
#   scripts/build.sh release   -> build/release (g++, -O3)
#   scripts/build.sh asan      -> build/asan    (g++, ASan + UBSan, -O1)
#   scripts/build.sh fuzz      -> build/fuzz    (clang, libFuzzer targets only)
# Compile time (docs/PERFORMANCE.md, "Build times"): the sanitizer and fuzz
# flavours carry line tables only (-g1, -gline-tables-only: function and line
# in every report's backtrace, no local variables; for a debugger session
# configure with CMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"), and the test
# executables' own sources are compiled at -O1 (release) and -Og (sanitizers)
# while the libraries they test keep -O3 and -O1 (KAIROS_TEST_OPT_FLAGS).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release -DKAIROS_TEST_OPT_FLAGS=-O1) ;;
  asan) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1"
    -DKAIROS_TEST_OPT_FLAGS=-Og -DKAIROS_SANITIZE=ON -DKAIROS_BENCH=OFF) ;;
  fuzz) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DKAIROS_FUZZ=ON
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG") ;;
  *) echo "build.sh: unknown flavour '$flavour' (expected release, asan or fuzz)" >&2; exit 2 ;;
esac
cmake -S . -B "build/$flavour" -G Ninja "${args[@]}" >/dev/null
cmake --build "build/$flavour" -j "$(nproc)" "$@"
