#pragma once
// Goodput under failures: how long a training job really takes once interruptions, their
// detection, diagnosis and restart, checkpoint stalls, lost work and stragglers are counted.
//
// Expectations are analytic (pure, closed form); the distribution of the wall-clock time comes
// from a seeded Monte Carlo over the same mechanisms (deterministic for a seed).
#include <cstdint>
#include <string>
#include <vector>

#include "megasim/goodput/reliability.hpp"

namespace megasim {

struct GoodputInputs {
  std::int64_t num_gpus = 0;
  int gpus_per_node = 8;
  std::int64_t num_links = 0;        // 0 = one NIC link per GPU (rail-optimised cluster)
  double useful_time_s = 0;          // failure-free, straggler-free training time (tokens / tokens/s)
  double model_parameters = 0;       // sets the checkpoint size
  std::int64_t data_parallel_size = 1;  // one checkpoint reader per DP group, then broadcast
  double startup_s = 0;              // communicator initialisation (model_comm_init)
  int mc_trials = 1000;              // 0 = analytic only
  std::uint64_t seed = 1;
};

struct CauseStats {
  std::string name;
  std::string category;
  double expected_interruptions = 0;
  double expected_time_lost_s = 0;   // downtime + lost work, analytic
  double downtime_s = 0;             // per interruption: detect + diagnose + replace + restart
  double mc_mean_interruptions = 0;  // Monte Carlo mean, for comparison
};

struct GoodputResult {
  // Inputs as derived
  double unplanned_rate_per_s = 0;     // job-wide rate of unexpected interruptions
  double planned_rate_per_s = 0;
  double mtbf_s = 0;                   // 1 / unplanned rate
  double checkpoint_bytes = 0;
  double checkpoint_stall_s = 0;       // stage 1: GPU -> host, training blocked
  double checkpoint_persist_s = 0;     // stage 2: host -> storage, in the background
  double checkpoint_interval_s = 0;    // useful work between checkpoints (user or Young/Daly)
  double checkpoint_load_s = 0;        // restart: read by one reader per shard, then broadcast
  double restart_s = 0;                // startup + checkpoint load + warm-up
  double straggler_multiplier = 1;     // expected step-time multiplier from slow hosts
  double expected_lost_work_s = 0;     // per unplanned interruption
  // Expectations (analytic)
  double expected_elapsed_s = 0;
  double expected_interruptions = 0;
  double ettr = 0;                     // useful iteration time / elapsed time
  double checkpoint_overhead_s = 0;    // total stage-1 stalls
  double straggler_overhead_s = 0;
  std::vector<CauseStats> by_cause;    // catalog order (sorted by name)
  // Distribution (Monte Carlo)
  double mc_mean_elapsed_s = 0;
  double p10_elapsed_s = 0, p50_elapsed_s = 0, p90_elapsed_s = 0;
  double mc_mean_interruptions = 0;
  std::vector<double> mc_elapsed_s;    // one per trial, sorted ascending
};

// Young/Daly first-order optimum checkpoint interval sqrt(2 * stall * MTBF).
double young_daly_interval_s(double stall_s, double mtbf_s);

// Expected step-time multiplier when a synchronous job spans `nodes` hosts of which each is
// slow with probability `fraction`: the slowest host sets the pace, so
// 1 + slowdown * P(at least one slow host) = 1 + slowdown * (1 - (1 - fraction)^nodes).
double straggler_multiplier(const StragglerParams& s, std::int64_t nodes);

// Throws InputError when the inputs are inconsistent, or when interruptions arrive faster than
// work can be saved (the job would never finish).
GoodputResult model_goodput(const GoodputInputs& in, const ReliabilityCatalog& cat);

}  // namespace megasim
