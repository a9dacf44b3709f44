// Lowering of collectives into flow steps (see lowering.hpp for the structure modelled).
#include "megasim/coll/lowering.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "megasim/core/error.hpp"

namespace megasim {
namespace {

using Blocks = std::vector<std::vector<int>>;

// GPUs grouped by NVLink domain, domains in order of first appearance, GPUs in request order.
Blocks group_by_domain(const std::vector<int>& gpus, int domain_gpus) {
  Blocks blocks;
  std::map<int, std::size_t> index;
  for (int g : gpus) {
    const int node = g / domain_gpus;
    auto [it, fresh] = index.emplace(node, blocks.size());
    if (fresh) blocks.emplace_back();
    blocks[it->second].push_back(g);
  }
  return blocks;
}

// Bandwidth of the chosen protocol relative to Simple, from NCCL's model for this very group
// (LL's 50% and its llMaxBw cap, LL128's 120/128 and per-channel caps): the flow model takes
// the structure's bandwidth from the fabric and this factor from the tuner.
double protocol_efficiency(const CollEstimate& e, CollOp op, double size, const CollGroupShape& g,
                           const ClusterSpec& c, const NcclModel& m) {
  if (e.proto == NcclProto::Simple || size <= 0 || g.ranks <= 1) return 1.0;
  const CollEstimate simple = estimate_collective_with(op, size, g, c, m, e.algo, NcclProto::Simple);
  return std::clamp(e.algbw_Bps / simple.algbw_Bps, 1e-6, 1.0);
}

// Collects the flows of one phase; inter-node edges are split over the connection's queue
// pairs and identical flows are merged into a multiplicity at the end.
class PhaseBuilder {
 public:
  // `pf`: protocol efficiency (protocol_efficiency()); `latency_s`: the NCCL latency term;
  // `net_factor`: a further factor on the network's rate (NCCL's all-to-all's, below a ring's).
  PhaseBuilder(const ClusterSpec& c, const NcclModel& m, double pf, double latency_s, double net_factor = 1.0)
      : c_(c), domain_(nvlink_domain_gpus(c)), qpc_(std::max(1, c.network.queue_pairs_per_connection)), latency_s_(latency_s) {
    nvl_div_ = m.nvlink_fraction(c.gpu.architecture_sm) * pf;
    net_div_ = m.network_fraction(c.network.nic_bandwidth_Bps) * pf * net_factor;
  }

  void reserve(std::size_t flows) { flows_.reserve(flows_.size() + flows); }

  void add(int src, int dst, double payload, int channel) {
    if (src == dst || payload <= 0) return;
    const bool inter = src / domain_ != dst / domain_;
    if (!inter) {  // NVLink: no queue pairs, one flow
      flows_.push_back({src, dst, payload / nvl_div_, 0, 1});
      return;
    }
    const double per_qp = payload / net_div_ / qpc_;
    for (int k = 0; k < qpc_; ++k)
      flows_.push_back({src, dst, per_qp,
                        static_cast<std::uint64_t>(channel) * static_cast<std::uint64_t>(qpc_) +
                            static_cast<std::uint64_t>(k),
                        1});
  }

  // A point-to-point send as NCCL moves it by default (NCCL_P2P_PXN_LEVEL=2, "always use
  // PXN"): across NVLink domains to a GPU on another rail (NIC), it first crosses NVLink to a
  // GPU of the same communicator (`group`, sorted) on the source's node whose NIC is on the
  // destination's rail, preferring the destination's local index, and that NIC sends it on the
  // rail; rail-optimised fabrics keep it off the spine. Without such a member it goes direct.
  // NCCL's proxy pipelines the two hops: both are flows of the same phase.
  void add_pxn(int src, int dst, double payload, int channel, const std::vector<int>& group) {
    const int gpn = std::max(1, c_.gpus_per_node);
    const int per_nic = std::max(1, gpn / std::max(1, c_.network.nics_per_node));
    const auto rail = [&](int g) { return (g % gpn) / per_nic; };
    if (src / domain_ == dst / domain_ || rail(src) == rail(dst)) {
      add(src, dst, payload, channel);
      return;
    }
    const int base = src - src % gpn;
    const auto member = [&](int g) { return std::binary_search(group.begin(), group.end(), g); };
    int relay = base + dst % gpn;
    if (!member(relay)) {
      relay = -1;
      for (int l = 0; l < gpn && relay < 0; ++l)
        if (rail(base + l) == rail(dst) && member(base + l)) relay = base + l;
    }
    if (relay < 0) {
      add(src, dst, payload, channel);
      return;
    }
    add(src, relay, payload, channel);
    add(relay, dst, payload, channel);
  }

