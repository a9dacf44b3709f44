// MoE dispatch and combine as flows on the fabric (see ep_fabric.hpp for the model).
#include "ep_fabric.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>

#include "cost_context.hpp"
#include "megasim/coll/runner.hpp"
#include "megasim/core/rng.hpp"
#include "megasim/model/params.hpp"
#include "megasim/net/flow_network.hpp"
#include "megasim/net/router.hpp"
#include "megasim/plan/expert_grid.hpp"
#include "megasim/plan/placement.hpp"
#include "megasim/sim/engine.hpp"

namespace megasim {

namespace {

// Large enough that picosecond rounding and the phase latency are negligible against it.
constexpr double kReferenceBytes = 64.0 * 1024 * 1024;

// Sends one exchange of one group makes: NCCL's all-to-all one per pair; DeepEP's flex, per
// source, one per rank (NVLink copies and fan-outs) and one RDMA copy per remote domain; the
// allgather rings one per rank and channel (a bound of NCCL's 32 channels).
std::size_t sends_per_group(MoeDispatcher d, std::size_t ep, std::size_t domains) {
  switch (d) {
    case MoeDispatcher::AllGather: return 32 * ep;
    case MoeDispatcher::Flex: return ep * (ep + domains - 1);
    case MoeDispatcher::AllToAll: break;
  }
  return ep * ep;
}

// DeepEP's sends for one group (`g`, shares `w`, `per_source` bytes of copies a rank): by
// NVLink domain, a token reaches domain n with probability P_n (its experts there: ranks x
// experts per rank), scaled by the domain's load against a uniform one; group-limited routing
// caps the domains a token reaches (the analytic model's cap, as a factor on every domain).
void add_flex_sends(const JobSpec& job, const std::vector<int>& g, const std::vector<double>& w, double per_source,
                    const std::function<void(int, int, double)>& send) {
  const int domain = std::max(1, nvlink_domain_gpus(job.cluster));
  const int gpn = std::max(1, job.cluster.gpus_per_node);
  const MoeSpec& moe = job.model.moe;
  const double k = static_cast<double>(std::max<std::int64_t>(1, moe.experts_per_token));
  const double experts = static_cast<double>(moe.num_experts);
  const int ep = static_cast<int>(g.size());
  std::map<int, std::vector<int>> by_domain;
  for (int d = 0; d < ep; ++d) by_domain[g[d] / domain].push_back(d);
  const double per_rank_experts = experts / ep;
  const auto reach = [&](const std::vector<int>& members) {
    return reach_probability(experts, per_rank_experts * static_cast<double>(members.size()), moe.experts_per_token);
  };
  double reached = 0;
  for (const auto& [dom, members] : by_domain) reached += reach(members);
  const double cap = by_domain.size() > 1
                         ? std::min(1.0, distinct_targets_per_token(moe, static_cast<int>(by_domain.size())) / reached)
                         : 1.0;
  const double rank_dedup = distinct_targets_per_token(moe, ep) / k;
  for (int s = 0; s < ep; ++s) {
    const int home = g[s] / domain;
    for (const auto& [dom, members] : by_domain) {
      if (dom == home) {  // NVLink, one copy per distinct rank
        for (int d : members) send(g[s], g[d], per_source * w[d] * rank_dedup);
        continue;
      }
      // The RDMA copy goes to the member of the same local index (DeepEP's rail peer), else to
      // one picked by the source's rank: never to a GPU outside the group.
      int peer = g[members[static_cast<std::size_t>(s) % members.size()]];
      for (int d : members)
        if (g[d] % gpn == g[s] % gpn) peer = g[d];
      double load = 0;
      for (int d : members) load += w[d];
      const double uniform = static_cast<double>(members.size()) / ep;
      send(g[s], peer, per_source / k * reach(members) * cap * load / uniform);  // RDMA
      for (int d : members) send(peer, g[d], per_source * w[d] * rank_dedup);    // NVLink fan-out
    }
  }
}

}  // namespace

EpExchangeOnFabric::EpExchangeOnFabric(const JobSpec& job, const Fabric& fabric, const NcclModel& nccl)
    : job_(job), fabric_(fabric), nccl_(nccl), load_(expert_load(job)) {
  groups_ = expert_parallel_groups(Placement(job.parallel, job.cluster), job, 0);
  stage_groups_ = groups_.size();
  const std::size_t ep = groups_.empty() ? 0 : groups_.front().size();
  if (!groups_.empty()) shape_ = shape_of(groups_.front(), job.cluster);  // nodes: NVLink domains
  const std::size_t per_group = sends_per_group(job.system.moe_token_dispatcher_type, ep,
                                                static_cast<std::size_t>(std::max(1, shape_.nodes)));
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
  // Each group's ranks take the routing's per-rank loads (multiples of the mean; below 1 on
  // average when the capacity factor drops copies, above when padding fills experts) in a
  // seeded order: which rank is hot differs between groups, as it does between micro-batches.
  std::vector<double> profile = load_.rank_load_profile;
  if (profile.size() != ep) profile.assign(ep, 1.0);
  busiest_ = profile.empty() ? 1.0 : *std::max_element(profile.begin(), profile.end());
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    std::vector<std::size_t> order(ep);
    std::iota(order.begin(), order.end(), std::size_t{0});
    Rng rng(stable_hash({job.seed, static_cast<std::uint64_t>(g), 0xe9fau}));
    for (std::size_t i = ep; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    std::vector<double> shares(ep);
    for (std::size_t r = 0; r < ep; ++r) shares[r] = profile[order[r]] / static_cast<double>(ep);
    shares_.push_back(std::move(shares));
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
  // A rank routes `per_source` bytes of copies before any drop, share w[d] of them to rank d
  // (the load profile over EP), so the busiest rank receives exactly `bytes`.
  const double per_source = bytes / busiest_;
  const bool flex = sys.moe_token_dispatcher_type == MoeDispatcher::Flex;
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const auto& g = groups_[gi];
    const auto& w = shares_[gi];
    const int ep = static_cast<int>(g.size());
    std::vector<PointToPoint> sends;
    const auto send = [&](int src, int dst, double b) {
      if (combine) std::swap(src, dst);
      sends.push_back({src, dst, b});
    };
    if (flex) {
      add_flex_sends(job_, g, w, per_source, send);
    } else {
      for (int s = 0; s < ep; ++s)
        for (int d = 0; d < ep; ++d) send(g[s], g[d], per_source * w[d]);
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
  // NCCL's latency for this size (its protocol choice included), as the closed form takes it.
  const CollOp op = job_.system.moe_token_dispatcher_type != MoeDispatcher::AllGather ? CollOp::AllToAll
                    : kind == OpKind::EpCombine                                        ? CollOp::ReduceScatter
                                                                                       : CollOp::AllGather;
  return estimate_collective(op, bytes, shape_, job_.cluster, nccl_).latency_s + bytes * s_per_byte;
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
          if (!is_ep_exchange(op.kind)) continue;
          const double scale = static_cast<double>(micro_batches) * op.comm_bytes / kReferenceBytes;
          for (const auto& [link, b] : simulated(op.kind).link_bytes) total[link] += b * scale;
        }
    }
  }
  return {total.begin(), total.end()};
}

}  // namespace megasim
