#!/usr/bin/env bash
# Issue 27's speed targets, measured through the CLI: median of 3 runs of each (wall seconds and
# peak RSS from /usr/bin/time), PASS/FAIL against the target. Run on the 2-core reference machine
# after `scripts/run-default.sh` has built build/megasim:
#     bench/speed-targets.sh [--skip-validate] [path/to/megasim]
# (the full validate is the slowest target: --skip-validate leaves it out)
# Results are recorded in bench/RESULTS.md and docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
skip_validate=0
if [[ ${1:-} == --skip-validate ]]; then skip_validate=1; shift; fi
bin=${1:-build/megasim}
export MEGASIM_CATALOG_DIR=${MEGASIM_CATALOG_DIR:-$PWD/configs}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median_run NAME -- CMD...: prints "median_wall_s max_rss_MiB"
median_run() {
  local name=$1; shift; shift
  local walls=() rss=0
  for i in 1 2 3; do
    if ! /usr/bin/time -f "%e %M" -o "$tmp/t" "$@" > /dev/null 2> "$tmp/err"; then
      echo "speed-targets: '$name' failed: $(tail -1 "$tmp/err")" >&2
      kill -TERM $$  # a target that cannot run is not a pass
    fi
    read -r w m < "$tmp/t"
    walls+=("$w"); (( m > rss )) && rss=$m
  done
  local med
  med=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n 2p)
  echo "$med $((rss / 1024))"
}

check() {  # check NAME VALUE LIMIT UNIT
  local verdict=PASS
  awk -v v="$2" -v l="$3" 'BEGIN { exit !(v <= l) }' || verdict=FAIL
  printf '%-58s %10s %-4s (target <= %s %s)  %s\n' "$1" "$2" "$4" "$3" "$4" "$verdict"
}

read -r t_default _ < <(median_run default -- "$bin" simulate megascale-175b-12288)
check "bundled default step (MegaScale 175B, 12,288 GPUs)" "$t_default" 1 s

job=configs/bench/llama-3.1-70b-98304-h100.json
read -r t12 _ < <(median_run 12k -- "$bin" simulate "$job" --set cluster.num_gpus=12288 --set training.global_batch_size=6144)
read -r t98 rss98 < <(median_run 98k -- "$bin" simulate "$job")
printf '%-58s %10s %-4s (reference for the ratio)\n' "Llama-3.1-70B, 12,288 GPUs, event engine" "$t12" s
check "Llama-3.1-70B, 98,304 GPUs, event engine" "$t98" 10 s
check "  its peak memory" "$rss98" 4096 MiB
check "  its wall time over the 12,288-GPU run's" "$(awk -v a="$t98" -v b="$t12" 'BEGIN { printf "%.2f", a / b }')" 3 x

# bench/bench_plan.cpp's search: batches 1260, 2520, 2564 (MegaScale runs batch = GPUs for 530B)
read -r t_plan _ < <(median_run plan -- "$bin" plan configs/bench/plan-530b-5128.json --gpus 5120 --top 10 --no-progress \
  --batch 1260 --batch 2520 --batch 2564)
check "plan 530B on 5,120 GPUs, event-engine re-rank of the top 10" "$t_plan" 3 s

for algo in ring tree; do
  read -r t_coll _ < <(median_run coll -- "$bin" collective megascale-175b-12288 --set cluster.num_gpus=4096 \
    --op all_reduce --gpus 4096 --sizes 64MiB:64MiB --algo "$algo" --engine des)
  check "collective --engine des, 64 MiB all-reduce, 4,096 GPUs, $algo" "$t_coll" 0.5 s
done

(( skip_validate )) && exit 0
read -r t_val _ < <(median_run validate -- bash -c "\"$bin\" validate > /dev/null || [ \$? -eq 3 ]")
check "validate (every suite)" "$t_val" 300 s
