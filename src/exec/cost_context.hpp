#pragma once
// What every step-cost pass reads: the catalog data loaded once per GPU type (StepCostData)
// and, per job, the communicator shapes of its TP and CP groups (Context).
#include <cstdint>

#include "host_overheads.hpp"
#include "megasim/coll/cost_model.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/specs.hpp"
#include "megasim/hw/hardware_profile.hpp"
#include "megasim/model/layer_ops.hpp"
#include "megasim/model/moe_routing.hpp"  // distinct_targets_per_token, reach_probability

namespace megasim {

class EpExchangeOnFabric;

// Declared in megasim/exec/step_costs.hpp; immutable once loaded.
struct StepCostData {
  HardwareProfile hw;
  NcclModel nccl;
  HostOverheads host;
  NcclModel nccl_without_all_to_all_derating;  // without_all_to_all_derating(nccl)
};

// The model the MoE dispatch and combine are priced with: NCCL's for the alltoall and allgather
// dispatchers; for flex (DeepEP / HybridEP: the GPU drives the NICs, not NCCL's all-to-all) the
// transports' collective rate.
const NcclModel& ep_exchange_model(const JobSpec& job, const StepCostData& data);

// The shape of the communicator formed by `ranks` GPUs placed `stride` GPUs apart.
CollGroupShape group_shape(std::int64_t ranks, std::int64_t stride, int domain_gpus);

// Pipeline p2p: with sequence parallelism (or Megatron's scatter-gather optimisation) each TP
// rank sends only its 1/t slice of the b x s x h activation, over its own rail's NIC, to the
// rank `pipeline_peer_stride` GPUs away.
double pipeline_p2p_bytes(const JobSpec& job);
std::int64_t pipeline_peer_stride(const JobSpec& job);

struct Context {
  const JobSpec& job;
  const HardwareProfile& hw;
  const NcclModel& nccl;
  CollGroupShape tp_group;
  CollGroupShape cp_group;
  double overlap_slowdown;  // fraction a GEMM slows while a NCCL kernel shares its SMs
  // The expert-parallel group: EP ranks ETP apart (Megatron-Core's expert grid, ETP innermost).
  CollGroupShape ep_group;
  // The whole expert grid's ETP x EP group (Megatron-Core's tp_ep group): the all-to-all
  // dispatcher gathers its token counts over it.
  CollGroupShape expert_grid_group{};
  // The expert tensor-parallel group (ETP adjacent ranks): the experts' own TP collectives.
  CollGroupShape etp_group{};
  // The same fraction beside the MoE dispatch and combine: NCCL's channels for alltoall and
  // allgather, the flex dispatcher's own SMs for DeepEP / HybridEP (ep_overlap_slowdown()).
  double ep_overlap_slowdown = 0;
  // The event engine's pricing of the MoE dispatch and combine as flows on the fabric
  // (ep_fabric.hpp); null: NCCL's closed-form all-to-all (the analytic engine).
  const EpExchangeOnFabric* ep_fabric = nullptr;
  // ep_exchange_model(): what the closed form prices the dispatch and combine with.
  const NcclModel* ep_model = nullptr;
};

Context make_context(const JobSpec& job, const StepCostData& data);

// Host time per kernel launch in a forward (recompute included) or backward pass of an MoE or a
// dense layer (the embedding and LM head count as dense): the hardware profile's eager-PyTorch
// figure times the framework's factor for its own layer code (system.host_launch_factor_*).
enum class PassDirection { Forward, Backward };
double host_s_per_launch(const Context& c, bool moe_layer, PassDirection direction);


// The group a collective op of the layer runs over: TP (or the experts' ETP), CP, EP, or the
// expert grid's ETP x EP. A group of one rank makes no call (Megatron-Core bypasses it).
const CollGroupShape& collective_group(const Context& c, const LayerOp& op);

// Serial time of one collective of the layer (0 when its group has one rank).
double comm_op_time_s(const Context& c, const LayerOp& op, double bytes);

}  // namespace megasim
