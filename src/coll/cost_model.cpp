// NCCL's tuning model (tuning.cc v2.21.5, constants in configs/nccl/nccl-2.21.json) on top
// of transport bandwidths at their measured achieved fractions.
#include "megasim/coll/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

namespace megasim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kTree = 0;
constexpr std::size_t kRing = 1;

std::size_t idx(NcclProto p) { return static_cast<std::size_t>(p); }

void validate(const CollGroupShape& g, double size_bytes) {
  if (g.ranks < 1 || g.ranks_per_node < 1 || g.nodes < 1 ||
      static_cast<long long>(g.ranks_per_node) * g.nodes != g.ranks)
    throw std::invalid_argument("CollGroupShape: need ranks == ranks_per_node * nodes >= 1");
  if (!(size_bytes >= 0) || !std::isfinite(size_bytes))
    throw std::invalid_argument("collective size must be finite and >= 0");
}

int floor_log2(int n) {
  int l = 0;
  while (n > 1) { n >>= 1; ++l; }
  return l;
}

// Everything the per-protocol formulas share, computed once per call.
struct Ctx {
  CollOp op;
  double size;
  const CollGroupShape& g;
  const ClusterSpec& c;
  const NcclModel& m;
  std::size_t arch;
  std::size_t col;
  int channels;
  double bus0;      // Simple bus bandwidth
  double topo_lat;  // graph->latencyInter
  bool ll128_ok;
  double ll_max;
};

// NCCL enables LL128 only where 128-byte stores stay ordered: NVLink inside a node on
// Volta/Ampere/Hopper, and across nodes on Hopper (PXN paths).
bool ll128_enabled(const CollGroupShape& g, int sm) {
  if (sm < 70) return false;
  return g.nodes == 1 || sm >= 90;
}

double inter_lat(const Ctx& x, const std::array<ProtoTable, 2>& net, std::size_t algo, NcclProto p) {
  double lat = net[algo][idx(p)] + x.topo_lat;
  if (p == NcclProto::Simple) lat += x.topo_lat;  // NCCL counts the flush a second time
  return lat;
}

std::optional<CollEstimate> ring(const Ctx& x, NcclProto p) {
  const int n = x.g.ranks;
  int nsteps = 1;
  int ninter = 0;
  switch (x.op) {
    case CollOp::AllReduce:
      nsteps = 2 * (n - 1);
      ninter = x.g.nodes > 1 ? 2 * x.g.nodes : 0;
      break;
    case CollOp::AllGather:
    case CollOp::ReduceScatter:
      nsteps = n - 1;
      ninter = x.g.nodes - 1;
      break;
    case CollOp::SendRecv:  // one step of a ring: a single hop
    case CollOp::AllToAll:  // grouped point-to-point, all peers at once
      nsteps = 1;
      ninter = x.g.nodes > 1 ? 1 : 0;
      break;
  }
  // With one rank per node every step is inter-node; NCCL's 2*nNodes would exceed nsteps.
  ninter = std::min(ninter, nsteps);

  double bus = x.bus0;
  if (p == NcclProto::LL) bus = std::min(x.ll_max, bus * x.m.ring_ll_factor);
  if (p == NcclProto::LL128) {
    if (!x.ll128_ok) return std::nullopt;
    const double f = x.g.ranks_per_node < 2 && x.g.nodes > 1 ? x.m.ring_ll128_factor_one_rank_per_node
                                                             : x.m.ring_ll128_factor;
    bus = std::min(bus * f, x.channels * x.m.ring_ll128_per_channel_Bps[x.arch][x.col]);
  }

  double algbw = bus * static_cast<double>(n) / nsteps;
  if (x.op == CollOp::SendRecv) algbw = bus;
  if (x.op == CollOp::AllToAll) {
    // Per rank: (rpn-1)/n of the buffer over NVLink, (n-rpn)/n through the node's NICs, which
    // all rpn ranks of the node share; both run at once.
    const double nd = n;
    const double rpn = x.g.ranks_per_node;
    const double nvl = nvlink_effective_Bps(x.c, x.m);
    // The NICs at NCCL's all-to-all rate, below the rings' (NcclModel::all_to_all_network_factor).
    const double nic =
        nics_used_per_node(x.g.ranks_per_node, x.c) * nic_effective_Bps(x.c, x.m) * x.m.all_to_all_network_factor;
    const double proto_f = p == NcclProto::Simple ? 1.0 : (p == NcclProto::LL ? x.m.ring_ll_factor : x.m.ring_ll128_factor);
    const double t_intra = (rpn - 1) / nd / (nvl * proto_f);
    const double t_inter = x.g.nodes > 1 ? rpn * (nd - rpn) / nd / (nic * proto_f) : 0.0;
    algbw = 1.0 / std::max(t_intra, t_inter);
  }

  double intra = x.m.hw_lat_nvlink_s[kRing][idx(p)];
  if (x.g.nodes > 1) {
    double overhead = x.m.net_overhead_s;
    if (p == NcclProto::Simple) overhead *= x.m.net_overhead_simple_factor;
    intra = std::max(intra, overhead);
  }
  const double inter = inter_lat(x, x.m.hw_lat_net_s, kRing, p);
  double lat = x.m.base_lat_s[kRing][idx(p)] + (nsteps - ninter) * intra + ninter * inter;
  if (x.op == CollOp::AllReduce && p == NcclProto::Simple && x.g.nodes > 1 &&
      x.size / (static_cast<double>(x.channels) * n) >= x.m.ring_plateau_min_bytes)
    lat *= x.arch >= static_cast<std::size_t>(GpuArchClass::Ampere) ? x.m.ring_plateau_factor
                                                                   : x.m.ring_plateau_factor_pre_ampere;
  return CollEstimate{CollAlgo::Ring, p, lat, algbw, lat + x.size / algbw};
}

