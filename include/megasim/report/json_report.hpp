#pragma once
// Serialises a StepReport to the A3 JSON object (schema_version 1) and to a human-readable
// text report. Field names carry their units; every field is defined in the README.
#include <nlohmann/json.hpp>
#include <ostream>

#include "megasim/report/step_report.hpp"

namespace megasim {

// The A3 object `megasim simulate --json` prints (megasim::to_json in megasim.hpp is its text).
nlohmann::json step_report_to_json(const StepReport& report);
// The A3 "breakdown_s" object (also used by the planner's and sweep's outputs).
nlohmann::json breakdown_to_json(const StepBreakdown& breakdown);
void print_text_report(const StepReport& report, std::ostream& out);

}  // namespace megasim
