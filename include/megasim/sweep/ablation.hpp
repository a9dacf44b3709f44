#pragma once
// `megasim ablate`: what each MegaScale technique buys (or costs) this job. Every row flips
// one switch of the job as loaded -- a technique that is on is switched off, one that is off is
// switched on -- and re-simulates, so a planner reads the marginal MFU of each technique at
// the job's own scale, plan and cluster (MegaScale's Table 3 adds them cumulatively instead;
// `megasim validate --suite table3` reproduces that).
//
// Usage:
//   const JobSpec job = load({});
//   Ablation a = run_ablation(job, load, [&](const JobSpec& j) { return simulate_step(j, cat, so); }, opts);
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/report/step_report.hpp"
#include "megasim/sweep/sweep_run.hpp"  // SweepJobLoader

namespace megasim {

// One switch flip: the technique's name, the override that flips it, and its value before and
// after in words ("on" -> "off", "flash-v2" -> "unfused").
struct AblationFlip {
  std::string technique;
  std::vector<std::string> sets;  // PATH=VALUE overrides applied after the user's --set's
  std::string from;
  std::string to;
};

// The flips that apply to `job`, in MegaScale's ablation order: model (parallel block, sliding
// window), 3D-parallel overlap (TP, PP, DP, first all-gather prefetch), operators (fused
// kernels, attention kernel), data pipeline, GC fix, LAMB with a 3x batch, straggler hunting,
// communicator start-up. A flip that cannot matter is left out (TP overlap at TP 1, PP overlap
// at PP 1, DP switches at DP 1) and so is one megasim cannot invent a value for (turning on a
// sliding window, or slow hosts on a screened fleet).
std::vector<AblationFlip> ablation_flips(const JobSpec& job);

struct AblationRow {
  AblationFlip flip;
  std::optional<StepReport> report;  // empty when the flipped config is invalid
  std::string error;                 // the InputError text in that case
};

struct Ablation {
  StepReport base;
  std::vector<AblationRow> rows;
};

struct AblationOptions {
  int jobs = 1;  // worker threads; 0 = hardware concurrency
  std::function<void(const std::string&)> progress;  // short progress texts; may be empty
};

// Simulates the base job and every flip of ablation_flips(base). A flip whose config is invalid
// gets a row with the error instead of stopping the run; an invalid base throws.
Ablation run_ablation(const JobSpec& base, const SweepJobLoader& load,
                      const std::function<StepReport(const JobSpec&)>& simulate, const AblationOptions& opts);

// MFU points a row gains over the base (negative: the flip costs MFU); 0 for an invalid row.
double delta_mfu_points(const Ablation& a, const AblationRow& row);
// Throughput change in percent: the fair measure when a flip changes the model FLOPs per token
// (a sliding window attends fewer tokens, so its MFU can fall while training gets faster).
double delta_tokens_per_s_percent(const Ablation& a, const AblationRow& row);

// The table `megasim ablate` prints, and its --json object (README, "ablate").
void write_ablation_text(const Ablation& a, std::ostream& out);
nlohmann::json ablation_to_json(const Ablation& a);

}  // namespace megasim
