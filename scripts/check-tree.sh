#!/usr/bin/env bash
# House checks that keep the tree honest; CI runs them (scripts/test.sh).
#   layers: what each folder may include (core/README.md states the rules)
#   format: every C++ file is as clang-format (.clang-format) leaves it
#   checks: the kernel asserts its invariants where it keeps them: at least
#           KERNEL_CHECKS_PER_KLOC (15) always-on checks per 1,000 lines
# Prints what is wrong and ends with "N passed, M failed".
#   scripts/check-tree.sh [layers|format|checks]...   (default: all three)
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0
failed=0

# Prints every include in FILES... (tracked C++ files under the given folders)
# that names a path matching the regex FORBIDDEN, as "file:line: include".
forbidden() {  # rule-text forbidden-regex folder...
  local rule=$1 re=$2
  shift 2
  local hits
  hits=$(git ls-files -- "${@/%//*.h}" "${@/%//*.cc}" |
    xargs -r grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($re)" 2>/dev/null)
  if [[ -n $hits ]]; then
    printf 'layers: %s\n%s\n' "$rule" "$hits"
    return 1
  fi
}

check_layers() {
  local ok=0
  # The dependency rule of the whole tree.
  forbidden "core/ includes only core/, the standard library and Abseil" \
    'sim/|prod/|tests/|boost/|lmdb\.h|libpq' core || ok=1
  forbidden "core/ does no I/O and starts no threads: those are adapters' work" \
    'thread>|fstream>|iostream>|filesystem>|mutex>|condition_variable>|future>' core || ok=1
  forbidden "sim/ and prod/ never include each other" 'prod/' sim || ok=1
  forbidden "sim/ and prod/ never include each other" 'sim/' prod || ok=1
  # Inside core/: base <- ports <- twins; base, ports <- schedule <- kernel.
  forbidden "core/base/ includes only core/base/" 'core/(ports|twins|schedule|kernel)/' core/base || ok=1
  forbidden "core/ports/ (the contracts) include only core/base/ and other ports" \
    'core/(twins|schedule|kernel)/' core/ports || ok=1
  forbidden "core/twins/ implement ports: they include base/ and ports/ only" \
    'core/(schedule|kernel)/' core/twins || ok=1
  forbidden "core/schedule/ never includes the kernel or the twins" 'core/(twins|kernel)/' core/schedule || ok=1
  forbidden "core/kernel/ uses ports, never their in-memory twins" 'core/twins/' core/kernel || ok=1
  return $ok
}

check_format() {
  command -v clang-format >/dev/null || { echo "format: clang-format not installed"; return 1; }
  local bad
  bad=$(git ls-files -- '*.h' '*.cc' | while read -r f; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"
  done)
  if [[ -n $bad ]]; then
    printf 'format: these files differ from clang-format (run: clang-format -i FILE):\n%s\n' "$bad"
    return 1
  fi
}

# Always-on checks (KAIROS_CHECK, KAIROS_CHECK_MSG, static_assert) per 1,000
# lines of core/kernel/, over the folder as a whole.
check_density() {
  local want=${KERNEL_CHECKS_PER_KLOC:-15} lines checks
  lines=$(git ls-files -- 'core/kernel/*.h' 'core/kernel/*.cc' | xargs cat | wc -l)
  checks=$(git ls-files -- 'core/kernel/*.h' 'core/kernel/*.cc' |
    xargs grep -ohE '\b(KAIROS_CHECK(_MSG)?|static_assert)\(' | wc -l)
  echo "checks: core/kernel/ has $checks always-on checks in $lines lines" \
    "($((checks * 1000 / lines)) per 1,000; at least $want wanted)"
  ((checks * 1000 >= want * lines))
}

checks=("$@")
[[ ${#checks[@]} -eq 0 ]] && checks=(layers format checks)
for c in "${checks[@]}"; do
  case $c in
    layers) check_layers && { passed=$((passed + 1)); echo "layers: ok"; } || failed=$((failed + 1)) ;;
    format) check_format && { passed=$((passed + 1)); echo "format: ok"; } || failed=$((failed + 1)) ;;
    checks) check_density && passed=$((passed + 1)) || failed=$((failed + 1)) ;;
    *) echo "check-tree: unknown check '$c' (expected layers, format or checks)" >&2; exit 2 ;;
  esac
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
