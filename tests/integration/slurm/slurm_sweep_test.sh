#!/usr/bin/env bash
# Runs docs/slurm-sweep.sh, the documented job-array script, on a real one-node Slurm cluster
# brought up on localhost, and checks that the merged table is byte-identical to the unsharded
# sweep. The cluster (munged, slurmctld, slurmd) is private to this run: its own key, socket,
# ports, config and state, all in one temp dir, so it neither needs nor touches a system Slurm.
#
#   tests/integration/slurm/slurm_sweep_test.sh MEGASIM_BINARY REPO_ROOT
#
# Exit: 0 pass; 1 fail; 77 skip (Slurm or munge not installed, not root, or the daemons cannot
# start on this machine). MEGASIM_SLURM_KEEP=1 keeps the temp dir for a post-mortem.
set -uo pipefail  # no -e: every failure goes through fail(), which prints the logs

say() { echo "slurm-test: $*"; }
skip() { say "SKIP: $*"; exit 77; }

if [ $# -ne 2 ]; then
  echo "usage: $0 MEGASIM_BINARY REPO_ROOT" >&2
  exit 1
fi
MEGASIM=$(realpath "$1") || exit 1
REPO=$(realpath "$2") || exit 1
[ -x "$MEGASIM" ] || { say "FAIL: $MEGASIM is not an executable"; exit 1; }
[ -f "$REPO/docs/slurm-sweep.sh" ] || { say "FAIL: no docs/slurm-sweep.sh under $REPO"; exit 1; }

# The daemons live in sbin, which a CI user's PATH may lack.
export PATH="$PATH:/usr/sbin:/sbin"
for tool in munged mungekey munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol scancel; do
  command -v "$tool" >/dev/null || skip "$tool not found (apt-get install slurmctld slurmd slurm-client munge)"
done
# slurmd launches jobs as their owner, which needs root.
[ "$(id -u)" -eq 0 ] || skip "slurmd needs root"

# A surrounding Slurm job (CI under Slurm) or a user's defaults would leak into sbatch/squeue.
while read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN|SQUEUE|SINFO)_')

SHARDS=4
GRID="cluster.num_gpus=768:3072:x2 system.preset=megatron-lm,megascale"
ENGINE=analytic
CONFIG=megascale-175b-12288
export MEGASIM_CATALOG_DIR="$REPO/configs"

T=$(mktemp -d "${TMPDIR:-/tmp}/megasim-slurm.XXXXXX") || exit 1
CONF=$T/slurm.conf
mkdir -p "$T/state" "$T/spool" "$T/log" "$T/work"
MUNGED_PID="" CTLD_PID="" SLURMD_PID=""
START=$SECONDS

stop_pid() {  # stop_pid PID: TERM, then KILL after 10 s
  local pid=$1 i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}

cleanup() {
  local rc=$? p i
  trap - EXIT
  if [ -n "$CTLD_PID" ] && kill -0 "$CTLD_PID" 2>/dev/null; then
    scancel --user=root >/dev/null 2>&1
    for ((i = 0; i < 50; i++)); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  stop_pid "$SLURMD_PID"
  stop_pid "$CTLD_PID"
  stop_pid "$MUNGED_PID"
  # slurmstepd and job processes outlive slurmd by design; everything this cluster started
  # carries its SLURM_CONF, which identifies them exactly (grep runs without it).
  unset SLURM_CONF
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] && continue
    grep -qzxF "SLURM_CONF=$CONF" "/proc/$p/environ" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  if [ "${MEGASIM_SLURM_KEEP:-0}" = 1 ]; then say "kept $T"; else rm -rf "$T"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

