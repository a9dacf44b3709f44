// `megasim collective CONFIG --op OP --gpus N [--sizes A:B] [--algo ring|tree|hierarchical|auto]
//                     [--engine des|analytic] [--json] [--set PATH=VALUE ...] [--nccl NAME]
//                     [--scatter-gather T] [--ecmp-report] [--ecmp-seeds N]`
// An nccl-tests-style table of one collective over the first N GPUs of the config's cluster.
#include <cstdio>
#include <optional>
#include <tuple>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster_job.hpp"
#include "job_arguments.hpp"
#include "cmd_collective.hpp"
#include "megasim/coll/sweep.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/core/units.hpp"

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

std::string fixed(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

nlohmann::json ecmp_json(const EcmpReport& r) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const auto& t : r.uplinks.tiers)
    tiers.push_back({{"kind", to_string(t.kind)}, {"links", t.num_links}, {"mean_flows", t.mean_load},
                     {"max_flows", t.max_load}, {"p99_flows", t.p99_load}, {"idle_fraction", t.idle_fraction},
                     {"expected_max_flows", t.expected_max_load}, {"spray_max_flows", t.spray_max_load}});
  return {{"size_bytes", r.size_bytes}, {"ideal_time_s", r.ideal_time_s}, {"inflation", r.inflation},
          {"p50_inflation", r.p50_inflation}, {"p99_inflation", r.p99_inflation},
          {"network_flows", r.network_flows}, {"uplink_tiers", tiers}};
}

void print_ecmp_text(const EcmpReport& r, std::ostream& out) {
  out << "# ECMP report at " << format_bytes(r.size_bytes) << ": ideal-spray time "
      << format_time(r.ideal_time_s) << ", inflation over " << r.inflation.size() << " seeds p50 "
      << fixed(r.p50_inflation, 3) << " p99 " << fixed(r.p99_inflation, 3) << "\n";
  out << "# " << r.network_flows << " inter-node flows; per-uplink flow counts (cluster seed):\n";
  for (const auto& t : r.uplinks.tiers)
    out << "#   " << to_string(t.kind) << ": " << t.num_links << " links, mean " << fixed(t.mean_load, 2)
        << ", max " << fixed(t.max_load, 0) << " (balls-into-bins " << fixed(t.expected_max_load, 2)
        << ", spray " << fixed(t.spray_max_load, 2) << "), idle " << fixed(100 * t.idle_fraction, 1) << "%\n";
}

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
    const NcclModel model = nccl_model_from_json(catalog.entry("nccl", args->nccl, "--nccl"), "nccl");
    const auto rows = run_collective_sweep(job.cluster, model, opt);
    std::optional<EcmpReport> ecmp;
    if (args->ecmp_report) ecmp = collective_ecmp_report(job.cluster, model, opt, opt.max_bytes, args->ecmp_seeds);

    if (args->json) {
      nlohmann::json j{{"op", to_string(opt.op)}, {"gpus", opt.gpus}, {"algo", to_string(opt.algo)},
                       {"engine", to_string(opt.engine)}, {"rows", nlohmann::json::array()}};
      for (const auto& r : rows)
        j["rows"].push_back({{"size_bytes", r.size_bytes}, {"time_s", r.time_s}, {"algbw_GBps", r.algbw_GBps},
                             {"busbw_GBps", r.busbw_GBps}, {"chosen_algo", to_string(r.algo)},
                             {"protocol", to_string(r.proto)}});
      if (ecmp) j["ecmp_report"] = ecmp_json(*ecmp);
      ctx.out << j.dump(2) << "\n";
      return;
    }
    ctx.out << "# megasim collective: " << to_string(opt.op) << " over " << opt.gpus << " GPUs of "
            << job.cluster.name << ", algo " << to_string(opt.algo) << ", engine " << to_string(opt.engine)
            << ", NCCL model " << model.name << "\n";
    ctx.out << "#" << pad("size(B)", 14) << pad("time(us)", 14) << pad("algbw(GB/s)", 13)
            << pad("busbw(GB/s)", 13) << pad("algo", 8) << pad("proto", 8) << "\n";
    for (const auto& r : rows)
      ctx.out << " " << pad(fixed(r.size_bytes, 0), 14) << pad(fixed(r.time_s * 1e6, 2), 14)
              << pad(fixed(r.algbw_GBps, 2), 13) << pad(fixed(r.busbw_GBps, 2), 13) << pad(to_string(r.algo), 8)
              << pad(to_string(r.proto), 8) << "\n";
    if (ecmp) print_ecmp_text(*ecmp, ctx.out);
  });
}

}  // namespace megasim
