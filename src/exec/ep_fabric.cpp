// MoE dispatch and combine as flows on the fabric (see ep_fabric.hpp for the model).
#include "ep_fabric.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

#include "cost_context.hpp"
#include "megasim/coll/runner.hpp"
#include "megasim/core/rng.hpp"
#include "megasim/model/params.hpp"
#include "megasim/net/flow_network.hpp"
#include "megasim/net/router.hpp"
#include "megasim/plan/placement.hpp"
#include "megasim/sim/engine.hpp"

namespace megasim {

namespace {

// Large enough that picosecond rounding and the phase latency are negligible against it.
constexpr double kReferenceBytes = 64.0 * 1024 * 1024;

// The EP groups of pipeline stage 0 in Megatron-Core's expert grid: inside a stage the GPUs in
// rank order are indexed tp + TP x (cp + CP x dp) (either placement order), and the expert grid
// reads the same index as etp + ETP x (ep + EP x edp).
std::vector<std::vector<int>> stage_ep_groups(const JobSpec& job) {
  const Placement placement(job.parallel, job.cluster);
  const std::int64_t tp = placement.tp(), cp = placement.cp();
  const std::int64_t per_stage = tp * cp * placement.dp();
  const std::int64_t etp = expert_tensor_parallel_size(job);
  const std::int64_t ep = std::max(1, job.parallel.expert_model_parallel_size);
  const auto gpu_at = [&](std::int64_t index) {
    return placement.gpu_of({static_cast<int>(index % tp), static_cast<int>((index / tp) % cp), index / (tp * cp), 0});
  };
  std::vector<std::vector<int>> groups;
  for (std::int64_t edp = 0; edp < per_stage / (etp * ep); ++edp)
    for (std::int64_t e = 0; e < etp; ++e) {
      std::vector<int> g;
      for (std::int64_t r = 0; r < ep; ++r) g.push_back(gpu_at(e + etp * (r + ep * edp)));
      groups.push_back(std::move(g));
    }
  return groups;
}

}  // namespace

EpExchangeOnFabric::EpExchangeOnFabric(const JobSpec& job, const Fabric& fabric, const NcclModel& nccl)
    : job_(job), fabric_(fabric), nccl_(nccl), load_(expert_load(job)) {
  groups_ = stage_ep_groups(job);
  stage_groups_ = groups_.size();
  const std::size_t ep = groups_.empty() ? 0 : groups_.front().size();
  const std::size_t per_group = ep * ep;
  const std::size_t keep = kMaxSends / std::max<std::size_t>(1, per_group);
  if (groups_.size() > keep) {
    if (keep == 0) {
      spdlog::debug("ep on fabric: an EP group of {} ranks ({} sends) is over the budget of {}: closed form", ep,
                    per_group, kMaxSends);
    } else {
      spdlog::debug("ep on fabric: simulating {} of the stage's {} EP groups ({} sends each)", keep, groups_.size(),
                    per_group);
    }
    groups_.resize(keep);
  }
  // Each group's ranks take the routing's per-rank loads in a seeded order: which rank is hot
  // differs between groups, as it does between micro-batches.
  std::vector<double> profile = load_.rank_load_profile;
  if (profile.size() != ep) profile.assign(ep, 1.0);
  const double total = std::accumulate(profile.begin(), profile.end(), 0.0);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    std::vector<std::size_t> order(ep);
    std::iota(order.begin(), order.end(), std::size_t{0});
    Rng rng(stable_hash({job.seed, static_cast<std::uint64_t>(g), 0xe9fau}));
    for (std::size_t i = ep; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    std::vector<double> shares(ep);
    for (std::size_t r = 0; r < ep; ++r) shares[r] = profile[order[r]] / total;
    shares_.push_back(std::move(shares));
  }
  if (!groups_.empty()) {
    latency_s_ = estimate_collective(CollOp::AllToAll, kReferenceBytes, shape_of(groups_.front(), job.cluster),
                                     job.cluster, nccl)
                     .latency_s;
  }
}

std::vector<CollectivePlan> EpExchangeOnFabric::plans(OpKind kind, double bytes) const {
  std::vector<CollectivePlan> out;
  const bool combine = kind == OpKind::EpCombine;
  const SystemSpec& sys = job_.system;
  if (sys.moe_token_dispatcher_type == MoeDispatcher::AllGather) {
    for (const auto& g : groups_) {
      CollectiveRequest req;
      req.op = combine ? CollOp::ReduceScatter : CollOp::AllGather;
      req.size_bytes = bytes;
      req.gpus = g;
      out.push_back(lower_collective(req, job_.cluster, nccl_));
    }
    return out;
  }
  // Every source routes the same copies: `bytes` is what the busiest rank receives.
  const double busiest = load_.rank_load_profile.empty() ? 1.0 : load_.rank_load_profile.front();
  const double per_source = bytes / busiest;
  const int domain = std::max(1, nvlink_domain_gpus(job_.cluster));
  const bool flex = sys.moe_token_dispatcher_type == MoeDispatcher::Flex;
  const double k = static_cast<double>(std::max<std::int64_t>(1, job_.model.moe.experts_per_token));
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& g = groups_[gi];
    const auto& w = shares_[gi];
    const int ep = static_cast<int>(g.size());
    std::vector<PointToPoint> sends;
    const auto send = [&](int src, int dst, double b) {
      if (combine) std::swap(src, dst);
      sends.push_back({src, dst, b});
    };
    if (!flex) {
      for (int s = 0; s < ep; ++s)
        for (int d = 0; d < ep; ++d) send(g[s], g[d], per_source * w[d]);
    } else {
      const CollGroupShape shape = shape_of(g, job_.cluster);
      const double rank_dedup = distinct_targets_per_token(job_.model.moe, ep) / k;
      const double node_dedup = shape.nodes > 1 ? distinct_targets_per_token(job_.model.moe, shape.nodes) / k : 1.0;
      // Per destination node: the group's ranks there and their summed share.
      std::map<int, std::vector<int>> on_node;
      for (int d = 0; d < ep; ++d) on_node[g[d] / domain].push_back(d);
      for (int s = 0; s < ep; ++s) {
        const int home = g[s] / domain;
        for (const auto& [node, members] : on_node) {
          if (node == home) {  // NVLink, one copy per distinct rank
            for (int d : members) send(g[s], g[d], per_source * w[d] * rank_dedup);
            continue;
          }
          int peer = node * domain + g[s] % domain;  // the rail peer on that node
          if (peer >= job_.cluster.num_gpus) peer = g[members.front()];  // a partial last domain
          double node_share = 0;
          for (int d : members) node_share += w[d];
          send(g[s], peer, per_source * node_share * node_dedup);           // RDMA
          for (int d : members) send(peer, g[d], per_source * w[d] * rank_dedup);  // NVLink fan-out
        }
      }
    }
    out.push_back(lower_all_to_all_v(sends, job_.cluster, nccl_, 0.0));
  }
  return out;
}

