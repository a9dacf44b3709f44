// Switch tiers of the three topologies (see topology_builders.hpp for the designs).
#include "megasim/net/topology_builders.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "megasim/core/error.hpp"
#include "net/topo/builder_common.hpp"

namespace megasim {
namespace {

int ceil_div(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// Servers under one rail ToR set: the configured count, bounded by the ToR's NIC ports
// (each server puts exactly one NIC on each rail ToR of its set).
int rail_servers_per_tor(const NetworkSpec& net, const FabricLayout& lay) {
  if (net.servers_per_tor < 0) {
    throw InputError("cluster.network.servers_per_tor", "must be positive");
  }
  if (net.servers_per_tor > lay.nic_ports_per_tor) {
    throw InputError("cluster.network.servers_per_tor",
                     "exceeds the " + std::to_string(lay.nic_ports_per_tor) +
                         " server-facing ports of a ToR");
  }
  return net.servers_per_tor > 0 ? net.servers_per_tor : lay.nic_ports_per_tor;
}

// A top tier (all ports facing down) serving `lower` switches with `uplinks` each.
// Returns the switch count; the parallel-link count per pair is uplinks / count.
int size_top_tier(int lower, int uplinks, int radix, const char* what) {
  if (lower > radix) {
    // Name the bundled fabrics built for this scale (configs/clusters/), not only the rule.
    throw InputError("cluster.num_gpus",
                     std::string("too large for this topology: ") + what + " (" +
                         std::to_string(lower) + ") exceed the switch radix " + std::to_string(radix) +
                         "; the catalog clusters h100-400g-clos-r128 (three tiers of radix-128 switches, up to "
                         "524,288 GPUs) and h100-400g-multiplane (262,144 GPUs) hold such jobs, or raise "
                         "cluster.network.switch_radix");
  }
  return smallest_divisor_at_least(uplinks, ceil_div(static_cast<long long>(lower) * uplinks,
                                                     radix));
}

VertexId tor_vertex(const FabricImpl& impl, int tor) {
  return impl.by_kind[static_cast<std::size_t>(VertexKind::Tor)][static_cast<std::size_t>(tor)];
}

}  // namespace

int smallest_divisor_at_least(int n, int at_least) {
  for (int d = std::max(1, at_least); d < n; ++d) {
    if (n % d == 0) return d;
  }
  return n;
}

Fabric build_rail_optimized_clos(const ClusterSpec& cluster) {
  std::shared_ptr<FabricImpl> impl = build_servers(cluster, Topology::RailOptimizedClos);
  if (!has_scale_out(cluster)) return Fabric(std::move(impl));
  FabricLayout& lay = impl->layout;
  const NetworkSpec& net = cluster.network;
  const double port_Bps = net.switch_port_bandwidth_Bps;
  const int radix = net.switch_radix;
  lay.servers_per_tor = rail_servers_per_tor(net, lay);
  lay.num_tor_sets = ceil_div(lay.num_nodes, lay.servers_per_tor);
  lay.num_tors = lay.num_tor_sets * lay.rails;
  lay.num_pods = 1;
  lay.tors_per_pod = lay.num_tors;

  // Aggregation and spine switches run 1:1 (MegaScale §3.6: "32 ports are used as downlink
  // and 32 ports are used as uplink" at each layer).
  const int agg_down = radix / 2;
  const int agg_up = radix - agg_down;
  if (lay.num_tors > 1) {
    const int sets_per_pod = agg_down / lay.rails;
    if (sets_per_pod == 0) {
      throw InputError("cluster.network.nics_per_node",
                       "more rails than an aggregation switch has down ports (" +
                           std::to_string(agg_down) + ")");
    }
    lay.tors_per_pod = sets_per_pod * lay.rails;
    lay.num_pods = ceil_div(lay.num_tor_sets, sets_per_pod);
    const int tors_in_pod = std::min(lay.num_tors, lay.tors_per_pod);
    lay.aggs_per_pod = smallest_divisor_at_least(
        lay.tor_up_ports, ceil_div(static_cast<long long>(tors_in_pod) * lay.tor_up_ports,
                                   agg_down));
    lay.tor_tier2_parallel_links = lay.tor_up_ports / lay.aggs_per_pod;
    lay.num_aggs = lay.num_pods * lay.aggs_per_pod;
    if (lay.num_pods > 1) {
      lay.spines_per_group = size_top_tier(lay.num_pods, agg_up, radix, "pods");
      lay.agg_spine_parallel_links = agg_up / lay.spines_per_group;
      lay.num_spines = lay.aggs_per_pod * lay.spines_per_group;  // one group per plane
    }
  }

  add_vertices(*impl, VertexKind::Tor, lay.num_tors);
  const VertexId first_agg = add_vertices(*impl, VertexKind::Agg, lay.num_aggs);
  const VertexId first_spine = add_vertices(*impl, VertexKind::Spine, lay.num_spines);
  for (int node = 0; node < lay.num_nodes; ++node) {
    const int set = node / lay.servers_per_tor;
    for (int rail = 0; rail < lay.rails; ++rail) attach_nic(*impl, node, rail, set * lay.rails + rail);
  }
  for (int tor = 0; tor < lay.num_tors && lay.num_aggs > 0; ++tor) {
    const int pod = tor / lay.tors_per_pod;
    for (int j = 0; j < lay.aggs_per_pod; ++j) {
      const VertexId agg = first_agg + static_cast<VertexId>(pod * lay.aggs_per_pod + j);
      impl->add_parallel_links(tor_vertex(*impl, tor), agg, LinkKind::TorAgg, port_Bps,
                               net.link_latency_s, lay.tor_tier2_parallel_links);
    }
  }
  for (int agg = 0; agg < lay.num_aggs && lay.num_spines > 0; ++agg) {
    const int plane = agg % lay.aggs_per_pod;
    for (int k = 0; k < lay.spines_per_group; ++k) {
      const VertexId spine = first_spine + static_cast<VertexId>(plane * lay.spines_per_group + k);
      impl->add_parallel_links(first_agg + static_cast<VertexId>(agg), spine, LinkKind::AggSpine,
                               port_Bps, net.link_latency_s, lay.agg_spine_parallel_links);
    }
  }
  return Fabric(std::move(impl));
}

Fabric build_fat_tree(const ClusterSpec& cluster) {
  std::shared_ptr<FabricImpl> impl = build_servers(cluster, Topology::FatTree);
  if (!has_scale_out(cluster)) return Fabric(std::move(impl));
  FabricLayout& lay = impl->layout;
  const NetworkSpec& net = cluster.network;
  // A leaf holds as many whole servers as its NIC ports allow (all NICs of a server on one
  // leaf); a smaller positive servers_per_tor lowers that.
  lay.servers_per_tor = lay.nic_ports_per_tor / lay.rails;
  if (net.servers_per_tor > 0) lay.servers_per_tor = std::min(lay.servers_per_tor, net.servers_per_tor);
  if (lay.servers_per_tor < 1) {
    throw InputError("cluster.network.nics_per_node",
                     "a server's NICs do not fit on one leaf's " +
                         std::to_string(lay.nic_ports_per_tor) + " ports");
  }
  lay.num_tor_sets = ceil_div(lay.num_nodes, lay.servers_per_tor);
  lay.num_tors = lay.num_tor_sets;
  lay.num_pods = 1;
  lay.tors_per_pod = lay.num_tors;
  if (lay.num_tors > 1) {
    lay.spines_per_group = size_top_tier(lay.num_tors, lay.tor_up_ports, net.switch_radix,
                                         "leaves of a two-tier fat-tree");
    lay.tor_tier2_parallel_links = lay.tor_up_ports / lay.spines_per_group;
    lay.num_spines = lay.spines_per_group;
  }
  add_vertices(*impl, VertexKind::Tor, lay.num_tors);
  const VertexId first_spine = add_vertices(*impl, VertexKind::Spine, lay.num_spines);
  for (int node = 0; node < lay.num_nodes; ++node) {
    for (int rail = 0; rail < lay.rails; ++rail) attach_nic(*impl, node, rail, node / lay.servers_per_tor);
  }
  for (int leaf = 0; leaf < lay.num_tors && lay.num_spines > 0; ++leaf) {
    for (int s = 0; s < lay.num_spines; ++s) {
      impl->add_parallel_links(tor_vertex(*impl, leaf), first_spine + static_cast<VertexId>(s),
                               LinkKind::TorSpine, net.switch_port_bandwidth_Bps,
                               net.link_latency_s, lay.tor_tier2_parallel_links);
    }
  }
  return Fabric(std::move(impl));
}

Fabric build_rail_only(const ClusterSpec& cluster) {
  std::shared_ptr<FabricImpl> impl = build_servers(cluster, Topology::RailOnly);
  if (!has_scale_out(cluster)) return Fabric(std::move(impl));
  FabricLayout& lay = impl->layout;
  const NetworkSpec& net = cluster.network;
  lay.servers_per_tor = rail_servers_per_tor(net, lay);
  lay.num_tor_sets = ceil_div(lay.num_nodes, lay.servers_per_tor);
  lay.num_tors = lay.num_tor_sets * lay.rails;
  lay.num_pods = 1;
  lay.tors_per_pod = lay.num_tors;
  if (lay.num_tor_sets > 1) {
    // Each rail is its own two-tier network: the rail's ToRs and its rail spines.
    lay.spines_per_group = size_top_tier(lay.num_tor_sets, lay.tor_up_ports, net.switch_radix,
                                         "ToR sets of a rail-only fabric");
    lay.tor_tier2_parallel_links = lay.tor_up_ports / lay.spines_per_group;
    lay.num_spines = lay.rails * lay.spines_per_group;
  }
  add_vertices(*impl, VertexKind::Tor, lay.num_tors);
  const VertexId first_spine = add_vertices(*impl, VertexKind::Spine, lay.num_spines);
  for (int node = 0; node < lay.num_nodes; ++node) {
    const int set = node / lay.servers_per_tor;
    for (int rail = 0; rail < lay.rails; ++rail) attach_nic(*impl, node, rail, set * lay.rails + rail);
  }
  for (int tor = 0; tor < lay.num_tors && lay.num_spines > 0; ++tor) {
    const int rail = tor % lay.rails;
    for (int k = 0; k < lay.spines_per_group; ++k) {
      const VertexId spine = first_spine + static_cast<VertexId>(rail * lay.spines_per_group + k);
      impl->add_parallel_links(tor_vertex(*impl, tor), spine, LinkKind::TorSpine,
                               net.switch_port_bandwidth_Bps, net.link_latency_s,
                               lay.tor_tier2_parallel_links);
    }
  }
  return Fabric(std::move(impl));
}

Fabric build_fabric(const ClusterSpec& cluster) {
  switch (cluster.network.topology) {
    case Topology::RailOptimizedClos: return build_rail_optimized_clos(cluster);
    case Topology::FatTree: return build_fat_tree(cluster);
    case Topology::RailOnly: return build_rail_only(cluster);
  }
  throw InputError("cluster.network.topology", "unknown topology");
}

}  // namespace megasim
