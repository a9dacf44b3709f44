#pragma once
// `megasim validate`: runs the bundled published-result suites (configs/validation/*.json)
// through the simulator and compares predicted with published values.
//
// A suite file names a base job, and each row lists `--set`-style overrides plus the
// published metrics. The same model, catalogs and hardware profiles serve every row: a
// suite never carries a correction factor, only the job description the paper gives.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "megasim/config/specs.hpp"
#include "megasim/report/step_report.hpp"

namespace megasim {

struct ValidationCase {
  std::string suite;
  std::string name;
  std::string metric;        // "step_time_s", "mfu", "hfu", "tokens_per_s", "startup_s", ...
  double published = 0;
  double predicted = 0;
  double error_pct = 0;      // 100 * (predicted - published) / published
  bool upper_bound = false;  // published value is a maximum ("< 5 s"): passes if predicted <= it
};

struct ValidationSummary {
  std::vector<std::string> lines;     // human-readable acceptance checks
  nlohmann::json json;                // same, machine-readable
  bool all_pass = true;
};

struct ValidationResult {
  std::vector<ValidationCase> cases;
  ValidationSummary summary;
  // Rows the memory model says would not fit in GPU memory ("<suite>: <row>: A of B GiB"):
  // still compared, never silently.
  std::vector<std::string> memory_warnings;
};

// Simulates a job built from a base config plus overrides.
using JobRunner = std::function<StepReport(const std::string& base, const std::vector<std::string>& sets)>;
// Communicator start-up seconds for (gpus, store, ordered); see goodput/comm_init.hpp.
using StartupModel = std::function<double(std::int64_t gpus, const std::string& store, bool ordered)>;

// Runs fn(k) for k in [0, n), possibly on several threads (e.g. megasim's parallel_for).
using RowScheduler = std::function<void(std::size_t n, const std::function<void(std::size_t)>& fn)>;

// Suites: the ids of the files `validation_dir`/suites.json lists ("table2", "nvidia_dgxc_h100",
// ...), each file read strictly (a key validate does not know is an InputError naming it) with
// its own acceptance bars; empty = all.
// Simulated rows go through `schedule` (empty: one after the other); `run` must then be safe to
// call concurrently. `progress` is called once per finished row, never concurrently. The
// result is the same for any schedule.
ValidationResult run_validation(const std::string& validation_dir, const std::string& suite,
                                const JobRunner& run, const StartupModel& startup,
                                const std::function<void(const std::string&)>& progress,
                                const RowScheduler& schedule = {});

// `overrides`: the --set what-ifs applied to every simulated row, listed as summary.overrides
// (absent when empty).
nlohmann::json to_json(const ValidationResult& result, const std::vector<std::string>& overrides = {});
void print_validation(const ValidationResult& result, std::ostream& out);

}  // namespace megasim
