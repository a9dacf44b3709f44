#pragma once
// MoE token exchanges (dispatch and combine) as flows on the job's fabric: the event engine's
// pricing of the EP traffic (issue 26, deliver 4), where the analytic engine uses NCCL's
// closed-form all-to-all of the most-loaded rank's bytes (cost_context.cpp).
//
// What runs. Every EP group of pipeline stage 0 exchanges at once (the expert grid read off the
// stage's rank order, as Megatron-Core's default tp-cp-ep-dp-pp order lays it out): the groups of a stage run
// the same layer of the same micro-batch in lock-step, so they meet on the same leaf and spine
// links (other stages run other layers, out of phase, and are left out). Per dispatcher:
//  * alltoall: NCCL's all-to-all-v. Source s sends destination d its routed copies times d's
//    share of the group's load (ExpertLoad::rank_load_profile, dealt to the ranks by a seeded
//    permutation per group), so the busiest rank's NIC or NVLink ingress is the hot spot.
//  * flex (DeepEP / HybridEP): across NVLink domains one RDMA copy per token and remote domain
//    it reaches (probability 1 - C(E - E_n, k) / C(E, k) for the E_n experts there, times the
//    domain's load against a uniform one, capped by group-limited routing as the analytic model
//    is), sent to the member of the same local index there (DeepEP's rail peer) and fanned out
//    over NVLink to the ranks that need it, the two stages pipelined (run at once); inside the
//    source's domain one NVLink copy per distinct rank.
//  * allgather: Megatron's all-gather of the group's tokens (reduce-scatter back), lowered as
//    NCCL rings on every group.
// The combine is the dispatch reversed. Flows are routed by the cluster's policy (ECMP hash
// collisions included) and share links max-min fairly (net/), with the same transport fractions
// as every simulated collective (coll/lowering.hpp).
//
// Cost. One simulation per op kind; with the flows fixed, max-min completion time is linear in
// their bytes, so other sizes scale it (plus NCCL's latency for that size). Flows that collide
// finish at distinct times and each completion re-solves the exchange's flows; rail-aligned
// exchanges (PXN, DeepEP's rail peers) barely collide: a step with one EP 256 group (65,000
// sends) takes 0.18-0.97 s on the 2-core reference machine, with 20 EP 64 groups 1.2 s
// (docs/moe.md). Hence a
// budget of kMaxSends sends: a stage with more simulates only its first groups (the neighbours
// that share switches), leaving out their contention with the rest; a single group larger than
// the budget is not simulated and the closed form prices it (priced_on_fabric() false). Both
// are logged at debug level.
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "megasim/coll/lowering.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/specs.hpp"
#include "megasim/model/layer_ops.hpp"
#include "megasim/model/moe_routing.hpp"
#include "megasim/net/fabric.hpp"
#include "megasim/net/link.hpp"

namespace megasim {

// Not thread-safe (it caches its simulations): one per simulated step.
class EpExchangeOnFabric {
 public:
  static constexpr std::size_t kMaxSends = 81'920;

  // `fabric` and `nccl` must outlive this object.
  EpExchangeOnFabric(const JobSpec& job, const Fabric& fabric, const NcclModel& nccl);

  // False when the EP group is too large to simulate (see Cost above): use the closed form.
  bool priced_on_fabric() const { return !groups_.empty(); }

  // Seconds of one dispatch (EpDispatch) or combine (EpCombine) whose busiest rank receives
  // `bytes` (the op's comm_bytes convention, layer_ops.hpp; allgather: the gathered bytes).
  double seconds(OpKind kind, double bytes) const;

  // The EP groups simulated (GPU ids, EP rank order) and how many the stage has.
  const std::vector<std::vector<int>>& groups() const { return groups_; }
  std::size_t stage_groups() const { return stage_groups_; }

  // The flows of one exchange of every simulated group at `bytes` (exposed for tests).
  std::vector<CollectivePlan> plans(OpKind kind, double bytes) const;

  // Wire bytes each link carries in one step from the simulated groups' exchanges: every EP op
  // of every MoE layer of pipeline stage 0 (forward, backward, recompute), every micro-batch.
  // What the step report adds to the simulated flows' link loads (busiest_links).
  std::vector<std::pair<LinkId, double>> step_link_bytes(std::int64_t micro_batches) const;

 private:
  struct Simulated {
    double s_per_byte = 0;
    std::vector<std::pair<LinkId, double>> link_bytes;  // at kReferenceBytes
  };
  const Simulated& simulated(OpKind kind) const;
  Simulated simulate(const std::vector<CollectivePlan>& plans) const;

  const JobSpec& job_;
  const Fabric& fabric_;
  const NcclModel& nccl_;
  ExpertLoad load_;
  std::vector<std::vector<int>> groups_;
  std::vector<std::vector<double>> shares_;  // [group][EP rank]: share of the group's load, sums to 1
  std::size_t stage_groups_ = 0;
  double busiest_ = 1;        // the busiest rank's load, a multiple of the mean
  CollGroupShape shape_;      // of one EP group: its NVLink domains (the send budget), NCCL's latency
  mutable std::map<OpKind, Simulated> simulated_;  // one exchange at kReferenceBytes, per kind
};

}  // namespace megasim
