#include "cost_context.hpp"

#include <algorithm>
#include <memory>
#include <numeric>
#include <utility>
#include <string>

#include "megasim/catalogs/hardware_profile_reader.hpp"
#include "megasim/catalogs/nccl_model_reader.hpp"
#include "megasim/core/error.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/exec/step_costs.hpp"
#include "megasim/hw/kernel_time.hpp"
#include "ep_fabric.hpp"

namespace megasim {

namespace {

CollOp comm_op_of(OpKind kind) {
  switch (kind) {
    case OpKind::TpAllGather: return CollOp::AllGather;
    case OpKind::TpReduceScatter: return CollOp::ReduceScatter;
    case OpKind::TpAllReduce: return CollOp::AllReduce;
    default: return CollOp::SendRecv;
  }
}

// The hardware profile of the job's GPU (catalog hw/<cluster.gpu.profile>).
HardwareProfile load_job_hardware_profile(const JobSpec& job, const Catalog& catalog) {
  return load_hardware_profile(catalog, job.cluster.gpu.profile, "cluster.gpu.profile");
}

}  // namespace

double host_s_per_launch(const Context& c, bool moe_layer, PassDirection direction) {
  const SystemSpec& s = c.job.system;
  const bool fwd = direction == PassDirection::Forward;
  const double factor = moe_layer ? (fwd ? s.host_launch_factor_moe_forward : s.host_launch_factor_moe_backward)
                                  : (fwd ? s.host_launch_factor_dense_forward : s.host_launch_factor_dense_backward);
  return c.hw.host_dispatch_s * factor;
}

double pipeline_p2p_bytes(const JobSpec& job) {
  const auto& par = job.parallel;
  const double boundary_bytes = static_cast<double>(job.training.micro_batch_size) *
                                static_cast<double>(job.training.seq_length / par.context_parallel_size) *
                                static_cast<double>(job.model.hidden_size) *
                                activation_bytes_per_element(job.training.precision);
  return boundary_bytes / par.tensor_model_parallel_size;
}

std::int64_t pipeline_peer_stride(const JobSpec& job) {
  const auto& par = job.parallel;
  return static_cast<std::int64_t>(par.tensor_model_parallel_size) * par.context_parallel_size *
         (par.placement == PlacementOrder::DpFirst ? par.data_parallel_size : 1);
}

CollGroupShape group_shape(std::int64_t ranks, std::int64_t stride, int domain_gpus) {
  CollGroupShape g;
  g.ranks = static_cast<int>(ranks);
  const std::int64_t per_node =
      stride >= domain_gpus ? 1 : std::min<std::int64_t>(ranks, domain_gpus / stride);
  // A group that does not fill whole nodes (e.g. 2,564 ranks, 8 per node) is ragged; the
  // NCCL shape model wants equal counts, so use the largest count that tiles the group.
  g.ranks_per_node = static_cast<int>(std::max<std::int64_t>(1, std::gcd(ranks, std::max<std::int64_t>(1, per_node))));
  g.nodes = static_cast<int>((ranks + g.ranks_per_node - 1) / g.ranks_per_node);
  g.same_rail = g.ranks_per_node == 1;
  return g;
}

namespace {

// DeepEP's and HybridEP's kernels hold a fixed number of SMs for the whole dispatch or combine
// (Megatron-Core transformer_config.py: moe_deepep_num_sms, "historical default 20"; Megatron-
// Bridge's dispatcher guide: HybridEP "default 16"); compute beside them runs on the rest, as it
// does beside NCCL's channels. The Megatron-Core MoE report (arXiv 2603.07685, section 4) puts
// DeepEP's 20 SMs at "roughly 20% GEMM-efficiency overhead": 132 / (132 - 20) = 1.18 on H100.
double ep_overlap_slowdown(const JobSpec& job, const HardwareProfile& hw, double nccl_slowdown) {
  const SystemSpec& s = job.system;
  if (s.moe_token_dispatcher_type != MoeDispatcher::Flex) return nccl_slowdown;
  const int sms = std::max(1, hw.gemm.sm_count);
  const int held = s.moe_flex_dispatcher_num_sms.value_or(s.moe_flex_dispatcher_backend == FlexBackend::DeepEp ? 20 : 16);
  if (held >= sms) {
    throw InputError("system.moe_flex_dispatcher_num_sms",
                     "must leave SMs for compute: below the GPU's " + std::to_string(sms) + " SMs");
  }
  return static_cast<double>(held) / static_cast<double>(sms - held);
}

}  // namespace

Context make_context(const JobSpec& job, const StepCostData& data) {
  const int domain = nvlink_domain_gpus(job.cluster);
  const double nccl_slowdown = overlap_compute_slowdown(data.hw) - 1.0;
  Context c{job, data.hw, data.nccl, group_shape(job.parallel.tensor_model_parallel_size, 1, domain),
            group_shape(job.parallel.context_parallel_size, job.parallel.tensor_model_parallel_size, domain),
            nccl_slowdown,
            group_shape(job.parallel.expert_model_parallel_size, expert_tensor_parallel_size(job), domain)};
  c.expert_grid_group =
      group_shape(job.parallel.expert_model_parallel_size * expert_tensor_parallel_size(job), 1, domain);
  c.etp_group = group_shape(expert_tensor_parallel_size(job), 1, domain);
  c.ep_overlap_slowdown = ep_overlap_slowdown(job, data.hw, nccl_slowdown);
  c.ep_model = &ep_exchange_model(job, data);
  return c;
}

const NcclModel& ep_exchange_model(const JobSpec& job, const StepCostData& data) {
  return job.system.moe_token_dispatcher_type == MoeDispatcher::Flex ? data.nccl_without_all_to_all_derating
                                                                     : data.nccl;
}

namespace {

// One MoE dispatch or combine over the EP group. alltoall: NCCL's all-to-all-v of the routed
// copies (the op's bytes are the most-loaded rank's, which everyone waits for); allgather: an
// all-gather of the group's tokens and a reduce-scatter back; flex (DeepEP / HybridEP) sends a
// token once per destination it needs, not once per expert: across nodes one RDMA copy per
// distinct remote node, fanned out over NVLink there; inside one node one NVLink copy per
// distinct EP rank (DeepEP get_dispatch_layout's is_token_in_rank; the combine reduces a token's
// experts on their rank first and returns one copy). Priced as the all-to-all of those bytes.
double ep_comm_time_s(const Context& c, const LayerOp& op, double bytes) {
  const JobSpec& job = c.job;
  if (c.ep_fabric != nullptr && c.ep_fabric->priced_on_fabric()) return c.ep_fabric->seconds(op.kind, bytes);
  switch (job.system.moe_token_dispatcher_type) {
    case MoeDispatcher::AllGather:
      return collective_time_s(op.kind == OpKind::EpDispatch ? CollOp::AllGather : CollOp::ReduceScatter, bytes,
                               c.ep_group, job.cluster, c.nccl);
    case MoeDispatcher::Flex: {
      const double k = static_cast<double>(job.model.moe.experts_per_token);
      const int targets = c.ep_group.nodes > 1 ? c.ep_group.nodes : c.ep_group.ranks;
      const double dedup = distinct_targets_per_token(job.model.moe, targets) / k;
      return collective_time_s(CollOp::AllToAll, bytes * dedup, c.ep_group, job.cluster, *c.ep_model);
    }
    case MoeDispatcher::AllToAll: break;
  }
  return collective_time_s(CollOp::AllToAll, bytes, c.ep_group, job.cluster, c.nccl);
}

}  // namespace


const CollGroupShape& collective_group(const Context& c, const LayerOp& op) {
  if (is_ep_exchange(op.kind)) return c.ep_group;
  switch (op.kind) {
    case OpKind::EpAllGather: return c.expert_grid_group;
    case OpKind::CpExchange: return c.cp_group;
    default: return op.expert_tensor_parallel ? c.etp_group : c.tp_group;
  }
}

double comm_op_time_s(const Context& c, const LayerOp& op, double bytes) {
  const CollGroupShape& group = collective_group(c, op);
  if (group.ranks <= 1) return 0.0;
  if (is_ep_exchange(op.kind)) return ep_comm_time_s(c, op, bytes);
  if (op.kind == OpKind::CpExchange) {
    // The ring's step: a send to and a receive from the neighbouring CP rank.
    return collective_time_s(CollOp::SendRecv, bytes,
                             group_shape(2, c.job.parallel.tensor_model_parallel_size, nvlink_domain_gpus(c.job.cluster)),
                             c.job.cluster, c.nccl);
  }
  return collective_time_s(op.kind == OpKind::EpAllGather ? CollOp::AllGather : comm_op_of(op.kind), bytes, group,
                           c.job.cluster, c.nccl);
}

std::shared_ptr<const StepCostData> load_step_cost_data(const JobSpec& job, const Catalog& catalog) {
  NcclModel nccl = load_default_nccl_model(catalog.root());
  NcclModel underated = without_all_to_all_derating(nccl);
  return std::make_shared<const StepCostData>(StepCostData{load_job_hardware_profile(job, catalog), std::move(nccl),
                                                           load_host_overheads(catalog), std::move(underated)});
}

BufferSizes buffer_sizes(const StepCostData& data) { return data.hw.buffers; }

}  // namespace megasim
