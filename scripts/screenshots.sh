#!/usr/bin/env bash
# Regenerates docs/images/overview.png and docs/images/job.png: runs the
# dashboard's browser test (tests/browser/) against the built binary and
# keeps the screenshots it takes of the overview and of a job page. Needs
# chromium, chromium-driver and python3-selenium (scripts/setup.sh). Not run
# by CI.
#   scripts/screenshots.sh [path/to/kairos]   (default build/release/prod/kairos)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kairos=${1:-$root/build/release/prod/kairos}
[ -x "$kairos" ] || { echo "screenshots: no binary at $kairos (build it first)"; exit 2; }
mkdir -p "$root/docs/images"
python=/usr/bin/python3
[ -x "$python" ] || python=python3
"$python" "$root/tests/browser/dashboard_browser_test.py" "$kairos" --screenshots "$root/docs/images"
ls -l "$root/docs/images/overview.png" "$root/docs/images/job.png"
