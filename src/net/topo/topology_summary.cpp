// Topology summary: switch counts, link counts by kind, bisection and oversubscription.
#include "megasim/net/topology_summary.hpp"

#include <algorithm>
#include <array>
#include <iomanip>
#include <limits>

#include "megasim/config/specs.hpp"  // to_string(Topology)
#include "megasim/core/units.hpp"

namespace megasim {
namespace {

double ratio(double down, double up) { return up > 0 ? down / up : 0.0; }

}  // namespace

TopologySummary summarize_topology(const Fabric& fabric) {
  TopologySummary s;
  s.layout = fabric.layout();
  s.num_nvswitches = fabric.num_vertices_of(VertexKind::NvSwitch);
  s.num_nics = fabric.num_vertices_of(VertexKind::Nic);
  s.num_tors = fabric.num_vertices_of(VertexKind::Tor);
  s.num_aggs = fabric.num_vertices_of(VertexKind::Agg);
  s.num_spines = fabric.num_vertices_of(VertexKind::Spine);

  std::array<LinkKindSummary, kNumLinkKinds> by_kind{};
  const auto& cap = fabric.link_capacity_Bps();
  for (LinkId l = 0; l < fabric.num_links(); ++l) {
    if (!fabric.link_is_up(l)) continue;  // count each physical link once, by its up side
    LinkKindSummary& k = by_kind[static_cast<std::size_t>(fabric.link_kind(l))];
    k.kind = fabric.link_kind(l);
    k.physical_links += 1;
    k.capacity_Bps = std::max(k.capacity_Bps, cap[l]);
    k.total_up_Bps += cap[l];
  }
  const bool multi_node = s.layout.num_nodes > 1;
  s.bisection_Bps = std::numeric_limits<double>::infinity();
  for (const LinkKindSummary& k : by_kind) {
    if (k.physical_links == 0) continue;
    s.links.push_back(k);
    const bool counts = multi_node ? k.kind != LinkKind::NvLink : k.kind == LinkKind::NvLink;
    if (counts) s.bisection_Bps = std::min(s.bisection_Bps, k.total_up_Bps / 2.0);
  }
  if (s.bisection_Bps == std::numeric_limits<double>::infinity()) s.bisection_Bps = 0;  // 1 GPU

  // Design ratios from the switches' ports, so a partly populated ToR still reports the
  // ratio it was built for.
  const FabricLayout& lay = s.layout;
  const NetworkSpec& net = fabric.cluster().network;
  const double tor_up_Bps = static_cast<double>(lay.tor_up_ports) * net.switch_port_bandwidth_Bps;
  if (s.num_aggs + s.num_spines > 0) {
    s.tor_oversubscription =
        ratio(static_cast<double>(lay.nic_ports_per_tor) * net.nic_bandwidth_Bps, tor_up_Bps);
  }
  if (s.num_aggs > 0 && s.num_spines > 0) {
    // A full pod's aggregation switch: ToR-facing links : spine-facing links (same port rate).
    const int tors_in_pod = std::min(lay.num_tors, lay.tors_per_pod);
    s.agg_oversubscription =
        ratio(static_cast<double>(tors_in_pod * lay.tor_tier2_parallel_links),
              static_cast<double>(lay.spines_per_group * lay.agg_spine_parallel_links));
  }
  return s;
}

void print_topology_summary(const TopologySummary& s, std::ostream& out) {
  const FabricLayout& lay = s.layout;
  out << "topology: " << to_string(lay.topology) << " (" << lay.num_gpus << " GPUs, "
      << lay.num_nodes << " nodes x " << lay.gpus_per_node << " GPUs, " << lay.rails
      << " rails)\n";
  if (lay.nvlink_domain_size != lay.gpus_per_node) {
    out << "nvlink: " << lay.num_domains << " domains of " << lay.nvlink_domain_size
        << " GPUs (NVLink switch fabric across " << lay.nvlink_domain_size / lay.gpus_per_node
        << " hosts each)\n";
  }
  out << "switches: tor " << s.num_tors << ", agg " << s.num_aggs << ", spine " << s.num_spines
      << "  (nvswitch " << s.num_nvswitches << ", nic " << s.num_nics << ")\n";
  out << "tor ports: " << lay.tor_down_ports << " down (" << lay.nic_ports_per_tor
      << " NIC ports), " << lay.tor_up_ports << " up; " << lay.servers_per_tor
      << " servers per ToR";
  if (lay.topology != Topology::FatTree) out << " set, " << lay.num_tor_sets << " ToR sets";
  out << "\n";
  if (lay.topology == Topology::RailOptimizedClos && s.num_aggs > 0) {
    out << "pods: " << lay.num_pods << " (up to " << lay.tors_per_pod << " ToRs each), "
        << lay.aggs_per_pod
        << " aggs per pod (" << lay.tor_tier2_parallel_links << " link(s) per ToR-agg pair)";
    if (s.num_spines > 0) {
      out << ", " << lay.spines_per_group << " spines per plane (" << lay.agg_spine_parallel_links
          << " link(s) per agg-spine pair)";
    }
    out << "\n";
  } else if (s.num_spines > 0) {
    out << "spines: " << lay.spines_per_group
        << (lay.topology == Topology::RailOnly ? " per rail" : "") << " ("
        << lay.tor_tier2_parallel_links << " link(s) per ToR-spine pair)\n";
  }
  out << "links (physical, capacity per direction):\n";
  for (const LinkKindSummary& k : s.links) {
    out << "  " << std::left << std::setw(10) << to_string(k.kind) << std::right << std::setw(8)
        << k.physical_links << " x " << format_rate_GBps(k.capacity_Bps) << "\n";
  }
  out << "bisection bandwidth: " << format_rate_GBps(s.bisection_Bps) << " per direction\n";
  out << std::fixed << std::setprecision(2);
  out << "oversubscription: tor " << s.tor_oversubscription << ":1";
  if (s.agg_oversubscription > 0) out << ", agg " << s.agg_oversubscription << ":1";
  out << "\n";
  out.unsetf(std::ios_base::floatfield);
  out << std::setprecision(6);
}

}  // namespace megasim
