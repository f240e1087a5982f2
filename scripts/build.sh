#!/usr/bin/env bash
# Configures and builds one flavour of Kairos.
#   scripts/build.sh release   -> build/release (g++, -O3)
#   scripts/build.sh asan      -> build/asan    (g++, ASan + UBSan, -O1)
#   scripts/build.sh fuzz      -> build/fuzz    (clang, libFuzzer targets only)
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
case "$flavour" in
  release) args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DKAIROS_SANITIZE=ON -DKAIROS_BENCH=OFF) ;;
  fuzz) args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DKAIROS_FUZZ=ON) ;;
  *) echo "build.sh: unknown flavour '$flavour' (expected release, asan or fuzz)" >&2; exit 2 ;;
esac
cmake -S . -B "build/$flavour" -G Ninja "${args[@]}" >/dev/null
cmake --build "build/$flavour" -j "$(nproc)" "$@"