  int queue_pairs() const { return qpc_; }

  CollPhase finish() {
    auto key = [](const FlowStep& f) { return std::tie(f.src_gpu, f.dst_gpu, f.queue_pair, f.wire_bytes); };
    std::sort(flows_.begin(), flows_.end(), [&](const FlowStep& a, const FlowStep& b) { return key(a) < key(b); });
    CollPhase phase;
    phase.latency_s = latency_s_;
    for (const FlowStep& f : flows_) {
      if (!phase.flows.empty() && key(phase.flows.back()) == key(f))
        phase.flows.back().multiplicity += f.multiplicity;
      else
        phase.flows.push_back(f);
    }
    return phase;
  }

 private:
  const ClusterSpec& c_;
  int domain_;
  int qpc_;
  double latency_s_;
  double nvl_div_ = 1;
  double net_div_ = 1;
  std::vector<FlowStep> flows_;
};

// One ring pass over `blocks` per channel, every edge carrying `per_edge` payload per channel.
void add_ring(PhaseBuilder& b, const Blocks& blocks, int channels, double per_edge) {
  const std::size_t n_nodes = blocks.size();
  std::size_t ranks = 0;
  for (const auto& blk : blocks) ranks += blk.size();
  b.reserve(static_cast<std::size_t>(channels) * (ranks + n_nodes) *
            static_cast<std::size_t>(std::max(1, b.queue_pairs())));
  for (int c = 0; c < channels; ++c) {
    const auto uc = static_cast<std::size_t>(c);
    for (std::size_t i = 0; i < n_nodes; ++i) {
      const auto& blk = blocks[i];
      const std::size_t r = blk.size();
      const std::size_t a = uc % r;
      // NVLink cycle inside the node; across nodes its last hop is the PXN hand-off back to
      // the rail GPU a, which then sends on rail a.
      if (r > 1)
        for (std::size_t k = 0; k < r; ++k) b.add(blk[(a + k) % r], blk[(a + k + 1) % r], per_edge, c);
      if (n_nodes > 1) {
        const auto& next = blocks[(i + 1) % n_nodes];
        b.add(blk[a], next[uc % next.size()], per_edge, c);
      }
    }
  }
}

// NCCL's binary tree over n ranks (src/graph/trees.cc ncclGetBtree): a rank's level is its
// count of trailing one bits, its children are rank -/+ 2^(level-1) and its parent clears bit
// level+1 after adding 2^level, so half the edges join neighbouring ranks (leaves are the even
// ranks). Returns the parent, -1 for the top.
int btree_parent(int rank, int n) {
  int level = 0;
  for (int bit = 1; bit < n && (bit & rank) != 0; bit <<= 1) ++level;
  if (n < (1 << (level + 1))) return -1;
  int up = rank;
  int l = level;
  do {
    up = (up + (1 << l)) & ~(1 << (l + 1));
    ++l;
  } while (up >= n);
  return up;
}

// The second tree of NCCL's double binary tree (ncclGetDtree): the first mirrored (n even) or
// shifted by one rank (n odd), so most interior ranks of one are leaves of the other.
int dtree_parent(int rank, int n) {
  if (n % 2 == 1) {
    const int u = btree_parent((rank - 1 + n) % n, n);
    return u < 0 ? -1 : (u + 1) % n;
  }
  const int u = btree_parent(n - 1 - rank, n);
  return u < 0 ? -1 : n - 1 - u;
}

// NCCL's double binary tree over the node order, chains inside nodes; each tree carries half
// the data over half the channels.
void add_tree(PhaseBuilder& b, const Blocks& blocks, int channels, double size) {
  const int per_tree = std::max(1, channels / 2);
  const double per = size / 2.0 / per_tree;
  const int n = static_cast<int>(blocks.size());
  for (int t = 0; t < 2; ++t) {
    for (int ch = 0; ch < per_tree; ++ch) {
      const int c = t * per_tree + ch;
      const auto uc = static_cast<std::size_t>(c);
      for (const auto& blk : blocks)
        for (std::size_t k = 0; k + 1 < blk.size(); ++k) {
          b.add(blk[k + 1], blk[k], per, c);  // reduce toward the head
          b.add(blk[k], blk[k + 1], per, c);  // broadcast back
        }
      for (int pos = 0; pos < n; ++pos) {
        const int up = t == 0 ? btree_parent(pos, n) : dtree_parent(pos, n);
        if (up < 0) continue;
        const auto& child = blocks[static_cast<std::size_t>(pos)];
        const auto& parent = blocks[static_cast<std::size_t>(up)];
        const int cg = child[uc % child.size()];
        const int pg = parent[uc % parent.size()];
        b.add(cg, pg, per, c);
        b.add(pg, cg, per, c);
      }
    }
  }
}

double ring_factor(CollOp op, double n) {
  return op == CollOp::AllReduce ? 2.0 * (n - 1.0) / n : (n - 1.0) / n;
}

void validate_gpus(const std::vector<int>& gpus, const ClusterSpec& c) {
  if (gpus.empty()) throw InputError("gpus", "a collective needs at least one GPU");
  std::set<int> seen;
  for (int g : gpus) {
    if (g < 0 || g >= c.num_gpus)
      throw InputError("gpus", "GPU id " + std::to_string(g) + " outside the cluster's " +
                                   std::to_string(c.num_gpus) + " GPUs");
    if (!seen.insert(g).second) throw InputError("gpus", "GPU id " + std::to_string(g) + " listed twice");
  }
  if (c.gpus_per_node < 1) throw InputError("cluster.gpus_per_node", "must be >= 1");
}

// A send/recv's endpoints and the rails it uses: with scatter-gather across nodes the message
// is split over t rails (then all-gathered over NVLink on the receiving node).
struct SendRecvRoute {
  int src = 0;
  int dst = 0;
  int rails = 1;
  CollGroupShape shape;
};

SendRecvRoute send_recv_route(const CollectiveRequest& req, int gpus_per_node, int domain_gpus) {
  if (req.gpus.size() < 2) throw InputError("gpus", "send_recv needs a source and a destination GPU");
  SendRecvRoute r;
  r.src = req.gpus.front();
  r.dst = req.gpus.back();
  const bool cross = r.src / domain_gpus != r.dst / domain_gpus;
  r.rails = cross ? std::clamp(req.scatter_gather, 1, gpus_per_node) : 1;
  r.shape = CollGroupShape{2 * r.rails, r.rails, cross ? 2 : 1, r.src % gpus_per_node == r.dst % gpus_per_node};
  return r;
}

}  // namespace

CollGroupShape shape_of(const std::vector<int>& gpus, const ClusterSpec& c) {
  const Blocks blocks = group_by_domain(gpus, std::max(1, nvlink_domain_gpus(c)));
  CollGroupShape s;
  s.nodes = static_cast<int>(blocks.size());
  for (const auto& b : blocks) s.ranks_per_node = std::max(s.ranks_per_node, static_cast<int>(b.size()));
  s.ranks = s.ranks_per_node * s.nodes;  // uniform approximation of a ragged group
  s.same_rail = s.ranks_per_node == 1;
  for (int g : gpus) s.same_rail = s.same_rail && g % c.gpus_per_node == gpus.front() % c.gpus_per_node;
  return s;
}

CollEstimate estimate_request(const CollectiveRequest& req, const ClusterSpec& c, const NcclModel& m) {
  validate_gpus(req.gpus, c);
  const int gpn = c.gpus_per_node;
  const double S = req.size_bytes;
  if (req.op == CollOp::SendRecv) {
    const SendRecvRoute route = send_recv_route(req, gpn, nvlink_domain_gpus(c));
    const int t = route.rails;
    CollEstimate e = estimate_collective(CollOp::SendRecv, S, route.shape, c, m);
    if (t > 1) {
      const CollEstimate ag = estimate_collective(CollOp::AllGather, S, CollGroupShape{t, t, 1, false}, c, m);
      e.time_s += ag.time_s;
      e.latency_s += ag.latency_s;
      e.algbw_Bps = S / std::max(1e-300, e.time_s - e.latency_s);
    }
    return e;
  }
  const CollGroupShape shape = shape_of(req.gpus, c);
  if (req.op == CollOp::AllReduce && req.algo == CollAlgo::Hierarchical && shape.nodes > 1 &&
      shape.ranks_per_node > 1) {
    const int r = shape.ranks_per_node;
    const CollGroupShape intra{r, r, 1, false};
    const CollEstimate rs = estimate_collective(CollOp::ReduceScatter, S, intra, c, m);
    const CollEstimate ar = estimate_collective(CollOp::AllReduce, S / r, CollGroupShape{shape.nodes, 1, shape.nodes, true}, c, m, CollAlgo::Ring);
    const CollEstimate ag = estimate_collective(CollOp::AllGather, S, intra, c, m);
    CollEstimate e{CollAlgo::Hierarchical, ar.proto, rs.latency_s + ar.latency_s + ag.latency_s, 0,
                   rs.time_s + ar.time_s + ag.time_s};
    e.algbw_Bps = S / std::max(1e-300, e.time_s - e.latency_s);
    return e;
  }
  return estimate_collective(req.op, S, shape, c, m, req.algo);
}

CollectivePlan lower_collective(const CollectiveRequest& req, const ClusterSpec& c, const NcclModel& m) {
  validate_gpus(req.gpus, c);
  if (!(req.size_bytes >= 0)) throw std::invalid_argument("collective size must be >= 0");
  CollectivePlan plan;
  const int gpn = c.gpus_per_node;
  const double S = req.size_bytes;

  if (req.op == CollOp::SendRecv) {
    const SendRecvRoute route = send_recv_route(req, gpn, nvlink_domain_gpus(c));
    const int src = route.src, dst = route.dst, t = route.rails;
    plan.shape = route.shape;
    plan.channels = 1;
    plan.estimate = estimate_request(req, c, m);
    const CollEstimate p2p_est = estimate_collective(CollOp::SendRecv, S, plan.shape, c, m);
    PhaseBuilder p2p(c, m, protocol_efficiency(p2p_est, CollOp::SendRecv, S, plan.shape, c, m), p2p_est.latency_s);
    std::vector<int> receivers;
    for (int k = 0; k < t; ++k) {
      const int s = (src / gpn) * gpn + (src % gpn + k) % gpn;
      const int d = (dst / gpn) * gpn + (dst % gpn + k) % gpn;
      receivers.push_back(d);
      p2p.add(s, d, S / t, 0);
    }
    plan.phases.push_back(p2p.finish());
    if (t > 1) {  // reassemble on the receiving node over NVLink
      const CollGroupShape ag{t, t, 1, false};
      const CollEstimate e = estimate_collective(CollOp::AllGather, S, ag, c, m);
      const int ch = default_channels(ag, c, m);
      PhaseBuilder gather(c, m, protocol_efficiency(e, CollOp::AllGather, S, ag, c, m), e.latency_s);
      add_ring(gather, Blocks{receivers}, ch, ring_factor(CollOp::AllGather, t) * S / ch);
      plan.phases.push_back(gather.finish());
    }
    plan.lowered_as = CollAlgo::Ring;
    return plan;
  }

  const Blocks blocks = group_by_domain(req.gpus, std::max(1, nvlink_domain_gpus(c)));
  plan.shape = shape_of(req.gpus, c);
  plan.channels = req.channels > 0 ? req.channels : default_channels(plan.shape, c, m);
  plan.estimate = estimate_collective(req.op, S, plan.shape, c, m, req.algo);
  const double n = static_cast<double>(req.gpus.size());
  const int C = plan.channels;
  if (req.gpus.size() == 1 || S == 0) return plan;  // nothing moves

  const double pf = protocol_efficiency(plan.estimate, req.op, S, plan.shape, c, m);
  if (req.op == CollOp::AllToAll) {
    PhaseBuilder b(c, m, pf, plan.estimate.latency_s, m.all_to_all_network_factor);
    std::vector<int> group = req.gpus;
    std::sort(group.begin(), group.end());
    for (int s : req.gpus)
      for (int d : req.gpus) b.add_pxn(s, d, S / n, 0, group);
    plan.phases.push_back(b.finish());
    plan.lowered_as = CollAlgo::Ring;
    return plan;
  }

  const bool hierarchical = req.op == CollOp::AllReduce && req.algo == CollAlgo::Hierarchical &&
                            plan.shape.nodes > 1 && plan.shape.ranks_per_node > 1;
  if (hierarchical) {
    const int r = plan.shape.ranks_per_node;
    const int N = plan.shape.nodes;
    for (const auto& blk : blocks)
      if (static_cast<int>(blk.size()) != r)
        throw std::invalid_argument("hierarchical all-reduce needs the same number of GPUs on every node");
    const CollGroupShape intra{r, r, 1, false};
    const CollGroupShape rail{N, 1, N, true};
    const int c_intra = default_channels(intra, c, m);
    const int c_rail = req.channels > 0 ? req.channels : default_channels(rail, c, m);
    const CollEstimate rs = estimate_collective(CollOp::ReduceScatter, S, intra, c, m);
    const CollEstimate ar = estimate_collective(CollOp::AllReduce, S / r, rail, c, m, CollAlgo::Ring);
    const CollEstimate ag = estimate_collective(CollOp::AllGather, S, intra, c, m);
    PhaseBuilder p1(c, m, protocol_efficiency(rs, CollOp::ReduceScatter, S, intra, c, m), rs.latency_s);
    for (const auto& blk : blocks) add_ring(p1, Blocks{blk}, c_intra, ring_factor(CollOp::ReduceScatter, r) * S / c_intra);
    PhaseBuilder p2(c, m, protocol_efficiency(ar, CollOp::AllReduce, S / r, rail, c, m), ar.latency_s);
    for (std::size_t k = 0; k < static_cast<std::size_t>(r); ++k) {
      Blocks rail_ring;
      for (const auto& blk : blocks) rail_ring.push_back({blk[k]});
      add_ring(p2, rail_ring, c_rail, ring_factor(CollOp::AllReduce, N) * (S / r) / c_rail);
    }
    PhaseBuilder p3(c, m, protocol_efficiency(ag, CollOp::AllGather, S, intra, c, m), ag.latency_s);
    for (const auto& blk : blocks) add_ring(p3, Blocks{blk}, c_intra, ring_factor(CollOp::AllGather, r) * S / c_intra);
    plan.phases = {p1.finish(), p2.finish(), p3.finish()};
    plan.estimate = estimate_request(req, c, m);
    plan.lowered_as = CollAlgo::Hierarchical;
    return plan;
  }

  PhaseBuilder b(c, m, pf, plan.estimate.latency_s);
  if (plan.estimate.algo == CollAlgo::Tree) {
    add_tree(b, blocks, C, S);
    plan.lowered_as = CollAlgo::Tree;
  } else {
    add_ring(b, blocks, C, ring_factor(req.op, n) * S / C);
    plan.lowered_as = CollAlgo::Ring;
  }
  plan.phases.push_back(b.finish());
  return plan;
}

CollectivePlan lower_all_to_all_v(const std::vector<PointToPoint>& sends, const ClusterSpec& c, const NcclModel& m,
                                  double latency_s) {
  std::vector<int> gpus;
  gpus.reserve(2 * sends.size());
  for (const PointToPoint& p : sends) {
    gpus.push_back(p.src_gpu);
    gpus.push_back(p.dst_gpu);
  }
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  validate_gpus(gpus, c);
  CollectivePlan plan;
  plan.shape = shape_of(gpus, c);
  plan.channels = 1;
  plan.lowered_as = CollAlgo::Ring;
  PhaseBuilder b(c, m, 1.0, latency_s, m.all_to_all_network_factor);
  b.reserve(sends.size() * static_cast<std::size_t>(b.queue_pairs()));
  for (const PointToPoint& p : sends) b.add_pxn(p.src_gpu, p.dst_gpu, p.bytes, 0, gpus);
  plan.phases.push_back(b.finish());
  return plan;
}

namespace {

// The offset that moves `from`'s GPUs onto `to`'s by whole NVLink domains, or nullopt.
std::optional<int> shift_of(const std::vector<int>& from, const std::vector<int>& to, const ClusterSpec& c) {
  if (from.empty() || to.size() != from.size()) return std::nullopt;
  const int domain = std::max(1, nvlink_domain_gpus(c));
  const int delta = to.front() - from.front();
  const int domain_shift = to.front() / domain - from.front() / domain;
  for (std::size_t i = 0; i < from.size(); ++i) {
    const int g = from[i];
    const int h = to[i];
    if (h - g != delta || h / domain - g / domain != domain_shift || h < 0 || h >= c.num_gpus) return std::nullopt;
  }
  return delta;
}

// `plan` with every flow's endpoints moved by `delta` and its bytes times `k`, in one copy. The
// shift is monotonic, so the flows stay sorted and merged exactly as finish() left them.
CollectivePlan moved_copy(const CollectivePlan& plan, int delta, double k) {
  CollectivePlan out = plan;
  for (CollPhase& ph : out.phases)
    for (FlowStep& f : ph.flows) {
      f.src_gpu += delta;
      f.dst_gpu += delta;
      f.wire_bytes *= k;
    }
  return out;
}

}  // namespace

std::optional<CollectivePlan> shifted_plan(const CollectivePlan& from_plan, const CollectiveRequest& from,
                                           const CollectiveRequest& to, const ClusterSpec& c) {
  if (from.op == CollOp::SendRecv || to.op != from.op || to.algo != from.algo ||
      to.size_bytes != from.size_bytes || to.channels != from.channels)
    return std::nullopt;
  const std::optional<int> delta = shift_of(from.gpus, to.gpus, c);
  if (!delta) return std::nullopt;
  return moved_copy(from_plan, *delta, 1.0);
}

namespace {

// Payload of one flow per byte of the request, over the protocol factor: what differs between
// two sizes of one lowering (add_ring, add_tree and the all-to-all above).
double wire_per_byte(CollOp op, CollAlgo lowered_as, double n, double pf) {
  const double share = op == CollOp::AllToAll ? 1.0 / n : lowered_as == CollAlgo::Tree ? 1.0 : ring_factor(op, n);
  return share / pf;
}

bool same_ring(CollOp a, CollOp b) {
  const auto ring_only = [](CollOp op) { return op == CollOp::ReduceScatter || op == CollOp::AllGather; };
  return a == b || (ring_only(a) && ring_only(b));
}

}  // namespace

std::optional<double> size_scale(const CollectivePlan& from_plan, const CollectiveRequest& from,
                                 const CollectiveRequest& to, const ClusterSpec& c, const NcclModel& m) {
  if (from.op == CollOp::SendRecv || !same_ring(from.op, to.op) || to.algo != from.algo ||
      to.channels != from.channels || from_plan.lowered_as == CollAlgo::Hierarchical || from.gpus.size() < 2 ||
      !(from.size_bytes > 0) || !(to.size_bytes > 0) || to.gpus != from.gpus)
    return std::nullopt;
  const CollEstimate e = estimate_collective(to.op, to.size_bytes, from_plan.shape, c, m, to.algo);
  const CollEstimate& f = from_plan.estimate;
  if (e.algo != f.algo || e.proto != f.proto || e.latency_s != f.latency_s) return std::nullopt;
  const double n = static_cast<double>(from.gpus.size());
  const double pf_from = protocol_efficiency(f, from.op, from.size_bytes, from_plan.shape, c, m);
  const double pf_to = protocol_efficiency(e, to.op, to.size_bytes, from_plan.shape, c, m);
  return (to.size_bytes * wire_per_byte(to.op, from_plan.lowered_as, n, pf_to)) /
         (from.size_bytes * wire_per_byte(from.op, from_plan.lowered_as, n, pf_from));
}

std::optional<CollectivePlan> resized_plan(const CollectivePlan& from_plan, const CollectiveRequest& from,
                                           const CollectiveRequest& to, const ClusterSpec& c, const NcclModel& m) {
  if (from.op == CollOp::SendRecv) return std::nullopt;
  const std::optional<int> delta = shift_of(from.gpus, to.gpus, c);
  if (!delta) return std::nullopt;
  CollectiveRequest same_gpus = to;  // the size change, judged on `from`'s own GPUs
  same_gpus.gpus = from.gpus;
  const std::optional<double> k =
      to.op == from.op && to.size_bytes == from.size_bytes && to.algo == from.algo && to.channels == from.channels
          ? std::optional<double>(1.0)
          : size_scale(from_plan, from, same_gpus, c, m);
  if (!k) return std::nullopt;
  CollectivePlan out = moved_copy(from_plan, *delta, *k);
  if (*k != 1.0 || to.op != from.op) out.estimate = estimate_collective(to.op, to.size_bytes, from_plan.shape, c, m, to.algo);
  return out;
}

}  // namespace megasim
