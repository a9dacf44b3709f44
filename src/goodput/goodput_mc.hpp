#pragma once
// Private: the Monte Carlo half of the goodput model (one trial = one whole training run).
#include <cstdint>
#include <string>
#include <vector>

namespace megasim {

struct CauseModel {
  std::string name;
  std::string category;
  double rate_per_s = 0;        // arrivals per second of running time
  bool planned = false;         // announced: checkpoint first, nothing lost
  double fixed_downtime_s = 0;  // detect + diagnose + replace + restart (or planned restart)
  double manual_fraction = 0;
  double manual_s = 0;          // added when a human is needed
};

struct McSetup {
  double useful_s = 0;    // work to do (seconds of iterations)
  double tau_s = 0;       // useful work between checkpoints
  double stall_s = 0;     // stage-1 stall per checkpoint
  double persist_s = 0;   // stage-2 background write; a checkpoint is usable only after it
  std::vector<CauseModel> causes;
};

struct McSummary {
  std::vector<double> elapsed_s;        // sorted ascending
  double mean_elapsed_s = 0;
  double mean_interruptions = 0;
  std::vector<double> mean_by_cause;    // same order as McSetup::causes
};

McSummary run_goodput_monte_carlo(const McSetup& s, int trials, std::uint64_t seed);

// Linear interpolation between order statistics of an ascending vector; q in [0, 1].
double percentile(const std::vector<double>& sorted, double q);

}  // namespace megasim
