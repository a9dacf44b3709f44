#pragma once
// Registration functions, one per subcommand file (src/cli/cmd_<name>.cpp).
#include <CLI/CLI.hpp>

#include <functional>

#include "cli_context.hpp"
#include "megasim/report/step_report.hpp"

namespace megasim {

// The help footer of megasim and its job-taking subcommands: a minimal config to start from.
extern const char* const kMinimalConfigHelp;

void register_simulate_command(CLI::App& app, CliContext& ctx);
void register_explain_command(CLI::App& app, CliContext& ctx);
void register_list_command(CLI::App& app, CliContext& ctx);
void register_validate_command(CLI::App& app, CliContext& ctx);
void register_regress_command(CLI::App& app, CliContext& ctx);
void register_plan_command(CLI::App& app, CliContext& ctx);
void register_sweep_command(CLI::App& app, CliContext& ctx);
void register_ablate_command(CLI::App& app, CliContext& ctx);
void register_merge_command(CLI::App& app, CliContext& ctx);
void register_topology_command(CLI::App& app, CliContext& ctx);
void register_report_command(CLI::App& app, CliContext& ctx,
                             std::function<StepReport(const JobSpec&)> simulate);

}  // namespace megasim