std::optional<CollEstimate> tree(const Ctx& x, NcclProto p) {
  double bus = std::min(x.bus0 * x.m.tree_factor, x.channels * x.m.tree_per_channel_Bps[x.arch][x.col]);
  if (p == NcclProto::LL) bus = std::min(bus * x.m.tree_ll_factor, x.ll_max);
  if (p == NcclProto::LL128) {
    if (!x.ll128_ok) return std::nullopt;
    const double f = x.g.nodes == 1 ? x.m.tree_ll128_factor_single_node : x.m.tree_ll128_factor_multi_node;
    bus = std::min(bus * f, x.channels * x.m.tree_ll128_per_channel_Bps[x.arch][x.col]);
  }
  const double algbw = bus * 0.5 * x.m.tree_correction_factor(p, x.size);
  const double intra = x.m.hw_lat_nvlink_s[kTree][idx(p)];
  const double inter = inter_lat(x, x.m.hw_lat_net_s, kTree, p);
  const double lat = x.m.base_lat_s[kTree][idx(p)] +
                     2.0 * ((x.g.ranks_per_node - 1) * intra + floor_log2(x.g.nodes) * inter);
  return CollEstimate{CollAlgo::Tree, p, lat, algbw, lat + x.size / algbw};
}

Ctx make_ctx(CollOp op, double size, const CollGroupShape& g, const ClusterSpec& c, const NcclModel& m) {
  const auto arch = static_cast<std::size_t>(arch_class_of_sm(c.gpu.architecture_sm));
  const auto col = static_cast<std::size_t>(node_column(g.nodes));
  return Ctx{op, size, g, c, m, arch, col, default_channels(g, c, m), group_bus_bandwidth_Bps(g, c, m),
             inter_node_topology_latency_s(g, c), ll128_enabled(g, c.gpu.architecture_sm),
             g.nodes == 1 ? m.ll_max_single_node_Bps[arch] : m.ll_max_multi_node_Bps[col]};
}

