// Validation and server-level construction shared by every topology builder.
#include "net/topo/builder_common.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "megasim/core/error.hpp"

namespace megasim {
namespace {

void require_positive(double value, const char* path, const char* what) {
  if (!(value > 0) || !std::isfinite(value)) {
    throw InputError(path, std::string(what) + " must be a positive finite value");
  }
}

void require_non_negative(double value, const char* path) {
  if (!(value >= 0) || !std::isfinite(value)) {
    throw InputError(path, "must be a non-negative finite value");
  }
}

// ToR port split from the down:up bandwidth ratio; both sides keep at least one port.
void size_tor_ports(const NetworkSpec& net, FabricLayout& lay) {
  if (net.switch_radix < 2) {
    throw InputError("cluster.network.switch_radix", "a switch needs at least 2 ports");
  }
  require_positive(net.switch_port_bandwidth_Bps, "cluster.network.switch_port_bandwidth",
                   "switch port bandwidth");
  if (!std::isfinite(net.oversubscription) || net.oversubscription < 1.0) {
    throw InputError("cluster.network.oversubscription",
                     "must be a finite down:up ratio >= 1 (1 = non-blocking)");
  }
  const double radix = static_cast<double>(net.switch_radix);
  const double down = std::round(radix * net.oversubscription / (1.0 + net.oversubscription));
  lay.tor_down_ports = std::min(net.switch_radix - 1, std::max(1, static_cast<int>(down)));
  lay.tor_up_ports = net.switch_radix - lay.tor_down_ports;
  lay.nic_ports_per_tor = lay.tor_down_ports * (net.split_port ? 2 : 1);

  // A NIC cannot run faster than the (possibly split) switch port it plugs into.
  const double port_share_Bps = net.switch_port_bandwidth_Bps / (net.split_port ? 2.0 : 1.0);
  if (net.nic_bandwidth_Bps > port_share_Bps * (1.0 + 1e-9)) {
    throw InputError("cluster.network.nic_bandwidth",
                     "exceeds the bandwidth of the switch port it connects to" +
                         std::string(net.split_port ? " (ports are split in two; set "
                                                      "cluster.network.split_port=false)"
                                                    : ""));
  }
}

}  // namespace

bool has_scale_out(const ClusterSpec& cluster) {
  return cluster.num_gpus > cluster.gpus_per_node || cluster.network.nic_bandwidth_Bps > 0;
}

VertexId add_vertices(FabricImpl& impl, VertexKind kind, int count) {
  const auto first = static_cast<VertexId>(impl.vertices.size());
  for (int i = 0; i < count; ++i) impl.add_vertex(kind, i);
  return first;
}

std::shared_ptr<FabricImpl> build_servers(const ClusterSpec& cluster, Topology topology) {
  const NetworkSpec& net = cluster.network;
  if (cluster.num_gpus <= 0 || cluster.num_gpus > kMaxGpus) {
    throw InputError("cluster.num_gpus", "must be between 1 and " + std::to_string(kMaxGpus));
  }
  if (cluster.gpus_per_node <= 0) {
    throw InputError("cluster.gpus_per_node", "must be positive");
  }
  if (cluster.num_gpus % cluster.gpus_per_node != 0) {
    throw InputError("cluster.num_gpus", "must be a multiple of cluster.gpus_per_node (" +
                                             std::to_string(cluster.gpus_per_node) + ")");
  }
  if (net.nics_per_node <= 0 || cluster.gpus_per_node % net.nics_per_node != 0) {
    throw InputError("cluster.network.nics_per_node",
                     "must be positive and divide cluster.gpus_per_node");
  }
  const bool nics = has_scale_out(cluster);
  if (nics) require_positive(net.nic_bandwidth_Bps, "cluster.network.nic_bandwidth", "NIC bandwidth");
  const int domain = nvlink_domain_gpus(cluster);
  if (domain < cluster.gpus_per_node || domain % cluster.gpus_per_node != 0) {
    throw InputError("cluster.nvlink_domain_size", "must be a multiple of cluster.gpus_per_node (" +
                                                       std::to_string(cluster.gpus_per_node) + ")");
  }
  if (domain > 1) {
    require_positive(cluster.gpu.nvlink_bandwidth_Bps, "cluster.gpu.nvlink_bandwidth",
                     "NVLink bandwidth (several GPUs per NVLink domain)");
  }
  require_non_negative(cluster.pcie_bandwidth_Bps, "cluster.pcie_bandwidth");
  require_non_negative(net.link_latency_s, "cluster.network.link_latency");
  require_non_negative(net.nic_latency_s, "cluster.network.nic_latency");

  auto impl = std::make_shared<FabricImpl>();
  impl->cluster = cluster;
  FabricLayout& lay = impl->layout;
  lay.topology = topology;
  lay.num_gpus = static_cast<int>(cluster.num_gpus);
  lay.gpus_per_node = cluster.gpus_per_node;
  lay.num_nodes = lay.num_gpus / lay.gpus_per_node;
  // A job smaller than one NVL72 rack still has one NVLink fabric, just fewer GPUs on it.
  lay.nvlink_domain_size = std::min(domain, lay.num_gpus);
  lay.num_domains = (lay.num_gpus + lay.nvlink_domain_size - 1) / lay.nvlink_domain_size;
  lay.rails = net.nics_per_node;
  if (nics) size_tor_ports(net, lay);

  // Reserve the link arrays for the whole fabric (GPU ports, NIC uplinks, and about as many
  // switch-to-switch links per tier as NIC uplinks): growing them one link at a time copied
  // and page-faulted a 100k-GPU fabric's million link directions several times over.
  const std::size_t gpus = static_cast<std::size_t>(lay.num_gpus);
  const std::size_t nic_count = nics ? static_cast<std::size_t>(lay.num_nodes) * static_cast<std::size_t>(lay.rails) : 0;
  const std::size_t link_estimate = 2 * (2 * gpus + 3 * nic_count);
  impl->links.reserve(link_estimate);
  impl->capacity_Bps.reserve(link_estimate);
  const VertexId first_gpu = add_vertices(*impl, VertexKind::Gpu, lay.num_gpus);
  // One NVSwitch vertex per NVLink domain: the NVSwitch chips of a DGX node, or the nine
  // NVLink switch trays of an NVL72 rack, are a non-blocking crossbar at each GPU's NVLink rate.
  const bool has_nvswitch = lay.nvlink_domain_size > 1;
  const VertexId first_nvs =
      has_nvswitch ? add_vertices(*impl, VertexKind::NvSwitch, lay.num_domains) : 0;
  const VertexId first_nic = add_vertices(*impl, VertexKind::Nic, nics ? lay.num_nodes * lay.rails : 0);
  impl->gpu_links.resize(static_cast<std::size_t>(lay.num_gpus));
  impl->gpu_tor.assign(static_cast<std::size_t>(lay.num_gpus), -1);

  // PCIe unset: the GPU-NIC hop is assumed not to be the bottleneck and runs at the NIC rate.
  const double pcie_Bps =
      cluster.pcie_bandwidth_Bps > 0 ? cluster.pcie_bandwidth_Bps : net.nic_bandwidth_Bps;
  const int gpus_per_nic = lay.gpus_per_node / lay.rails;
  for (int g = 0; g < lay.num_gpus; ++g) {
    const int node = g / lay.gpus_per_node;
    const auto gu = static_cast<std::size_t>(g);
    const VertexId gv = first_gpu + static_cast<VertexId>(g);
    if (has_nvswitch) {
      // NVLink/NVSwitch latency is part of NCCL's per-protocol hwLat (collective model), so
      // the hop itself carries none here.
      const LinkId up = impl->add_link(gv, first_nvs + static_cast<VertexId>(g / lay.nvlink_domain_size),
                                       LinkKind::NvLink, cluster.gpu.nvlink_bandwidth_Bps, 0, 0);
      impl->gpu_links[gu].to_nvswitch = up;
      impl->gpu_links[gu].from_nvswitch = up + 1;
    }
    if (!nics) continue;
    const int rail = (g % lay.gpus_per_node) / gpus_per_nic;
    const VertexId nic = first_nic + static_cast<VertexId>(node * lay.rails + rail);
    // The NIC's per-message host cost is charged once per path, on the sending side.
    const LinkId to_nic = impl->add_link(gv, nic, LinkKind::Pcie, pcie_Bps, net.nic_latency_s, 0);
    impl->gpu_links[gu].to_nic = to_nic;
    impl->gpu_links[gu].from_nic = to_nic + 1;
  }
  return impl;
}

void attach_nic(FabricImpl& impl, int node, int rail, int tor) {
  const FabricLayout& lay = impl.layout;
  const NetworkSpec& net = impl.cluster.network;
  const VertexId nic = impl.by_kind[static_cast<std::size_t>(VertexKind::Nic)].at(
      static_cast<std::size_t>(node * lay.rails + rail));
  const VertexId tv =
      impl.by_kind[static_cast<std::size_t>(VertexKind::Tor)].at(static_cast<std::size_t>(tor));
  const LinkId up = impl.add_link(nic, tv, LinkKind::NicTor, net.nic_bandwidth_Bps,
                                  net.link_latency_s, net.link_latency_s);
  const int gpus_per_nic = lay.gpus_per_node / lay.rails;
  for (int i = 0; i < gpus_per_nic; ++i) {
    const auto g = static_cast<std::size_t>(node * lay.gpus_per_node + rail * gpus_per_nic + i);
    impl.gpu_links[g].nic_to_tor = up;
    impl.gpu_links[g].tor_to_nic = up + 1;
    impl.gpu_tor[g] = tor;
  }
}

}  // namespace megasim
