// `megasim plan CONFIG [--set ...] [--gpus N] [--top K] [--objective step_time|tokens_per_gpu|mfu]
//                      [--jobs N] [--json] [--batch B1,B2,...] [--rerank des|analytic]
//                      [--max-cp N] [--no-progress]`
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "job_arguments.hpp"
#include "commands.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/sweep/plan_search.hpp"

namespace megasim {

namespace {

struct PlanArgs {
  std::string config;
  std::vector<std::string> sets;
  std::int64_t gpus = 0;
  int top = 10;
  std::string objective = "step_time";
  int jobs = 0;
  bool json = false;
  std::vector<std::int64_t> batches;
  std::string rerank = "des";
  int max_cp = 8;
  bool no_progress = false;
};

}  // namespace

void register_plan_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand("plan", "Search all parallel plans (TP, PP, VPP, CP, micro-batch, recompute, "
                                         "ZeRO), rank them analytically, re-simulate the best with the event engine");
  add_job_arguments(cmd, args->config, args->sets);
  cmd->add_option("--gpus", args->gpus, "cluster size to plan for (default: the config's cluster.num_gpus)");
  cmd->add_option("--top", args->top, "plans re-simulated and shown (default 10)");
  cmd->add_option("--objective", args->objective, "step_time (default) | tokens_per_gpu | mfu");
  add_jobs_option(cmd, args->jobs);
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_option("--batch", args->batches, "global batch sizes to consider (default: the config's)")
      ->delimiter(',');
  cmd->add_option("--rerank", args->rerank, "engine for the top K: des (default) | analytic");
  cmd->add_option("--max-cp", args->max_cp, "largest context-parallel size tried (powers of two, default 8)");
  cmd->add_flag("--no-progress", args->no_progress, "no progress line on stderr");
  cmd->callback([args, &ctx] {
    PlanSearchOptions opts;
    opts.objective = parse_plan_objective(args->objective);
    opts.rerank_engine = parse_engine_kind(args->rerank);
    if (args->top < 0) throw InputError("--top", "must be >= 0");
    check_jobs_option(args->jobs);
    if (args->max_cp < 1) throw InputError("--max-cp", "must be >= 1");
    for (const auto b : args->batches) {
      if (b < 1) throw InputError("--batch", "global batch sizes must be >= 1");
    }
    opts.top_k = args->top;
    opts.jobs = args->jobs;
    opts.space.global_batch_sizes = args->batches;
    opts.space.max_context_parallel = args->max_cp;

    // The written plan is the planner's starting point, not a precondition: it is replaced.
    JobSpec base = ctx.load_job_replacing_plan(args->config, args->sets);
    opts.space.sequence_parallel = base.parallel.sequence_parallel;
    if (args->gpus != 0) {
      const int gpn = nvlink_domain_gpus(base.cluster);
      if (args->gpus < 1 || (args->gpus > gpn && args->gpus % gpn != 0)) {
        throw InputError("--gpus", std::to_string(args->gpus) + " GPUs is not a positive whole number of " +
                                       std::to_string(gpn) + "-GPU NVLink domains");
      }
      base.cluster.num_gpus = args->gpus;
    }
    if (!args->no_progress) {
      opts.progress = progress_line(ctx, "plan: ");
    }
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    const PlanSearchResult result = search_plans(base, catalog, opts);
    if (!args->no_progress) ctx.err << "\n";
    if (args->json) {
      ctx.out << plan_search_to_json(result).dump(2) << "\n";
    } else {
      print_plan_table(result, ctx.out);
    }
  });
}

}  // namespace megasim
