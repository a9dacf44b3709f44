#pragma once
// The closed-form step estimator ("--engine analytic"): composes StepCosts with the pipeline
// schedule formulas (Narayanan et al. SC'21) and the overlap rules of MegaScale §3.2. It is
// the planner's fast ranking model and a cross-check of the event engine.
#include "megasim/config/specs.hpp"
#include "megasim/exec/step_costs.hpp"
#include "megasim/report/step_report.hpp"

namespace megasim {

// Fills step_time_s and breakdown (the dispatcher fills FLOPs, memory and rates).
StepReport estimate_step_analytic(const JobSpec& job, const StepCosts& costs);

}  // namespace megasim
