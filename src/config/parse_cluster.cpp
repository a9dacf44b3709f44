// The cluster section: GPU figures, node shape and the scale-out network.
#include <algorithm>
#include <array>
#include <cstdint>

#include "config/json_reader.hpp"
#include "config/parse_parts.hpp"
#include "config/sections.hpp"

namespace megasim::config_detail {

namespace {

constexpr std::array<EnumName<Topology>, 3> kTopologies{{{"rail-optimized-clos", Topology::RailOptimizedClos},
                                                        {"fat-tree", Topology::FatTree},
                                                        {"rail-only", Topology::RailOnly}}};
constexpr std::array<EnumName<Routing>, 3> kRoutings{{{"ecmp", Routing::Ecmp},
                                                     {"ideal-spray", Routing::IdealSpray},
                                                     {"single-path", Routing::SinglePath}}};

// Network fields left out fall back to configs/clusters/_network-defaults.json.
constexpr std::string_view kNetworkDefaults = "_network-defaults";

double positive(std::optional<double> v, ObjectReader& r, std::string_view key) {
  if (!v) throw InputError(r.path_of(key), "required field is missing");
  if (!(*v > 0)) throw InputError(r.path_of(key), "must be positive");
  return *v;
}

double required(std::optional<double> v, ObjectReader& r, std::string_view key) {
  if (!v) throw InputError(r.path_of(key), "required field is missing");
  return *v;
}

GpuSpec parse_gpu(const nlohmann::json& v, const std::string& path, const std::string& default_name,
                  std::optional<double>& pcie_Bps) {
  ObjectReader r(v, path);
  GpuSpec g;
  g.name = r.string_opt("name").value_or(default_name);
  g.peak_bf16_flops = positive(r.flops_opt("peak_bf16"), r, "peak_bf16");
  g.peak_fp8_flops = r.flops_opt("peak_fp8").value_or(0.0);  // null / absent: no FP8 tensor cores
  g.peak_fp32_flops = positive(r.flops_opt("peak_fp32"), r, "peak_fp32");
  g.memory_bytes = positive(r.bytes_opt("memory"), r, "memory");
  g.memory_bandwidth_Bps = positive(r.bandwidth_opt("memory_bandwidth"), r, "memory_bandwidth");
  g.nvlink_bandwidth_Bps = positive(r.bandwidth_opt("nvlink_bandwidth"), r, "nvlink_bandwidth");
  g.architecture_sm = static_cast<int>(r.int_req("architecture_sm", 1, 1000));
  g.profile = r.string_req("profile");
  pcie_Bps = r.bandwidth_opt("pcie_bandwidth");
  if (pcie_Bps && !(*pcie_Bps > 0)) throw InputError(r.path_of("pcie_bandwidth"), "must be positive");
  r.finish();
  return g;
}

NetworkSpec parse_network(const nlohmann::json& v, const std::string& path, bool multi_node, int gpus_per_node) {
  ObjectReader r(v, path);
  NetworkSpec n;
  n.topology = r.enum_opt("topology", kTopologies).value_or(n.topology);
  const auto nic = r.bandwidth_opt("nic_bandwidth");
  if (nic && !(*nic > 0)) throw InputError(r.path_of("nic_bandwidth"), "must be positive");
  if (!nic && multi_node) {
    throw InputError(r.path_of("nic_bandwidth"),
                     "required when the job spans more than one node (give it here or use a catalog cluster)");
  }
  n.nic_bandwidth_Bps = nic.value_or(0.0);
  // One NIC per GPU is the DGX/HGX design (and MegaScale's: "eight 200G NICs on the server").
  n.nics_per_node = static_cast<int>(r.int_opt("nics_per_node", 1, 1024).value_or(gpus_per_node));
  n.split_port = r.bool_opt("split_port").value_or(n.split_port);
  n.switch_radix = static_cast<int>(r.int_req("switch_radix", 2, 65536));
  // A split port carries two NIC links, so the port is twice the NIC rate.
  const auto port = r.bandwidth_opt("switch_port_bandwidth");
  if (port && !(*port > 0)) throw InputError(r.path_of("switch_port_bandwidth"), "must be positive");
  n.switch_port_bandwidth_Bps = port.value_or(n.nic_bandwidth_Bps * (n.split_port ? 2.0 : 1.0));
  n.oversubscription = r.number_opt("oversubscription", 1.0, 1024.0).value_or(1.0);
  // Leaf ports split down:up by the oversubscription ratio; each downlink serves one rail NIC
  // of one server (two with split ports).
  const double down_ports = static_cast<double>(n.switch_radix) * n.oversubscription / (1.0 + n.oversubscription);
  const auto derived_servers = static_cast<std::int64_t>(down_ports) * (n.split_port ? 2 : 1);
  n.servers_per_tor = static_cast<int>(
      r.int_opt("servers_per_tor", 1, kMaxInt).value_or(std::max<std::int64_t>(1, derived_servers)));
  n.routing = r.enum_opt("routing", kRoutings).value_or(n.routing);
  n.ecmp_seed = static_cast<std::uint64_t>(r.int_opt("ecmp_seed", 0, INT64_MAX).value_or(1));
  n.queue_pairs_per_connection = static_cast<int>(r.int_req("queue_pairs_per_connection", 1, 1024));
  n.link_latency_s = required(r.time_opt("link_latency"), r, "link_latency");
  n.nic_latency_s = required(r.time_opt("nic_latency"), r, "nic_latency");
  r.allow("name");
  r.finish();
  return n;
}

}  // namespace

ClusterSpec parse_cluster(const nlohmann::json& v, const std::string& path, const Catalog& catalog,
                          const std::filesystem::path& dir, const std::string& default_name) {
  ObjectReader r(v, path);
  ClusterSpec c;
  c.name = r.string_opt("name").value_or(default_name);
  const auto gpu = resolve_section(r.require("gpu"), "gpus", r.path_of("gpu"), catalog, dir);
  std::optional<double> gpu_pcie;
  c.gpu = parse_gpu(gpu.value, r.path_of("gpu"), gpu.name, gpu_pcie);
  c.num_gpus = r.int_req("num_gpus", 1, kMaxInt);
  c.gpus_per_node = static_cast<int>(r.int_opt("gpus_per_node", 1, 1024).value_or(8));
  c.nvlink_domain_size = static_cast<int>(r.int_opt("nvlink_domain_size", 1, 1024).value_or(c.gpus_per_node));
  if (c.nvlink_domain_size % c.gpus_per_node != 0) {
    throw InputError(r.path_of("nvlink_domain_size"), "must be a multiple of gpus_per_node (" +
                                                          std::to_string(c.gpus_per_node) +
                                                          "): an NVLink domain is made of whole hosts");
  }
  const auto pcie = r.bandwidth_opt("pcie_bandwidth");
  if (pcie && !(*pcie > 0)) throw InputError(r.path_of("pcie_bandwidth"), "must be positive");
  c.pcie_bandwidth_Bps = pcie.value_or(gpu_pcie.value_or(0.0));
  c.straggler_host_fraction = r.number_opt("straggler_host_fraction", 0.0, 1.0).value_or(0.0);
  c.straggler_slowdown = r.number_opt("straggler_slowdown", 0.0, 100.0).value_or(0.0);

  // Defaults first, then what the cluster wrote; the merged object is checked as one.
  nlohmann::json net = catalog.entry("clusters", kNetworkDefaults, r.path_of("network"));
  if (const nlohmann::json* given = r.raw("network"); given != nullptr && !given->is_null()) {
    if (!given->is_object()) {
      throw InputError(r.path_of("network"), "expected an object, got " + describe(*given));
    }
    deep_merge(net, *given);
  }
  c.network = parse_network(net, r.path_of("network"), c.num_gpus > c.nvlink_domain_size, c.gpus_per_node);
  r.finish();
  return c;
}

}  // namespace megasim::config_detail
