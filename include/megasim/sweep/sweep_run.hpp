#pragma once
// `megasim sweep`: simulate every point of a --vary grid (or one shard of it) and tabulate
// the A3 report fields, one row per point. A point whose config is invalid gets a row with
// the InputError text in its "error" column instead of stopping the sweep.
//
// Usage:
//   SweepOptions o;  o.vary = {parse_vary("cluster.num_gpus=256:1024:x2")};
//   SweepTable t = run_sweep([&](const std::vector<std::string>& sets) { return load_job(file, sets, cat); },
//                            cat, o);
//   write_csv(t, std::cout);
#include <functional>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/report/step_report.hpp"
#include "megasim/sweep/sweep_grid.hpp"
#include "megasim/sweep/sweep_table.hpp"

namespace megasim {

class Catalog;

// Loads the base config with extra "PATH=VALUE" overrides applied after the user's --set's.
using SweepJobLoader = std::function<JobSpec(const std::vector<std::string>& overrides)>;

struct SweepOptions {
  std::vector<VarySpec> vary;
  EngineKind engine = EngineKind::Analytic;
  int jobs = 0;                 // worker threads; 0 = hardware_concurrency
  ShardSpec shard;              // default: the whole grid
  std::function<void(const std::string&)> progress;  // short progress texts; may be empty
};

// The A3 columns, flattened with dotted names ("breakdown_s.compute", "memory.fits", ...).
std::vector<std::string> report_columns();
// The cells of one report, in report_columns() order (numbers formatted %.10g).
std::vector<std::string> report_cells(const StepReport& r);

// Throws InputError("--vary") for an invalid grid; never for an invalid point.
SweepTable run_sweep(const SweepJobLoader& load, const Catalog& catalog, const SweepOptions& opts);

}  // namespace megasim
