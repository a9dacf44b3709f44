#pragma once
// `megasim regress`: the CI gate for predicted MFU. A baseline file lists jobs (a config
// plus --set overrides) with the MFU predicted when the baseline was recorded:
//
//   {"schema_version": 1, "tolerance_points": 0.5,
//    "entries": [{"name": "175b-12288", "config": "megascale-175b-12288", "set": [],
//                 "engine": "analytic", "mfu": 0.5521, "step_time_s": 6.31}]}
//
// Each job is simulated again; a prediction that moved by more than the tolerance (in MFU
// percentage points) is drift. `--update` rewrites the stored predictions.
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "megasim/report/step_report.hpp"

namespace megasim {

struct RegressRow {
  std::string name;
  double baseline_mfu = 0;
  double predicted_mfu = 0;
  double baseline_step_time_s = 0;
  double predicted_step_time_s = 0;
  double delta_points = 0;  // 100 * (predicted - baseline)
  bool drift = false;
};

struct RegressResult {
  std::vector<RegressRow> rows;
  double tolerance_points = 0;
  bool any_drift = false;
};

// Runs one entry: config (path relative to the baseline file, or bundled job name), overrides,
// engine name.
using RegressRunner = std::function<StepReport(const std::string& config,
                                               const std::vector<std::string>& sets,
                                               const std::string& engine)>;

// Validates the baseline document (InputError naming the field on a bad one).
RegressResult run_regress(const nlohmann::json& baseline, const RegressRunner& run,
                          double tolerance_points_override /* < 0: use the file's */);

// The baseline with predictions replaced by this run's.
nlohmann::json updated_baseline(const nlohmann::json& baseline, const RegressResult& result);

void print_regress(const RegressResult& result, std::ostream& out);
nlohmann::json to_json(const RegressResult& result);

}  // namespace megasim
