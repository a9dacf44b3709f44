#pragma once
// Private: turning a finished DesExecutor run into a StepReport and a Chrome trace.
#include <string>

#include "des_executor.hpp"
#include "megasim/report/step_report.hpp"

namespace megasim {

// Step time, the A3 breakdown of the critical rank's compute stream, busiest links, ECMP.
StepReport summarize_des_run(const DesExecutor& ex, const DesOptions& options);

// Chrome Trace Event Format JSON: one process per pipeline stage with a compute, a DP and a
// PP track (replica 0), plus counter tracks ("C") for the hottest links' utilisation.
std::string des_trace_json(const DesExecutor& ex, std::size_t counter_links);
// Writes des_trace_json to `path`; InputError("--trace", ...) when the file cannot be written.
void write_des_trace(const DesExecutor& ex, std::size_t counter_links, const std::string& path);

}  // namespace megasim
