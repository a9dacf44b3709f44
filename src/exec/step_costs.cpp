// compute_step_costs: the cost passes composed. Each pass fills its part of StepCosts:
//   time_layer_passes + stage_chunk_costs (chunk_costs.cpp, timing ops in pass_times.cpp):
//     per-chunk compute, exposed TP/CP time, parameter bytes, DP buckets;
//   add_p2p_costs, add_dp_costs: pipeline and data-parallel communication;
//   add_host_costs: optimizer, data loading, GC skew, launch gaps, slow hosts.
#include "megasim/exec/step_costs.hpp"

#include <algorithm>
#include <cmath>

#include "chunk_costs.hpp"
#include "cost_context.hpp"
#include "ep_fabric.hpp"
#include "megasim/hw/kernel_time.hpp"
#include "megasim/model/params.hpp"
#include "optimizer_step.hpp"
#include "pass_times.hpp"

namespace megasim {

namespace {

// Pipeline p2p (pipeline_p2p_bytes, pipeline_peer_stride).
void add_p2p_costs(const Context& ctx, StepCosts& c) {
  const JobSpec& job = ctx.job;
  const auto& par = job.parallel;
  c.p2p_bytes = pipeline_p2p_bytes(job);
  c.p2p_nics = 1;
  const std::int64_t pp_stride = pipeline_peer_stride(job);
  c.p2p_time_s = par.pipeline_model_parallel_size > 1
                     ? collective_time_s(CollOp::SendRecv, c.p2p_bytes,
                                         group_shape(2, pp_stride, nvlink_domain_gpus(job.cluster)), job.cluster, ctx.nccl)
                     : 0.0;
}

// Data parallel: the stage with the most parameters sets the pace. Routed experts' gradients
// reduce (and their parameters gather) over the expert data-parallel group instead (Megatron-
// Core's expert DDP buckets), a collective of its own after the dense one.
void add_dp_costs(const Context& ctx, StepCosts& c) {
  const JobSpec& job = ctx.job;
  const auto& par = job.parallel;
  const int pp = par.pipeline_model_parallel_size;
  const std::int64_t dp = par.data_parallel_size;
  StageParameters stage;
  for (int s = 0; s < pp; ++s) {
    const StageParameters p = stage_parameters_per_gpu(job, s);
    if (p.total() > stage.total()) stage = p;
  }
  const double stage_params = stage.dense;
  const double grad_bytes_per_param = job.system.grad_reduce_in_fp32 ? 4.0 : 2.0;
  c.dp_grad_reduce_bytes = stage_params * grad_bytes_per_param;
  c.dp_param_gather_bytes = par.zero_stage >= 1 ? stage_params * kWeightBytesPerParam : 0.0;
  const std::int64_t dp_stride = static_cast<std::int64_t>(par.tensor_model_parallel_size) *
                                 par.context_parallel_size * (par.placement == PlacementOrder::DpFirst ? 1 : pp);
  const CollGroupShape dp_group = group_shape(dp, dp_stride, nvlink_domain_gpus(job.cluster));
  const CollOp reduce = par.zero_stage == 0 ? CollOp::AllReduce : CollOp::ReduceScatter;
  if (dp > 1) {
    c.dp_reduce_time_s = collective_time_s(reduce, c.dp_grad_reduce_bytes, dp_group, job.cluster, ctx.nccl);
    c.dp_gather_time_s = par.zero_stage >= 1 ? collective_time_s(CollOp::AllGather, c.dp_param_gather_bytes,
                                                                 dp_group, job.cluster, ctx.nccl)
                                             : 0.0;
    if (par.zero_stage == 3) c.dp_gather_time_s *= 2.0;  // parameters gathered for forward and backward
  }
  const std::int64_t edp = expert_data_parallel_size(job);
  if (stage.expert > 0 && edp > 1) {
    const CollGroupShape edp_group =
        group_shape(edp, static_cast<std::int64_t>(expert_tensor_parallel_size(job)) * par.expert_model_parallel_size,
                    nvlink_domain_gpus(job.cluster));
    const double grad_bytes = stage.expert * grad_bytes_per_param;
    const double param_bytes = par.zero_stage >= 1 ? stage.expert * kWeightBytesPerParam : 0.0;
    c.dp_reduce_time_s += collective_time_s(reduce, grad_bytes, edp_group, job.cluster, ctx.nccl);
    if (par.zero_stage >= 1) {
      c.dp_gather_time_s += (par.zero_stage == 3 ? 2.0 : 1.0) *
                            collective_time_s(CollOp::AllGather, param_bytes, edp_group, job.cluster, ctx.nccl);
    }
    // The event engine runs these as collectives of their own on the expert-DP groups.
    c.edp_grad_reduce_bytes = grad_bytes;
    c.edp_param_gather_bytes = param_bytes;
  }
  c.dp_overlap_compute_slowdown = ctx.overlap_slowdown;
}

// When the first and the last pipeline stage both hold the word embedding (tied input and output
// embeddings, or multi-token-prediction modules, which embed on the last stage), Megatron
// all-reduces its gradient between them after the DP reduction and before the optimizer
// (Megatron-Core finalize_model_grads.py _allreduce_word_embedding_grads: `share_embeddings_and_
// output_weights or mtp_num_layers`): the vocabulary shard's main gradient, exposed.
}  // namespace

double embedding_grad_sync_time_s(const JobSpec& job, const NcclModel& nccl) {
  const int pp = job.parallel.pipeline_model_parallel_size;
  if (pp <= 1 || !(job.model.tie_word_embeddings || job.model.num_nextn_predict_layers > 0)) return 0.0;
  const int tp = job.parallel.tensor_model_parallel_size;
  const double shard_elements =
      static_cast<double>(padded_vocab_size(job.model, tp) / tp) * static_cast<double>(job.model.hidden_size);
  const double bytes = shard_elements * (job.system.grad_reduce_in_fp32 ? 4.0 : 2.0);
  const CollGroupShape ends = group_shape(2, pipeline_peer_stride(job) * (pp - 1), nvlink_domain_gpus(job.cluster));
  return collective_time_s(CollOp::AllReduce, bytes, ends, job.cluster, nccl);
}

namespace {

// Per-step costs outside the passes: the optimizer step (with the embedding's gradient sync
// before it), host overheads and slow hosts.
void add_host_costs(const Context& ctx, const HostOverheads& host, StepCosts& c) {
  const JobSpec& job = ctx.job;
  const SystemSpec& sys = job.system;
  const int gpn = job.cluster.gpus_per_node;
  // Optimizer: this rank's shard of the update (memory-bound) plus the global gradient-norm
  // all-reduce of one scalar per rank (latency-bound).
  const CollGroupShape world = group_shape(job.cluster.num_gpus, 1, nvlink_domain_gpus(job.cluster));
  c.optimizer_s = optimizer_step_time_s(job, ctx.hw) +
                  collective_time_s(CollOp::AllReduce, 4.0, world, job.cluster, ctx.nccl) +
                  embedding_grad_sync_time_s(job, ctx.nccl);

  c.data_loading_s = data_loading_time_s(host, sys, gpn);
  c.gc_skew_s = gc_skew_time_s(host, sys, job.parallel.data_parallel_size);
  c.launch_overhead_per_chunk_s = p2p_sync_gap_time_s(host, pipeline_transfers_overlap(job), job.parallel.pipeline_model_parallel_size);

  // Straggler hosts: the step waits for the slowest pipeline replica, so one slow host
  // anywhere slows everyone; expected slow-down = slowdown x P(at least one slow host).
  const double nodes = std::ceil(static_cast<double>(job.cluster.num_gpus) / gpn);
  const double slow_fraction = sys.straggler_host_fraction.value_or(job.cluster.straggler_host_fraction);
  const double slow_host_slowdown = sys.straggler_slowdown.value_or(job.cluster.straggler_slowdown);
  c.straggler_slowdown = slow_host_slowdown * (1.0 - std::pow(1.0 - slow_fraction, nodes));
}

}  // namespace

StepCosts compute_step_costs(const JobSpec& job, const Catalog& catalog) {
  return compute_step_costs(job, *load_step_cost_data(job, catalog));
}

StepCosts compute_step_costs(const JobSpec& job, const StepCostData& data) {
  return compute_step_costs(job, data, nullptr);
}

StepCosts compute_step_costs(const JobSpec& job, const StepCostData& data, const EpExchangeOnFabric* ep_on_fabric) {
  Context ctx = make_context(job, data);
  ctx.ep_fabric = ep_on_fabric;
  const TpOverlapConfig ov{job.system.tp_overlap, job.system.tp_overlap_chunks, ctx.overlap_slowdown};
  const LayerPasses passes = time_layer_passes(ctx);

  StepCosts c;
  const ChunkCosts one_layer = pass_costs(ctx, passes.layer_fwd, passes.layer_bwd, ov);
  c.layer_fwd_s = one_layer.fwd_s();
  c.layer_bwd_s = one_layer.bwd_s();
  if (is_moe(job.model)) {
    const PassTimes f = time_ops(ctx, moe_block_forward_ops(job), host_s_per_launch(ctx, true, PassDirection::Forward));
    const PassTimes b = time_ops(ctx, moe_block_backward_ops(job), host_s_per_launch(ctx, true, PassDirection::Backward));
    // The exchanges beyond the host's launch slack, as the layer model takes them (chunk_costs.cpp).
    c.moe_block_fwd_s = f.compute_s + f.tp_comm_s() + after_host_slack_s(f.ep_comm_s(), f);
    c.moe_block_bwd_s = b.compute_s + b.tp_comm_s() + after_host_slack_s(b.ep_comm_s(), b);
    if (ep_on_fabric != nullptr) {
      c.ep_priced_on_fabric = ep_on_fabric->priced_on_fabric();
      c.ep_groups_simulated = static_cast<std::int64_t>(ep_on_fabric->groups().size());
      c.ep_groups_per_stage = static_cast<std::int64_t>(ep_on_fabric->stage_groups());
    }
  }
  c.pp = job.parallel.pipeline_model_parallel_size;
  c.vpp = job.parallel.virtual_pipeline_model_parallel_size;
  c.dp = job.parallel.data_parallel_size;
  c.micro_batches = micro_batches_per_pipeline(job);
  c.extra_warmup_passes = extra_warmup_passes(job);
  c.chunks = stage_chunk_costs(ctx, passes, ov);
  add_p2p_costs(ctx, c);
  add_dp_costs(ctx, c);
  add_host_costs(ctx, data.host, c);
  c.buffers = data.hw.buffers;
  return c;
}

std::vector<LayerKernelTime> layer_kernel_times(const JobSpec& job, const StepCostData& data) {
  return layer_kernel_times(job, data, layer_kind(job.model, 0));
}

std::vector<LayerKernelTime> layer_kernel_times(const JobSpec& job, const StepCostData& data, const LayerKind& kind) {
  const Context ctx = make_context(job, data);
  std::vector<LayerKernelTime> rows;
  const auto add = [&](const char* pass, const std::vector<LayerOp>& ops) {
    for (const auto& op : ops) {
      const double s = is_communication(op.kind) ? comm_op_time_s(ctx, op, op.comm_bytes)
                                                 : op_time_s(data.hw, job.cluster.gpu, op);
      rows.push_back(LayerKernelTime{pass, op, s});
    }
  };
  add("forward", layer_forward_ops(job, kind));
  add("backward", layer_backward_ops(job, kind));
  add("recompute", layer_recompute_ops(job, kind));
  return rows;
}

}  // namespace megasim
