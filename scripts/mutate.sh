#!/usr/bin/env bash
# Mutation testing of the kernel against the simulator (docs/SIMULATION.md,
# "Mutation score"). Generates single-point mutants of the kernel's
# transaction bodies, the scheduler node and the worker mechanically, builds
# each into kairos-sim, runs a bounded batch that stops at the first failure,
# and classifies every mutant:
#   killed        the batch failed: an invariant violation, a crash, a hang
#                 past the time bound, a refused scenario or nondeterminism;
#   survived      the whole batch passed;
#   equivalent    listed in sim/mutants/equivalent.txt (by hand, with a
#                 reason): not built, not run;
#   build-failed  the mutant does not compile (counted, not scored).
# Score = killed / (killed + survived).
#
# Mutant ids are FILE:LINE:COLUMN:OPERATOR (1-based byte column), stable as
# long as the file is, so samples and equivalence lists can be checked in.
# Operators: lt2le le2lt gt2ge ge2gt eq2ne ne2eq (relational, at the
# operator), and2or or2and, lit+1 lit-1 (a decimal integer literal),
# if-true if-false (the whole condition of an `if` whose parentheses close on
# its line), drop-return (a `return ...;` that ends an `if` line or is the
# first statement of an `if`/`else` block), enum-next (in policy.cc and
# misfire.cc: `T::kX` becomes the next constant of T, in sorted order of the
# constants the core names). Never mutated: comments, preprocessor lines,
# KAIROS_CHECK statements (every line of them), string literals, and
# planted-bug code (job_store_planted_bugs.cc, lines naming a planted bug,
# functions named planted_*).
#
# The tree is mutated in place only while one mutant builds: the original is
# kept in the work directory and put back right after the build and by an
# EXIT/INT/TERM trap; the script refuses to start when a scoped file differs
# from git's HEAD. Builds run one at a time in a dedicated build directory
# (default build/mutate, -O1 with the C++ library's assertions,
# -D_GLIBCXX_ASSERTIONS: an index past a container's end or a read of an empty
# optional aborts, so such a mutant is killed instead of running on undefined
# behaviour; warnings not fatal: a mutant's warning is not a reason to skip
# it); each mutant's binary is copied out and its batch runs
# in the background, at most --jobs processes (builds included) at once.
#
# Usage: scripts/mutate.sh [--list] [--sample FILE] [--random K SEED]
#          [--limit N] [--files GLOB] [--jobs N] [--swarm N] [--seeds N]
#          [--build-dir DIR] [--out DIR] [--fail-on-survivor] [--stop-at TIME]
#          [--in-order] [--prepare]
#   --list               print the selected mutant ids with their line's
#                        text (and "equivalent" for the listed ones) and exit
#   --sample FILE        only the ids listed in FILE (first word of a line;
#                        `#` comments and blank lines ignored)
#   --random K SEED      K ids drawn reproducibly (MINSTD generator, partial
#                        Fisher-Yates shuffle over the full sorted list)
#   --limit N            the first N of the selection
#   --files GLOB         only files matching GLOB (a shell pattern on the
#                        path, e.g. 'core/kernel/job_store_*')
#   --jobs N             processes at once (default 1)
#   --swarm N            swarm seeds per mutant (default 8)
#   --seeds N            seeds 1..N per scenario (default 1)
#   --fail-on-survivor   exit 1 when a mutant survives
#   --stop-at TIME       start no mutant after TIME (date -d syntax, UTC); the
#                        rest count as "not-run"
#   --in-order           run in the order of the selection (default: by file
#                        and line, so that one translation unit rebuilds)
#   --prepare            only build the unmutated kairos-sim in the build
#                        directory and exit (a later run starts from it)
# Env: MUTATE_SCENARIOS (space-separated scenario files; default every
# scenario but the three heavy ones named below), MUTATE_TIMEOUT_FACTOR
# (a step may take this many times the unmutated build's time plus 60 s
# before it counts as a hang; default 5).
# Output: one line per mutant, "ID STATUS DETAIL", a summary, and the files
# results.tsv and survivors.txt in the work directory (--out, default a new
# /tmp/mutate.XXXXXX).
set -uo pipefail
cd "$(dirname "$0")/.."
export TZ=UTC LC_ALL=C

