// `megasim explain CONFIG [--set ...]`: what a planner checks by hand before simulating —
// parameters, FLOPs per token, parallel degrees, layers per stage and chunk, memory by
// component, and where each rank runs (rank -> GPU -> node -> ToR set). With --kernels, every
// kernel and collective of one layer for one micro-batch, timed alone.
#include <memory>
#include <string>
#include <vector>

#include "job_arguments.hpp"
#include "commands.hpp"
#include "megasim/core/error.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/exec/step_costs.hpp"
#include "megasim/report/job_explanation.hpp"
#include "megasim/report/kernel_table.hpp"

namespace megasim {

namespace {

struct ExplainArgs {
  std::string config;
  std::vector<std::string> sets;
  std::int64_t max_rows = 32;
  bool kernels = false;
};

}  // namespace

void register_explain_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<ExplainArgs>();
  auto* cmd = app.add_subcommand("explain", "Show parameters, FLOPs, parallel layout, memory and "
                                            "rank placement for a job");
  add_job_arguments(cmd, args->config, args->sets);
  cmd->add_option("--max-rows", args->max_rows, "placement rows to print (default 32)");
  cmd->add_flag("--kernels", args->kernels,
                "also list every kernel and TP/CP collective of one layer, one micro-batch, with its time");
  cmd->callback([args, &ctx] {
    if (args->max_rows < 1) throw InputError("--max-rows", "must be >= 1");
    const JobSpec job = ctx.load_job(args->config, args->sets);
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    const auto data = load_step_cost_data(job, catalog);
    // Timed before anything is printed, so a profile that cannot time a kernel fails cleanly.
    // One table per kind of layer (a dense and an MoE layer side by side for DeepSeek-V3).
    std::vector<std::pair<LayerKind, std::vector<LayerKernelTime>>> kernels;
    if (args->kernels) {
      for (const LayerKind& k : layer_kinds(job.model)) kernels.emplace_back(k, layer_kernel_times(job, *data, k));
    }
    write_job_explanation(job, buffer_sizes(*data), args->max_rows, ctx.out);
    for (const auto& [kind, rows] : kernels) {
      if (kernels.size() > 1) ctx.out << "layer kind: " << describe(kind) << "\n";
      write_kernel_table(rows, ctx.out);
    }
  });
}

}  // namespace megasim
