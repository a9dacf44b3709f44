// `megasim topology CONFIG [--json] [--dot FILE] [--set PATH=VALUE ...]`: the cluster fabric
// a job would run on: switches per tier, links by kind, bisection bandwidth and
// oversubscription; optionally a GraphViz drawing of small clusters.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cluster_job.hpp"
#include "job_arguments.hpp"
#include "commands.hpp"
#include "megasim/core/error.hpp"
#include "megasim/net/topology_builders.hpp"
#include "megasim/net/topology_summary.hpp"
#include "megasim/report/topology_output.hpp"

namespace megasim {

namespace {

struct TopologyArgs {
  std::string config;
  std::vector<std::string> sets;
  bool json = false;
  std::string dot;
};

}  // namespace

void register_topology_command(CLI::App& app, CliContext& ctx) {
  auto args = std::make_shared<TopologyArgs>();
  auto* cmd = app.add_subcommand(
      "topology", "Describe the cluster fabric: switches per tier, links, bisection bandwidth");
  add_job_arguments(cmd, args->config, args->sets, "override a config field: PATH=VALUE (repeatable)", kJobOrClusterHelp);
  cmd->add_flag("--json", args->json, "print exactly one JSON object");
  cmd->add_option("--dot", args->dot,
                  "write a GraphViz drawing to FILE (clusters of at most " +
                      std::to_string(kMaxDotGpus) + " GPUs)");
  cmd->callback([args, &ctx] {
    const JobSpec job = load_job_or_cluster(ctx, args->config, args->sets);
    // Refuse an oversized drawing before building anything or creating the file.
    if (!args->dot.empty() && job.cluster.num_gpus > kMaxDotGpus) {
      throw InputError("--dot", "drawings are limited to " + std::to_string(kMaxDotGpus) +
                                    " GPUs; this cluster has " +
                                    std::to_string(job.cluster.num_gpus));
    }
    const Fabric fabric = build_fabric(job.cluster);
    const TopologySummary summary = summarize_topology(fabric);
    if (!args->dot.empty()) {
      std::ofstream file(args->dot);
      if (!file) throw InputError("--dot", "cannot open \"" + args->dot + "\" for writing");
      write_dot(fabric, file);
      if (!file) throw InputError("--dot", "failed writing \"" + args->dot + "\"");
    }
    if (args->json) {
      ctx.out << topology_summary_json(summary) << "\n";
    } else {
      print_topology_summary(summary, ctx.out);
      if (!args->dot.empty()) ctx.out << "graphviz drawing written to " << args->dot << "\n";
    }
  });
}

}  // namespace megasim
