#pragma once
// Capacity-planning report: sweeps the GPU count of a job (TP/PP/VPP/CP kept, DP adjusted),
// simulates one step per point through a caller-supplied callback, adds start-up and goodput
// under failures, and writes report.html (self-contained, inline SVG), report.md and one CSV
// per chart into a directory.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/goodput/comm_init.hpp"
#include "megasim/goodput/goodput.hpp"
#include "megasim/goodput/reliability.hpp"
#include "megasim/report/step_report.hpp"

namespace megasim {

using SimulateFn = std::function<StepReport(const JobSpec&)>;

struct CapacityOptions {
  std::int64_t gpus_min = 0;      // 0 = from the job (a quarter of num_gpus)
  std::int64_t gpus_max = 0;      // 0 = from the job (4 x num_gpus)
  std::optional<double> train_tokens;  // default: training.train_tokens, else 300e9
  double gpu_hour_price = 2.0;    // currency units per GPU-hour
  std::uint64_t seed = 1;
  int mc_trials = 500;
  int max_points = 10;
};

struct CapacityPoint {
  std::int64_t num_gpus = 0;
  bool ok = false;
  std::string skip_reason;        // why the point was skipped (validation error)
  StepReport step;
  CommInitResult comm_init;
  double startup_s = 0;
  bool goodput_ok = false;
  std::string goodput_note;
  GoodputResult goodput;
  double ideal_days = 0;          // tokens / tokens_per_s, no failures
  double expected_days = 0;       // with failures (analytic expectation)
  double ideal_cost = 0;          // GPUs x hours x price
  double expected_cost = 0;
};

struct CapacityReport {
  std::string job_name;
  JobSpec base;
  double train_tokens = 0;
  double gpu_hour_price = 0;
  std::uint64_t seed = 1;
  int mc_trials = 0;
  std::vector<CapacityPoint> points;  // ascending GPU count, skipped ones included
  bool has_focus = false;             // some point has a goodput result
  std::size_t focus = 0;              // index of the point whose goodput distribution is shown
  std::vector<std::string> assumptions;
};

// The GPU counts swept: multiples of TP*PP*CP in [lo, hi]; data-parallel sizes that divide
// global_batch / micro_batch are preferred; at most max_points, spread geometrically.
std::vector<std::int64_t> capacity_gpu_counts(const JobSpec& job, std::int64_t lo, std::int64_t hi,
                                              int max_points);

// Runs the sweep. Points whose simulation throws InputError are kept as skipped, with reason.
CapacityReport build_capacity_report(const JobSpec& job, const SimulateFn& simulate,
                                     const ReliabilityCatalog& reliability,
                                     const CapacityOptions& options);

// Writes report.html, report.md and the CSVs into dir (created if missing). Returns the paths
// written, in a fixed order.
std::vector<std::filesystem::path> write_capacity_report(const CapacityReport& report,
                                                         const std::filesystem::path& dir);

}  // namespace megasim