show_logs() {
  local f
  say "--- squeue / jobs"
  squeue 2>&1
  scontrol show job 2>&1 | grep -E 'JobId=|JobState=|Dependency=|Command=|StdOut='
  # A daemon's stderr repeats its log file; it only says more when the log was never opened.
  for f in "$T"/log/*.log "$T"/log/*.out "$T"/work/*.log; do
    [[ -f "$f" && ! ( "$f" == *.out && -s "${f%.out}.log" ) ]] || continue
    say "--- ${f#"$T"/} (last 40 lines)"
    # Known-harmless noise: no libpmix installed, and a fresh state dir has no state to load.
    if [ -s "$f" ]; then
      grep -v -e 'pmix' -e 'MPI: Cannot create context' -e 'state file' -e 'NOTE: Trying backup' "$f" | tail -n 40
    else
      echo "(empty)"
    fi
  done
}
fail() { say "FAIL: $*"; show_logs; exit 1; }
skip_with_logs() { say "SKIP: $*"; show_logs; exit 77; }

port_in_use() {  # any TCP socket, listening or not, on this local port
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v h="$hex" 'NR > 1 && substr($2, length($2) - 4) == h { f = 1 } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
free_port_pair() {
  local p i
  for ((i = 0; i < 100; i++)); do
    p=$((20000 + RANDOM % 30000))
    port_in_use "$p" || port_in_use $((p + 1)) || { echo "$p"; return 0; }
  done
  return 1
}

# The reference first: if megasim itself is broken there is no point starting a cluster.
say "reference: unsharded $CONFIG sweep over [$GRID], engine $ENGINE"
read -ra axes <<< "$GRID"
vary=()
for a in "${axes[@]}"; do vary+=(--vary "$a"); done
"$MEGASIM" sweep "$CONFIG" "${vary[@]}" --engine "$ENGINE" --no-progress --csv "$T/ref.csv" \
  > "$T/log/ref.out" 2>&1 || fail "reference sweep failed: $(cat "$T/log/ref.out")"
say "reference has $(($(wc -l < "$T/ref.csv") - 1)) points"

# munge: a fresh key and a private socket, so the system munged (if any) is left alone.
mungekey --create --keyfile="$T/munge.key" >/dev/null 2>&1 || skip "mungekey cannot create a key"
munged --foreground --force --key-file="$T/munge.key" --socket="$T/munge.sock" \
  --pid-file="$T/munged.pid" --seed-file="$T/munged.seed" --log-file="$T/log/munged.log" \
  > "$T/log/munged.out" 2>&1 &
MUNGED_PID=$!
for ((i = 0; i < 100; i++)); do
  munge -n -S "$T/munge.sock" 2>/dev/null | unmunge -S "$T/munge.sock" >/dev/null 2>&1 && break
  kill -0 "$MUNGED_PID" 2>/dev/null || skip_with_logs "munged exited at start"
  sleep 0.1
done
((i < 100)) || skip_with_logs "munged does not answer on $T/munge.sock"

HOST=$(uname -n)
HOST=${HOST%%.*}  # slurmd names itself by the short host name
PORT=$(free_port_pair) || skip "no free TCP port pair found"
# Nothing in it may need cgroups, accounting or a database: it must run in a plain container.
cat > "$CONF" <<EOF
ClusterName=megasim-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge.sock
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
PlugStackConfig=$T/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
# Finished jobs stay visible to scontrol for the checks below.
MinJobAge=3600
# A failed shard cancels the merge instead of leaving it pending forever.
DependencyParameters=kill_invalid_depend
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=500 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
: > "$T/plugstack.conf"
export SLURM_CONF=$CONF

say "starting slurmctld and slurmd for node $HOST on ports $PORT-$((PORT + 1)) in $T"
slurmctld -D -f "$CONF" > "$T/log/slurmctld.out" 2>&1 &
CTLD_PID=$!
slurmd -D -f "$CONF" -N "$HOST" > "$T/log/slurmd.out" 2>&1 &
SLURMD_PID=$!
state=""
for ((i = 0; i < 120; i++)); do  # 60 s
  kill -0 "$CTLD_PID" 2>/dev/null || skip_with_logs "slurmctld exited at start"
  kill -0 "$SLURMD_PID" 2>/dev/null || skip_with_logs "slurmd exited at start"
  state=$(sinfo -h -n "$HOST" -o %t 2>/dev/null)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || fail "node $HOST not idle after 60 s (state: ${state:-no answer})"
say "node $HOST idle after $((SECONDS - START)) s"

# The documented script itself, overridden through its environment. Not via --export: the
# grid contains commas, which --export would split.
cd "$T/work" || fail "cannot enter $T/work"
ARRAY_ID=$(MEGASIM="$MEGASIM" SWEEP_SHARDS=$SHARDS SWEEP_CONFIG=$CONFIG SWEEP_ENGINE=$ENGINE \
  SWEEP_VARY="$GRID" SWEEP_OUT=sweep-out \
  sbatch --parsable --array=0-$((SHARDS - 1)) --cpus-per-task=1 --chdir="$T/work" \
  "$REPO/docs/slurm-sweep.sh" 2> "$T/log/sbatch.out") || fail "sbatch failed: $(cat "$T/log/sbatch.out")"
ARRAY_ID=${ARRAY_ID%%;*}
say "submitted array job $ARRAY_ID ($SHARDS shards); task 0 submits the merge"

# The cluster runs nothing else, so an empty queue means the array and the merge are done.
# Task 0 submits the merge before it ends, so the queue never empties in between.
for ((i = 0; i < 360; i++)); do  # 180 s
  kill -0 "$CTLD_PID" 2>/dev/null || fail "slurmctld died"
  queue=$(squeue -h -o %i 2>&1) || queue="squeue: $queue"  # a busy controller may time out
  [ -z "$queue" ] && break
  sleep 0.5
done
[ -z "$queue" ] || fail "jobs not finished after 180 s: $queue"
say "all jobs finished after $((SECONDS - START)) s"

jobs=$(scontrol show job -o 2>&1) || fail "scontrol show job failed: $jobs"
njobs=$(grep -c '^JobId=' <<< "$jobs")
[ "$njobs" -eq $((SHARDS + 1)) ] || fail "expected $SHARDS array tasks and one merge job, found $njobs jobs"
bad=$(grep -v 'JobState=COMPLETED .* ExitCode=0:0 ' <<< "$jobs")
[ -z "$bad" ] || fail "jobs did not complete cleanly:
$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^(JobId|JobName|JobState|Reason|ExitCode)=/) printf "  %s", $i; print "" }' <<< "$bad")"
grep -q 'JobName=megasim-merge ' <<< "$jobs" || fail "no megasim-merge job ran"
for ((s = 0; s < SHARDS; s++)); do
  [ -s "sweep-out/shard-$s.csv" ] || fail "shard $s output sweep-out/shard-$s.csv missing or empty"
done
[ -s sweep.csv ] || fail "merge wrote no sweep.csv"
cmp "$T/ref.csv" sweep.csv || {
  diff "$T/ref.csv" sweep.csv | head -n 20
  fail "merged sweep.csv differs from the unsharded sweep"
}
say "PASS: $SHARDS-shard Slurm sweep merged byte-identical to the unsharded sweep ($(($(wc -l < sweep.csv) - 1)) points, $((SECONDS - START)) s)"
