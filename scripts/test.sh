#!/usr/bin/env bash
# README command 2: set everything up, build with AddressSanitizer + UBSan and warnings as
# errors, and run every test (tiers unit, textbook, golden, calibration, integration: ctest labels,
# docs/ENGINEERING.md), ending with ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
MEGASIM_WITH_BROWSER=1 MEGASIM_WITH_SLURM=1 scripts/setup.sh build-test -DMEGASIM_SANITIZE=ON -DMEGASIM_WERROR=ON -DMEGASIM_BUILD_BENCH=ON
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-test --output-on-failure -j"$(nproc)"
