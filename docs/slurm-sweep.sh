#!/bin/bash
# Run a megasim what-if sweep as a Slurm job array: each array task simulates one disjoint
# shard of the grid (points p with p % N == I), and a dependent job merges the shards into the
# table the unsharded sweep would print, byte for byte.
#
#   sbatch docs/slurm-sweep.sh            # submits the array; the merge job follows it
#
# Adjust SHARDS, the --vary axes and the config below, or override them from the environment
# (sbatch passes it on to the job, and on to the merge), with the array range to match:
#
#   SWEEP_SHARDS=4 SWEEP_ENGINE=analytic SWEEP_VARY="cluster.num_gpus=768:3072:x2" \
#     sbatch --array=0-3 docs/slurm-sweep.sh
#
# Shards are numbered from 0, so the array range is 0..SHARDS-1. Each task uses all CPUs Slurm
# gives it (--jobs).
#SBATCH --job-name=megasim-sweep
#SBATCH --array=0-15
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
#SBATCH --output=sweep-%A_%a.log

set -euo pipefail

MEGASIM=${MEGASIM:-megasim}                     # the binary, if it is not on PATH
SHARDS=${SWEEP_SHARDS:-16}                      # must match --array=0-(SHARDS-1)
CONFIG=${SWEEP_CONFIG:-megascale-175b-12288}    # a bundled job name or a JSON file
ENGINE=${SWEEP_ENGINE:-des}
OUT=${SWEEP_OUT:-sweep-out}                     # shard outputs land here
# The grid: one --vary axis per space-separated word.
VARY=${SWEEP_VARY:-"cluster.num_gpus=768:12288:x2 \
                    system.preset=megatron-lm,megascale \
                    parallel.virtual_pipeline_model_parallel_size=1,2,3,6"}
mkdir -p "$OUT"

if [[ -n "${SLURM_ARRAY_TASK_ID:-}" && "${MEGASIM_MERGE:-0}" != 1 ]]; then
  # One shard.
  read -ra axes <<< "$VARY"
  vary=()
  for axis in "${axes[@]}"; do vary+=(--vary "$axis"); done
  "$MEGASIM" sweep "$CONFIG" "${vary[@]}" \
    --engine "$ENGINE" \
    --jobs "${SLURM_CPUS_PER_TASK:-1}" \
    --shard "${SLURM_ARRAY_TASK_ID}/${SHARDS}" \
    --csv "$OUT/shard-${SLURM_ARRAY_TASK_ID}.csv"

  # The first task submits the merge, to run once every task of the array has finished.
  if [[ "${SLURM_ARRAY_TASK_ID}" == 0 ]]; then
    sbatch --dependency="afterok:${SLURM_ARRAY_JOB_ID}" --array=0 --cpus-per-task=1 \
      --export=ALL,MEGASIM_MERGE=1 --job-name=megasim-merge "$0"
  fi
  exit 0
fi

# Merge step: all shard files in, one table out (merge fails if a shard is missing).
"$MEGASIM" merge "$OUT"/shard-*.csv --csv sweep.csv
echo "merged $(($(wc -l < sweep.csv) - 1)) points into sweep.csv"
