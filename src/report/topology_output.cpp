#include "megasim/report/topology_output.hpp"

#include <nlohmann/json.hpp>

#include "megasim/core/version.hpp"

namespace megasim {

namespace {

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

std::string topology_summary_json(const TopologySummary& s) { return summary_json(s).dump(2); }

}  // namespace megasim