EpExchangeOnFabric::Simulated EpExchangeOnFabric::simulate(const std::vector<CollectivePlan>& plans) const {
  Engine engine;
  FlowNetwork net(engine, fabric_.link_capacity_Bps());
  const Router router(fabric_, job_.cluster.network.routing, job_.cluster.network.ecmp_seed);
  CollectiveRunner runner(engine, net, router, fabric_, nccl_);
  double done = 0;
  for (const CollectivePlan& p : plans)
    runner.start(p, "ep exchange", [&] { done = std::max(done, engine.now().seconds()); });
  engine.run();
  engine.require_all_finished();
  spdlog::debug("ep on fabric: {} flows, {} max-min solves", runner.flows_simulated(), net.solver().solves());
  double latency = 0;
  for (const CollectivePlan& plan : plans)
    for (const CollPhase& ph : plan.phases) latency = std::max(latency, ph.latency_s);
  Simulated out;
  // allgather's rings carry their own phase latency; seconds() adds the latency back.
  out.s_per_byte = std::max(0.0, done - latency) / kReferenceBytes;
  for (std::size_t l = 0; l < fabric_.num_links(); ++l) {
    const double b = net.link_bytes(static_cast<LinkId>(l));
    if (b > 0) out.link_bytes.emplace_back(static_cast<LinkId>(l), b);
  }
  return out;
}

const EpExchangeOnFabric::Simulated& EpExchangeOnFabric::simulated(OpKind kind) const {
  auto it = simulated_.find(kind);
  if (it == simulated_.end()) it = simulated_.emplace(kind, simulate(plans(kind, kReferenceBytes))).first;
  return it->second;
}

double EpExchangeOnFabric::seconds(OpKind kind, double bytes) const {
  if (groups_.empty() || groups_.front().size() <= 1 || !(bytes > 0)) return 0.0;
  const double s_per_byte = simulated(kind).s_per_byte;
  const bool ring = job_.system.moe_token_dispatcher_type == MoeDispatcher::AllGather;
  const double latency = ring ? estimate_collective(kind == OpKind::EpCombine ? CollOp::ReduceScatter : CollOp::AllGather,
                                                    bytes, shape_of(groups_.front(), job_.cluster), job_.cluster, nccl_)
                                    .latency_s
                              : latency_s_;
  return latency + bytes * s_per_byte;
}

std::vector<std::pair<LinkId, double>> EpExchangeOnFabric::step_link_bytes(std::int64_t micro_batches) const {
  std::map<LinkId, double> total;
  if (groups_.empty() || groups_.front().size() <= 1) return {};
  const int vpp = std::max(1, job_.parallel.virtual_pipeline_model_parallel_size);
  for (int v = 0; v < vpp; ++v) {
    const std::int64_t first = first_layer_in_chunk(job_, 0, v);
    for (std::int64_t layer = first; layer < first + layers_in_chunk(job_, 0, v); ++layer) {
      if (!is_moe_layer(job_.model, layer)) continue;
      const LayerKind kind = layer_kind(job_.model, layer);
      for (const auto& ops : {layer_forward_ops(job_, kind), layer_backward_ops(job_, kind), layer_recompute_ops(job_, kind)})
        for (const LayerOp& op : ops) {
          if (op.kind != OpKind::EpDispatch && op.kind != OpKind::EpCombine) continue;
          const double scale = static_cast<double>(micro_batches) * op.comm_bytes / kReferenceBytes;
          for (const auto& [link, b] : simulated(op.kind).link_bytes) total[link] += b * scale;
        }
    }
  }
  return {total.begin(), total.end()};
}

}  // namespace megasim