CollEstimate best(const Ctx& x, CollAlgo algo, std::optional<NcclProto> only) {
  const bool tree_ok = x.op == CollOp::AllReduce && (algo == CollAlgo::Auto || algo == CollAlgo::Tree);
  const bool ring_ok = !(tree_ok && algo == CollAlgo::Tree);
  std::optional<CollEstimate> pick;
  auto consider = [&](std::optional<CollEstimate> e) {
    if (e && (!pick || e->time_s < pick->time_s)) pick = e;
  };
  for (NcclProto p : {NcclProto::LL, NcclProto::LL128, NcclProto::Simple}) {
    if (only && p != *only) continue;
    if (ring_ok) consider(ring(x, p));
    if (tree_ok) consider(tree(x, p));
  }
  if (!pick) consider(ring(x, NcclProto::Simple));  // forced protocol unavailable here
  return *pick;
}

}  // namespace

double nvlink_effective_Bps(const ClusterSpec& c, const NcclModel& m) {
  return c.gpu.nvlink_bandwidth_Bps * m.nvlink_fraction(c.gpu.architecture_sm);
}

double nic_effective_Bps(const ClusterSpec& c, const NcclModel& m) {
  return c.network.nic_bandwidth_Bps * m.network_fraction(c.network.nic_bandwidth_Bps);
}

namespace {

// Hosts joined by one NVLink domain: 1 on DGX/HGX, 18 four-GPU trays on an NVL72 rack.
int hosts_per_domain(const ClusterSpec& c) {
  return std::max(1, nvlink_domain_gpus(c) / std::max(1, c.gpus_per_node));
}

}  // namespace

int nics_used_per_node(int ranks_per_node, const ClusterSpec& c) {
  // Each rank drives its host's NICs in proportion (nics_per_node / gpus_per_node per GPU); an
  // NVLink domain of several hosts (NVL72) offers all of its hosts' NICs.
  const int nics = std::max(1, c.network.nics_per_node);
  const int gpn = std::max(1, c.gpus_per_node);
  const int domain_nics = nics * hosts_per_domain(c);
  const int used = (ranks_per_node * nics + gpn - 1) / gpn;
  return std::clamp(used, 1, domain_nics);
}

double group_bus_bandwidth_Bps(const CollGroupShape& g, const ClusterSpec& c, const NcclModel& m) {
  const double nvl = nvlink_effective_Bps(c, m);
  if (g.nodes == 1) return nvl;
  const double net = nics_used_per_node(g.ranks_per_node, c) * nic_effective_Bps(c, m);
  return std::min(g.ranks_per_node > 1 ? nvl : kInf, net);
}

double inter_node_topology_latency_s(const CollGroupShape& g, const ClusterSpec& c) {
  if (g.nodes <= 1) return 0.0;
  const int per_leaf = c.network.servers_per_tor;
  const bool one_leaf = per_leaf <= 0 || static_cast<std::int64_t>(g.nodes) * hosts_per_domain(c) <= per_leaf;
  // Multi-GPU rings use rail-matched NICs, so they stay on rails like same-rail groups.
  const bool in_rail = g.same_rail || g.ranks_per_node > 1 || c.network.topology == Topology::RailOnly;
  const int hops = one_leaf && in_rail ? 2 : 4;
  return hops * c.network.link_latency_s;
}

int default_channels(const CollGroupShape& g, const ClusterSpec& c, const NcclModel& m) {
  if (g.nodes == 1) return m.channels_single_node;
  return std::min(m.channels_max, m.channels_per_nic * nics_used_per_node(g.ranks_per_node, c));
}

CollEstimate estimate_collective(CollOp op, double size_bytes, const CollGroupShape& g,
                                 const ClusterSpec& cluster, const NcclModel& m, CollAlgo algo) {
  validate(g, size_bytes);
  if (g.ranks == 1 || size_bytes == 0) return CollEstimate{CollAlgo::Ring, NcclProto::Simple, 0, kInf, 0};
  return best(make_ctx(op, size_bytes, g, cluster, m), algo, std::nullopt);
}

CollEstimate estimate_collective_with(CollOp op, double size_bytes, const CollGroupShape& g,
                                      const ClusterSpec& cluster, const NcclModel& m, CollAlgo algo,
                                      NcclProto proto) {
  validate(g, size_bytes);
  if (g.ranks == 1 || size_bytes == 0) return CollEstimate{CollAlgo::Ring, proto, 0, kInf, 0};
  return best(make_ctx(op, size_bytes, g, cluster, m), algo, proto);
}

}  // namespace megasim
