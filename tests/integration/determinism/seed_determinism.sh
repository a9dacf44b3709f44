#!/usr/bin/env bash
# Determinism across processes (DESIGN.md A1): one seed gives byte-identical output in two
# separate runs of the binary; two seeds give different ECMP hashing, and so different output,
# on a job whose DP and PP traffic crosses several ToRs (1,024 GPUs of MegaScale's fabric).
#   tests/integration/determinism/seed_determinism.sh MEGASIM_BINARY CATALOG_DIR
set -euo pipefail
megasim=$1
export MEGASIM_CATALOG_DIR=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/megasim-seed.XXXXXX")
trap 'rm -rf "$work"' EXIT
job=(simulate megascale-175b-12288 --set cluster.num_gpus=1024 --set training.global_batch_size=1024 --json)
"$megasim" "${job[@]}" --seed 1 >"$work/a1.json" 2>/dev/null
"$megasim" "${job[@]}" --seed 1 >"$work/b1.json" 2>/dev/null
"$megasim" "${job[@]}" --seed 2 >"$work/a2.json" 2>/dev/null
"$megasim" "${job[@]}" --seed 2 >"$work/b2.json" 2>/dev/null
cmp "$work/a1.json" "$work/b1.json" || { echo "FAIL: --seed 1 differs between two processes" >&2; exit 1; }
cmp "$work/a2.json" "$work/b2.json" || { echo "FAIL: --seed 2 differs between two processes" >&2; exit 1; }
if cmp -s "$work/a1.json" "$work/a2.json"; then
  echo "FAIL: --seed 1 and --seed 2 give the same output (the seed does not reach ECMP hashing)" >&2
  exit 1
fi
echo "seeds: each byte-identical across processes, 1 and 2 differ"
