#!/usr/bin/env bash
# Installs exactly the Debian 12 packages Kairos needs that are missing.
# Idempotent and quiet when nothing is missing. Must run as root (or with sudo
# available) when something has to be installed.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build pkg-config make
  libabsl-dev
  libboost1.81-dev libboost-json1.81-dev
  liblmdb-dev lmdb-utils
  libmimalloc-dev
  libssl-dev
  libpq-dev postgresql
  libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  clang libclang-rt-14-dev clang-format lld
  tzdata curl jq
  chromium chromium-driver python3-selenium
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
