#!/usr/bin/env bash
# README command 1: set everything up, build, and run the main job on the bundled default
# (MegaScale's 175B model on 12,288 A100s), printing its report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build -DMEGASIM_BUILD_TESTS=OFF
exec build/megasim simulate configs/megascale-175b-12288.json "$@"
