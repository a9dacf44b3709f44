#pragma once
// One entry point for "what does one training step of this job do": picks the engine
// (discrete-event or analytic), runs it, and fills every StepReport field.
#include <string>

#include "megasim/config/specs.hpp"
#include "megasim/report/step_report.hpp"

namespace megasim {

class Catalog;

enum class EngineKind { Des, Analytic };

struct SimulateOptions {
  EngineKind engine = EngineKind::Des;
  bool full = false;            // DES: simulate every rank instead of folding symmetric ones
  std::string trace_path;       // DES: write a Chrome Trace Event timeline here when non-empty
  bool progress = false;        // progress lines on stderr for long runs
};

EngineKind parse_engine_kind(const std::string& name);  // "des" | "analytic"; InputError else

StepReport simulate_step(const JobSpec& job, const Catalog& catalog, const SimulateOptions& opts);

}  // namespace megasim
