#!/usr/bin/env bash
# Installs megasim's build dependencies from Debian packages (only those missing) and
# configures + builds the project. Idempotent: re-running skips apt when nothing is missing.
#   scripts/setup.sh [BUILD_DIR] [extra cmake args...]
# MEGASIM_WITH_BROWSER=1 also installs chromium (for the report's browser test).
# MEGASIM_WITH_SLURM=1 also installs Slurm and munge (for the Slurm job-array test).
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(g++ cmake ninja-build ccache libboost-graph-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
          libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev python3)
# The test suite also renders the capacity report in a real browser.
if [ "${MEGASIM_WITH_BROWSER:-0}" = "1" ]; then PACKAGES+=(chromium fonts-liberation); fi
# ...and runs docs/slurm-sweep.sh on a private one-node Slurm cluster (tests/integration/slurm).
if [ "${MEGASIM_WITH_SLURM:-0}" = "1" ]; then PACKAGES+=(slurmctld slurmd slurm-client munge); fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

BUILD_DIR=${1:-build}
shift || true
# ccache keys on the compile command: with the checkout's own path rewritten to relative ones
# (base_dir) and the working directory left out of the hash (RelWithDebInfo passes -g), a fresh
# clone elsewhere (CI's) reuses the objects an earlier build of the same sources left.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >&2
cmake --build "$BUILD_DIR" -j"$(nproc)" >&2
