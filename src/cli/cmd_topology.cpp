// `megasim topology CONFIG [--json] [--dot FILE] [--set PATH=VALUE ...]`: the cluster fabric
// a job would run on: switches per tier, links by kind, bisection bandwidth and
// oversubscription; optionally a GraphViz drawing of small clusters.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "megasim/core/version.hpp"
#include "cluster_job.hpp"
#include "job_arguments.hpp"
#include "commands.hpp"
#include "megasim/core/error.hpp"
#include "megasim/net/topology_builders.hpp"
#include "megasim/net/topology_summary.hpp"

namespace megasim {


namespace {

struct TopologyArgs {
  std::string config;
  std::vector<std::string> sets;
  bool json = false;
  std::string dot;
};

nlohmann::json summary_json(const TopologySummary& s) {
  const FabricLayout& lay = s.layout;
  nlohmann::json links = nlohmann::json::object();
  for (const LinkKindSummary& k : s.links) {
    links[to_string(k.kind)] = {{"count", k.physical_links}, {"capacity_Bps", k.capacity_Bps}};
  }
  return {
      {"schema_version", kSchemaVersion},
      {"topology", to_string(lay.topology)},
      {"num_gpus", lay.num_gpus},
      {"num_nodes", lay.num_nodes},
      {"gpus_per_node", lay.gpus_per_node},
      {"nvlink_domain_size", lay.nvlink_domain_size},
      {"num_nvlink_domains", lay.num_domains},
      {"rails", lay.rails},
      {"switches",
       {{"tor", s.num_tors}, {"agg", s.num_aggs}, {"spine", s.num_spines},
        {"nvswitch", s.num_nvswitches}, {"nic", s.num_nics}}},
      {"layout",
       {{"tor_down_ports", lay.tor_down_ports}, {"tor_up_ports", lay.tor_up_ports},
        {"nic_ports_per_tor", lay.nic_ports_per_tor}, {"servers_per_tor", lay.servers_per_tor},
        {"num_tor_sets", lay.num_tor_sets}, {"num_pods", lay.num_pods},
        {"tors_per_pod", lay.tors_per_pod}, {"aggs_per_pod", lay.aggs_per_pod},
        {"tor_tier2_parallel_links", lay.tor_tier2_parallel_links},
        {"spines_per_group", lay.spines_per_group},
        {"agg_spine_parallel_links", lay.agg_spine_parallel_links}}},
      {"links", links},
      {"bisection_Bps", s.bisection_Bps},
      {"oversubscription", {{"tor", s.tor_oversubscription}, {"agg", s.agg_oversubscription}}},
  };
}

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
      ctx.out << summary_json(summary).dump(2) << "\n";
    } else {
      print_topology_summary(summary, ctx.out);
      if (!args->dot.empty()) ctx.out << "graphviz drawing written to " << args->dot << "\n";
    }
  });
}

}  // namespace megasim