SCOPE=(core/kernel/job_store_control.cc core/kernel/job_store_dispatch.cc
       core/kernel/job_store_jobs.cc core/kernel/job_store_leadership.cc
       core/kernel/job_store_leases.cc core/kernel/run_lifecycle.cc core/kernel/misfire.cc
       core/kernel/policy.cc core/kernel/scheduler_node.cc core/kernel/worker.cc)
EQUIV=sim/mutants/equivalent.txt
# Heavy scenarios left out of the per-mutant batch (minutes each; the swarm
# and the other scenarios cover the same kernel paths).
HEAVY='day-in-the-life.scenario|day-in-the-life-1h.scenario|hundred-thousand-due-at-once.scenario'

list_only=0 sample="" rnd_k="" rnd_seed="" limit="" files_glob="" jobs=1 swarm=8 seeds=1
build_dir=build/mutate out="" fail_on_survivor=0 stop_at="" in_order=0 prepare=0
usage() { sed -n '/^# Usage:/,/^# Output:/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while (($#)); do
  case $1 in
    --list) list_only=1 ;;
    --sample) sample=${2:?}; shift ;;
    --random) rnd_k=${2:?}; rnd_seed=${3:?}; shift 2 ;;
    --limit) limit=${2:?}; shift ;;
    --files) files_glob=${2:?}; shift ;;
    --jobs) jobs=${2:?}; shift ;;
    --swarm) swarm=${2:?}; shift ;;
    --seeds) seeds=${2:?}; shift ;;
    --build-dir) build_dir=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    --fail-on-survivor) fail_on_survivor=1 ;;
    --in-order) in_order=1 ;;
    --prepare) prepare=1 ;;
    --stop-at) stop_at=$(date -u -d "${2:?}" +%s) || exit 2; shift ;;
    -h|--help) usage ;;
    *) echo "mutate: unknown option $1" >&2; usage ;;
  esac
  shift
done
for n in "$jobs" "$swarm" "$seeds" ${limit:+"$limit"} ${rnd_k:+"$rnd_k"} ${rnd_seed:+"$rnd_seed"}; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "mutate: '$n' is not a non-negative integer" >&2; exit 2; }
done
((jobs >= 1)) || { echo "mutate: --jobs must be at least 1" >&2; exit 2; }
[[ -z $sample || -r $sample ]] || { echo "mutate: cannot read sample file $sample" >&2; exit 2; }

files=()
for f in "${SCOPE[@]}"; do
  # shellcheck disable=SC2053
  [[ -z $files_glob || $f == $files_glob ]] && files+=("$f")
