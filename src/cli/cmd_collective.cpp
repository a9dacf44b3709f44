// `megasim collective CONFIG --op OP --gpus N [--sizes A:B] [--algo ring|tree|hierarchical|auto]
//                     [--engine des|analytic] [--json] [--set PATH=VALUE ...] [--nccl NAME]
//                     [--scatter-gather T] [--ecmp-report] [--ecmp-seeds N]`
// An nccl-tests-style table of one collective over the first N GPUs of the config's cluster.
#include <optional>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include "cluster_job.hpp"
#include "job_arguments.hpp"
#include "cmd_collective.hpp"
#include "megasim/coll/sweep.hpp"
#include "megasim/catalogs/nccl_model_reader.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/report/collective_output.hpp"

namespace megasim {
namespace {

struct CollectiveArgs {
  std::string config;
  std::vector<std::string> sets;
  std::string op;
  int gpus = 0;
  std::string sizes = "1KiB:8GiB";
  std::string algo = "auto";
  std::string engine = "des";
  std::string nccl = "nccl-2.21";
  int scatter_gather = 1;
  bool json = false;
  bool ecmp_report = false;
  int ecmp_seeds = 10;
};

}  // namespace

void register_collective_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<CollectiveArgs>();
  auto* cmd = app.add_subcommand("collective", "nccl-tests-style table of one collective over the "
                                               "first N GPUs of a cluster");
  add_job_arguments(cmd, args->config, args->sets, "override a config field: PATH=VALUE (repeatable)", kJobOrClusterHelp);
  cmd->add_option("--op", args->op, "all_reduce | all_gather | reduce_scatter | all_to_all | send_recv")
      ->required();
  cmd->add_option("--gpus", args->gpus, "use the first N GPUs of the cluster")->required();
  cmd->add_option("--sizes", args->sizes, "size range A:B, doubling (default 1KiB:8GiB)");
  cmd->add_option("--algo", args->algo, "auto (NCCL's choice, default) | ring | tree | hierarchical");
  cmd->add_option("--engine", args->engine, "des (flow simulation, default) | analytic");
  cmd->add_option("--nccl", args->nccl, "NCCL model catalog entry (default nccl-2.21)");
  cmd->add_option("--scatter-gather", args->scatter_gather, "send_recv: split over T rails (default 1)");
  cmd->add_flag("--json", args->json, "print exactly one JSON object");
  cmd->add_flag("--ecmp-report", args->ecmp_report, "ECMP collision report at the largest size");
  cmd->add_option("--ecmp-seeds", args->ecmp_seeds, "ECMP seeds for the report (default 10)");
  cmd->callback([args, &ctx] {
    CollectiveSweepOptions opt;
    opt.op = parse_coll_op(args->op, "--op");
    opt.algo = parse_coll_algo(args->algo, "--algo");
    opt.engine = parse_coll_engine(args->engine, "--engine");
    std::tie(opt.min_bytes, opt.max_bytes) = parse_size_range(args->sizes, "--sizes");
    opt.gpus = args->gpus;
    opt.scatter_gather = args->scatter_gather;
    const JobSpec job = load_job_or_cluster(ctx, args->config, args->sets);
    const Catalog catalog = Catalog::open(ctx.catalog_dir);
    const NcclModel model = load_nccl_model(catalog, args->nccl, "--nccl");
    const auto rows = run_collective_sweep(job.cluster, model, opt);
    std::optional<EcmpReport> ecmp;
    if (args->ecmp_report) ecmp = collective_ecmp_report(job.cluster, model, opt, opt.max_bytes, args->ecmp_seeds);

    const CollectiveOutput output{opt, job.cluster.name, model.name, rows, ecmp ? &*ecmp : nullptr};
    if (args->json) {
      ctx.out << collective_output_json(output) << "\n";
    } else {
      write_collective_table(output, ctx.out);
    }
  });
}

}  // namespace megasim