done
((${#files[@]})) || { echo "mutate: no file in scope matches $files_glob" >&2; exit 2; }

# The constants the core names, "T::kX" one a line, for enum-next.
ENUMS=$(mktemp /tmp/mutate-enums.XXXXXX)
grep -rhoE '\b[A-Z][A-Za-z0-9]*(::[A-Z][A-Za-z0-9]*)*::k[A-Z][A-Za-z0-9]*\b' core | sort -u > "$ENUMS"

# The mutation engine: in "gen" mode prints every mutant id of the files it
# reads; in "apply" mode (-v target=LINE -v col=C -v op=OP) prints the file
# with that one line mutated, or exits 3 when the mutant does not apply.
read -r -d '' ENGINE <<'AWK'
function mask(s,   out, i, c, q, n) {  # strings -> '_', cut at //
  out = ""; q = ""; n = length(s)
  for (i = 1; i <= n; i++) {
    c = substr(s, i, 1)
    if (q != "") {
      if (c == "\\") { out = out "__"; i++; continue }
      if (c == q) { q = ""; out = out c } else out = out "_"
      continue
    }
    if (c == "\"" || c == "'") {
      # a digit separator is not a quote
      if (c == "'" && substr(s, i - 1, 1) ~ /[0-9]/ && substr(s, i + 1, 1) ~ /[0-9]/) { out = out "_"; continue }
      q = c; out = out c; continue
    }
    if (c == "/" && substr(s, i + 1, 1) == "/") return out
    out = out c
  }
  return out
}
function close_paren(m, open,   i, d, c) {  # index of the ')' matching m[open]
  d = 0
  for (i = open; i <= length(m); i++) {
    c = substr(m, i, 1)
    if (c == "(") d++
    else if (c == ")") { d--; if (d == 0) return i }
  }
  return 0
}
function depth(m,   t) { t = m; return gsub(/\(/, "", t) - gsub(/\)/, "", m) }
function emit(col, o) { if (mode == "gen") print FILENAME ":" FNR ":" col ":" o; else if (col == want_col && o == op) found = 1 }
function enum_next(tok,   p, grp, k, first, nxt, c) {
  p = match(tok, /::k[A-Z][A-Za-z0-9]*$/); grp = substr(tok, 1, p - 1)
  first = ""; nxt = ""
  for (k = 1; k <= nenum; k++) {
    if (enum_grp[k] != grp) continue
    c = enum_tok[k]
    if (first == "") first = c
    if (c > tok && nxt == "") nxt = c
  }
  if (nxt == "") nxt = first
  return nxt == tok ? "" : nxt
}
# Every mutant of one line (s the text, m its mask, prev the previous line).
function scan(s, m, prev,   i, n, o, pat, cond, rest, t, v, pm, cp, st, ln) {
  n = split("<=:le2lt >=:ge2gt ==:eq2ne !=:ne2eq <:lt2le >:gt2ge &&:and2or ||:or2and", pat, " ")
  for (o = 1; o <= n; o++) {
    split(pat[o], t, ":")
    rest = m; i = 0
    while ((v = index(rest, " " t[1] " ")) > 0) { i += v; emit(i + 1, t[2]); rest = substr(rest, v + 1) }
  }
  # integer literals
  rest = m; i = 0
  while (match(rest, /[0-9]+/)) {
    v = i + RSTART
    if (substr(m, v - 1, 1) !~ /[A-Za-z0-9_.']/ && substr(m, v + RLENGTH, 1) !~ /[A-Za-z0-9_.'x]/) {
      emit(v, "lit+1")
      if (substr(m, v, RLENGTH) + 0 > 0) emit(v, "lit-1")
    }
    i += RSTART + RLENGTH - 1; rest = substr(rest, RSTART + RLENGTH)
  }
  # if conditions
  rest = m; i = 0
  while ((v = index(rest, "if (")) > 0) {
    i += v
    if (i == 1 || substr(m, i - 1, 1) ~ /[ {}]/) {
      cp = close_paren(m, i + 3)
      if (cp > 0) {
        cond = substr(m, i + 4, cp - i - 4)
        if (cond !~ /;/ && cond != "true" && cond != "false") { emit(i, "if-true"); emit(i, "if-false") }
      }
    }
    rest = substr(rest, v + 1)
  }
  # early returns
  v = index(m, "return")
  if (v > 0 && substr(m, v - 1, 1) ~ /[ ]/ && substr(m, v + 6, 1) ~ /[ ;]/ && m ~ /;[ ]*$/) {
    pm = mask(prev)
    if (m ~ /^[ ]*if \(.*\) return/ || (m ~ /^[ ]*return/ && pm ~ /^[ ]*(\} )?(if|else)[ ({].*\{[ ]*$/)) emit(v, "drop-return")
  }
  # enum constants (policy code only)
  if (FILENAME ~ /(policy|misfire)\.cc$/) {
    rest = m; i = 0
    while (match(rest, /[A-Z][A-Za-z0-9]*(::[A-Z][A-Za-z0-9]*)*::k[A-Z][A-Za-z0-9]*/)) {
      # enum_next() matches too: keep this match's place first.
      st = RSTART; ln = RLENGTH; v = i + st
      if (substr(m, v - 1, 1) !~ /[A-Za-z0-9_]/ && enum_next(substr(m, v, ln)) != "") emit(v, "enum-next")
      i += st + ln - 1; rest = substr(rest, st + ln)
    }
  }
}
# The mutated text of line s for (col, op), "" when it does not apply.
function mutate(s, m, col, op,   t, e, tok, nx, p, ln) {
  if (op ~ /2/) {
    split("lt2le:<:<= le2lt:<=:< gt2ge:>:>= ge2gt:>=:> eq2ne:==:!= ne2eq:!=:== and2or:&&:|| or2and:||:&&", t, " ")
    for (p in t) {
      split(t[p], e, ":")
      if (e[1] == op && substr(m, col - 1, length(e[2]) + 2) == " " e[2] " ")
        return substr(s, 1, col - 1) e[3] substr(s, col + length(e[2]))
    }
    return ""
  }
  if (op == "lit+1" || op == "lit-1") {
    if (!match(substr(m, col), /^[0-9]+/)) return ""
    tok = substr(m, col, RLENGTH)
    return substr(s, 1, col - 1) (tok + (op == "lit+1" ? 1 : -1)) substr(s, col + RLENGTH)
  }
  if (op == "if-true" || op == "if-false") {
    if (substr(m, col, 4) != "if (") return ""
    p = close_paren(m, col + 3); if (p == 0) return ""
    return substr(s, 1, col + 3) (op == "if-true" ? "true" : "false") substr(s, p)
  }
  if (op == "drop-return") {
    if (substr(m, col, 6) != "return") return ""
    p = match(m, /;[ ]*$/); if (p < col) return ""
    return substr(s, 1, col - 1) "{}" substr(s, p + 1)
  }
  if (op == "enum-next") {
    if (!match(substr(m, col), /^[A-Z][A-Za-z0-9]*(::[A-Z][A-Za-z0-9]*)*::k[A-Z][A-Za-z0-9]*/)) return ""
    ln = RLENGTH; tok = substr(m, col, ln); nx = enum_next(tok); if (nx == "") return ""
    return substr(s, 1, col - 1) nx substr(s, col + ln)
  }
  return ""
}
BEGIN {
  nenum = 0
  while ((getline e < enums) > 0) { nenum++; enum_tok[nenum] = e; p = match(e, /::k[A-Z][A-Za-z0-9]*$/); enum_grp[nenum] = substr(e, 1, p - 1) }
}
FNR == 1 { incheck = 0; inplanted = 0; prev = "" }
{
  s = $0; skip = 0; m = mask(s)
  if (inplanted) { skip = 1; if (s ~ /^}/) inplanted = 0 }
  else if (s ~ /^[A-Za-z].*[ :]planted_[a-z_]*\(/ && s !~ /[;}][ ]*$/) { skip = 1; inplanted = 1 }
  if (incheck > 0) { skip = 1; incheck += depth(m) }
  else if (m ~ /KAIROS_CHECK/) { skip = 1; incheck = depth(substr(m, index(m, "KAIROS_CHECK"))) }
  if (m ~ /^[ ]*(\/\*|\*|#)/ || m ~ /bugs\.|bugs_\.|[Pp]lanted/) skip = 1
  if (mode == "gen") { if (!skip) scan(s, m, prev) }
  else if (FNR == target) {
    if (skip) exit 3
    want_col = col; found = 0; scan(s, m, prev)
    if (!found) exit 3
    r = mutate(s, m, col, op); if (r == "" || r == s) exit 3
    s = r
  }
  prev = $0
  if (mode != "gen") print s
}
AWK

generate() { awk -v mode=gen -v enums="$ENUMS" "$ENGINE" "${files[@]}"; }
# The trimmed text of line N of FILE.
line_text() { awk -v n="$2" 'FNR == n { sub(/^[ \t]+/, ""); sub(/[ \t]+$/, ""); print; exit }' "$1"; }

# The selection: every id, or the sample's, then --random, then --limit.
WORK=${out:-$(mktemp -d /tmp/mutate.XXXXXX)}
mkdir -p "$WORK"
generate > "$WORK/all.txt"
# resolve_id ID TEXT: prints the id of the mutant ID named when TEXT was its
# line's text (trimmed, as --list prints it): ID itself while its line still
# reads TEXT (or TEXT is empty), else the same column and operator on the
# one line of the file that reads TEXT, so that checked-in ids follow their
# lines when edits elsewhere in the file move them. Fails when neither is
# found (the line changed, or several lines read TEXT).
resolve_id() {
  local id=$1 text=$2 f l c o hits=()
  IFS=: read -r f l c o <<< "$id"
  if grep -qxF "$id" "$WORK/all.txt" && { [[ -z $text ]] || [[ $(line_text "$f" "$l") == "$text" ]]; }; then
    echo "$id"; return 0
  fi
  [[ -n $text && -r $f ]] && mapfile -t hits < <(awk -v t="$text" '{ s = $0; sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s) } s == t { print FNR }' "$f")
  if ((${#hits[@]} == 1)) && grep -qxF "$f:${hits[0]}:$c:$o" "$WORK/all.txt"; then
    echo "mutate: $id moved to line ${hits[0]}" >&2; echo "$f:${hits[0]}:$c:$o"; return 0
  fi
  return 1
}
if [[ -n $sample ]]; then
  # "ID [TEXT]": TEXT, the mutated line as --list printed it (trimmed), lets
  # an id follow its line when edits elsewhere in the file moved it.
  stale=()
  while IFS= read -r entry; do
    [[ $entry =~ ^[[:space:]]*(#|$) ]] && continue
    entry=${entry#"${entry%%[![:space:]]*}"}
    id=${entry%%[[:space:]]*}
    text=${entry#"$id"}; text=${text#"${text%%[![:space:]]*}"}
    resolve_id "$id" "$text" || stale+=("$id")
  done < "$sample" > "$WORK/selected.txt"
  if ((${#stale[@]})); then
    echo "mutate: ids of $sample no longer found (their line changed; regenerate the sample):" >&2
    printf '  %s\n' "${stale[@]}" >&2; exit 2
  fi
else
  cp "$WORK/all.txt" "$WORK/selected.txt"
fi
if [[ -n $rnd_k ]]; then
  awk -v k="$rnd_k" -v seed="$rnd_seed" '
    { id[NR - 1] = $0 }
    END {
      n = NR; x = seed % 2147483647; if (x <= 0) x += 2147483646
      for (i = 0; i < k && i < n; i++) {
        x = (x * 48271) % 2147483647
        j = i + x % (n - i)
        t = id[i]; id[i] = id[j]; id[j] = t
        print id[i]
      }
    }' "$WORK/selected.txt" > "$WORK/sel.tmp" && mv "$WORK/sel.tmp" "$WORK/selected.txt"
fi
[[ -z $limit ]] || { head -n "$limit" "$WORK/selected.txt" > "$WORK/sel.tmp"; mv "$WORK/sel.tmp" "$WORK/selected.txt"; }
# The equivalents: "ID<TAB>LINE TEXT<TAB>REASON" per line, the id resolved
# as a sample's is; an entry whose line is gone stops the run (it would
# otherwise excuse whatever mutant now has its id).
declare -A equiv=()
if [[ -r $EQUIV ]]; then
  stale=()
  while IFS=$'\t' read -r id text reason; do
    [[ -z $id || $id == \#* ]] && continue
    if cur=$(resolve_id "$id" "$text"); then equiv[$cur]=$reason; else stale+=("$id"); fi
  done < "$EQUIV"
  if ((${#stale[@]})); then
    echo "mutate: equivalents in $EQUIV no longer found (their line changed; re-judge them):" >&2
    printf '  %s\n' "${stale[@]}" >&2; exit 2
  fi
fi
if ((list_only)); then
  while IFS=: read -r f l c o; do
    id="$f:$l:$c:$o"
    printf '%s\t%s%s\n' "$id" "$(line_text "$f" "$l")" "${equiv[$id]+$'\t'equivalent}"
  done < "$WORK/selected.txt"
  rm -f "$ENUMS"; exit 0
fi

# ---- running ---------------------------------------------------------------
for f in "${files[@]}"; do
  git diff --quiet HEAD -- "$f" || { echo "mutate: $f differs from HEAD; commit or revert it first" >&2; exit 2; }
done
mkdir -p "$WORK/orig" "$WORK/bin" "$WORK/res" "$WORK/log"
mutated=""
bg_pids=()
restore() {
  if [[ -n $mutated ]]; then cp "$WORK/orig/cur" "$mutated"; mutated=""; fi
}
cleanup() {
  restore
  for p in "${bg_pids[@]}"; do pkill -TERM -P "$p" 2> /dev/null; kill "$p" 2> /dev/null; done
  rm -f "$ENUMS"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

MUTANT_FLAGS="-O1 -DNDEBUG -D_GLIBCXX_ASSERTIONS"
if [[ ! -f $build_dir/build.ninja ]] ||
   ! grep -qxF "CMAKE_CXX_FLAGS_RELEASE:STRING=$MUTANT_FLAGS" "$build_dir/CMakeCache.txt"; then
  mkdir -p "$build_dir"
  printf '#!/bin/sh\nexec "$@" -Wno-error\n' > "$build_dir/cxx-launcher"; chmod +x "$build_dir/cxx-launcher"
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="$MUTANT_FLAGS" \
    -DKAIROS_BENCH=OFF -DKAIROS_TESTS=OFF -DCMAKE_CXX_COMPILER_LAUNCHER="$PWD/$build_dir/cxx-launcher" \
    > "$WORK/log/cmake.log" 2>&1 || { echo "mutate: cmake failed (see $WORK/log/cmake.log)" >&2; exit 2; }
fi
build() { nice -n 19 ninja -C "$build_dir" -j "$jobs" kairos-sim > "$1" 2>&1; }
if ((prepare)); then
  # Only the unmutated build, so that a later run starts from it (the test
  # command builds it beside the sanitizer tests).
  build "$WORK/log/build-base.log" || { echo "mutate: the unmutated tree does not build (see $WORK/log/build-base.log)" >&2; exit 2; }
  echo "mutate: prepared $build_dir/sim/kairos-sim"
  exit 0
fi

if [[ -n ${MUTATE_SCENARIOS:-} ]]; then
  read -r -a scenarios <<< "$MUTATE_SCENARIOS"
else
  mapfile -t scenarios < <(find scenarios -name '*.scenario' | grep -vE "/($HEAVY)$" | sort)
fi
factor=${MUTATE_TIMEOUT_FACTOR:-5}

# One batch: the swarm first (it kills most), then each scenario; stops at the
# first failure. Prints "killed DETAIL" or "survived". With a time budget file
# it enforces the per-step bounds; without (the unmutated run) it writes them.
batch() {  # bin log budget-file(read|write) mode
  local bin=$1 log=$2 budget=$3 mode=$4 rc t0 limit s name
  run_step() {  # name cmd...
    name=$1; shift
    if [[ $mode == write ]]; then
      t0=$SECONDS; nice -n 19 "$@" >> "$log" 2>&1; rc=$?
      echo "$name $(((SECONDS - t0) * factor + 60))" >> "$budget"
    else
      limit=$(awk -v n="$name" '$1 == n { print $2 }' "$budget"); limit=${limit:-600}
      nice -n 19 timeout -k 5 "$limit" "$@" >> "$log" 2>&1; rc=$?
    fi
    case $rc in
      0) return 0 ;;
      1) echo "killed $name: $(grep -m1 '^VIOLATION' "$log" | cut -c1-100)" ;;
      3) echo "killed $name: nondeterministic" ;;
      2) echo "killed $name: refused (exit 2): $(tail -1 "$log" | cut -c1-80)" ;;
      124|137) echo "killed $name: hang (over ${limit}s)" ;;
      *) echo "killed $name: crash (exit $rc)" ;;
    esac
    return 1
  }
  run_step swarm "$bin" --swarm --runs "$swarm" --seed 1 --stop-on-failure || return
  for s in "${scenarios[@]}"; do
    run_step "$s" "$bin" --scenario "$s" --seeds "1..$seeds" --stop-on-failure || return
  done
  run_step determinism "$bin" --swarm --runs 1 --seed 2 --check-determinism || return
  echo survived
}


mapfile -t ids < "$WORK/selected.txt"
# Same file together: one translation unit recompiles per mutant.
((in_order)) || mapfile -t ids < <(printf '%s\n' "${ids[@]}" | sort -t: -k1,1 -k2,2n -k3,3n -s)
total=${#ids[@]}
echo "mutate: $total mutants; work directory $WORK; batch: swarm x $swarm, ${#scenarios[@]} scenarios x $seeds seeds, jobs $jobs"

echo "mutate: building the unmutated kairos-sim in $build_dir"
build "$WORK/log/build-base.log" || { echo "mutate: the unmutated tree does not build (see $WORK/log/build-base.log)" >&2; exit 2; }
cp "$build_dir/sim/kairos-sim" "$WORK/bin/base"
: > "$WORK/budget"
base=$(batch "$WORK/bin/base" "$WORK/log/base.log" "$WORK/budget" write)
[[ $base == survived ]] || { echo "mutate: the unmutated tree fails its batch: $base (see $WORK/log/base.log)" >&2; exit 2; }
echo "mutate: unmutated batch passed in $(awk -v f="$factor" '{ s += ($2 - 60) / f } END { print s }' "$WORK/budget")s"

throttle() { while (($(jobs -rp | wc -l) >= $1)); do wait -n; done; }
i=0
for id in "${ids[@]}"; do
  i=$((i + 1))
  IFS=: read -r file line col op <<< "$id"
  if [[ -n $stop_at ]] && (($(date +%s) >= stop_at)); then
    printf "%s\tnot-run\t--stop-at reached\n" "$id" > "$WORK/res/$i"; continue
  fi
  if [[ -n ${equiv[$id]+x} ]]; then
    printf '%s\tequivalent\t%s\n' "$id" "${equiv[$id]}" > "$WORK/res/$i"; continue
  fi
  throttle "$jobs"
  cp "$file" "$WORK/orig/cur"
  if ! awk -v mode=apply -v enums="$ENUMS" -v target="$line" -v col="$col" -v op="$op" "$ENGINE" "$file" > "$WORK/mutant.cc"; then
    echo "mutate: $id does not apply to $file" >&2; exit 2
  fi
  mutated=$file
  cp "$WORK/mutant.cc" "$file"
  t_build=$SECONDS
  if build "$WORK/log/build-$i.log"; then
    t_build=$((SECONDS - t_build))
    restore
    cp "$build_dir/sim/kairos-sim" "$WORK/bin/$i"
    (
      t_run=$SECONDS
      r=$(batch "$WORK/bin/$i" "$WORK/log/run-$i.log" "$WORK/budget" read)
      printf "%s\t%s\t%s\t%s\n" "$id" "${r%% *}" "$(echo "$r" | cut -s -d" " -f2-)" "build ${t_build}s, batch $((SECONDS - t_run))s" > "$WORK/res/$i"
      rm -f "$WORK/bin/$i"
      printf '[%d/%d] %s %s\n' "$i" "$total" "$id" "$r"
    ) &
    bg_pids+=($!)
  else
    restore
    printf '%s\tbuild-failed\t%s\n' "$id" "$(grep -m1 'error:' "$WORK/log/build-$i.log" | cut -c1-100)" > "$WORK/res/$i"
    printf '[%d/%d] %s build-failed\n' "$i" "$total" "$id"
  fi
done
wait
bg_pids=()
restore

cat "$WORK"/res/* 2> /dev/null | sort > "$WORK/results.tsv"
count() { awk -F'\t' -v s="$1" '$2 == s' "$WORK/results.tsv" | wc -l; }
killed=$(count killed) survived=$(count survived) equivalent=$(count equivalent) broken=$(count build-failed) notrun=$(count not-run)
awk -F'\t' '$2 == "survived" { print $1 }' "$WORK/results.tsv" > "$WORK/survivors.txt"
echo
echo "mutate: killed $killed, survived $survived, equivalent $equivalent, build-failed $broken, not run $notrun (of $total)"
if ((killed + survived > 0)); then
  echo "mutate: score $(awk -v k="$killed" -v s="$survived" 'BEGIN { printf "%.1f%%", 100 * k / (k + s) }') = killed / (killed + survived)"
fi
awk -F"\t" '{ split($1, p, ":"); f[p[1]]; n[p[1] SUBSEP $2]++ }
  END { for (x in f) printf "  %-40s killed %3d  survived %3d  equivalent %2d  build-failed %2d\n", x, n[x SUBSEP "killed"], n[x SUBSEP "survived"], n[x SUBSEP "equivalent"], n[x SUBSEP "build-failed"] }' "$WORK/results.tsv" | sort
if ((survived > 0)); then echo "survivors:"; sed 's/^/  /' "$WORK/survivors.txt"; fi
echo "results: $WORK/results.tsv"
if ((fail_on_survivor && survived > 0)); then exit 1; fi
exit 0
