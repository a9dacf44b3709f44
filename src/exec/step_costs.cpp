#include "megasim/exec/step_costs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "megasim/coll/cost_model.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/catalog.hpp"
#include "tp_overlap.hpp"
#include "megasim/hw/kernel_time.hpp"
#include "megasim/hw/hardware_profile.hpp"
#include "host_overheads.hpp"
#include "megasim/model/layer_ops.hpp"
#include "megasim/model/params.hpp"

namespace megasim {

namespace {

// The shape of the communicator formed by `ranks` GPUs placed `stride` GPUs apart.
CollGroupShape group_shape(std::int64_t ranks, std::int64_t stride, int gpus_per_node) {
  CollGroupShape g;
  g.ranks = static_cast<int>(ranks);
  const std::int64_t per_node =
      stride >= gpus_per_node ? 1 : std::min<std::int64_t>(ranks, gpus_per_node / stride);
  // A group that does not fill whole nodes (e.g. 2,564 ranks, 8 per node) is ragged; the
  // NCCL shape model wants equal counts, so use the largest count that tiles the group.
  g.ranks_per_node = static_cast<int>(std::max<std::int64_t>(1, std::gcd(ranks, std::max<std::int64_t>(1, per_node))));
  g.nodes = static_cast<int>((ranks + g.ranks_per_node - 1) / g.ranks_per_node);
  g.same_rail = g.ranks_per_node == 1;
  return g;
}

CollOp comm_op_of(OpKind kind) {
  switch (kind) {
    case OpKind::TpAllGather: return CollOp::AllGather;
    case OpKind::TpReduceScatter: return CollOp::ReduceScatter;
    case OpKind::TpAllReduce: return CollOp::AllReduce;
    default: return CollOp::SendRecv;
  }
}

struct Context {
  const JobSpec& job;
  const HardwareProfile& hw;
  const NcclModel& nccl;
  CollGroupShape tp_group;
  CollGroupShape cp_group;
  double overlap_slowdown;  // fraction a GEMM slows while a NCCL kernel shares its SMs
};

// The backward GEMMs a Megatron-async collective runs beside (see LayerOp::async_beside).
double beside_gemm_s(const LayerOp& op, const std::map<std::string, double>& gemm_s) {
  const char* suffix = op.kind == OpKind::TpAllGather ? "_dgrad" : "_wgrad";
  double s = 0;
  for (const auto& linear : op.async_beside) {
    const auto it = gemm_s.find(linear + suffix);
    if (it != gemm_s.end()) s += it->second;
  }
  return s;
}

// Token chunks the TP-overlap path runs in (the FFN linears, or every linear with
// tp_overlap_scope = all-linears): with TP overlap its GEMMs and their fused collectives are
// split along the token dimension into `tp_overlap_chunks` pieces (MegaScale section 3.2).
int overlap_chunks(const JobSpec& job) {
  return job.system.tp_overlap ? std::max(1, job.system.tp_overlap_chunks) : 1;
}

// One GEMM run as `chunks` GEMMs over a slice of its m rows (the tokens) each; each piece pays
// its own latency and tile quantisation.
double chunked_gemm_time_s(const Context& c, const LayerOp& op, int chunks) {
  LayerOp piece = op;
  piece.gemm_m = (op.gemm_m + chunks - 1) / chunks;
  return chunks * op_time_s(c.hw, c.job.cluster.gpu, c.job, piece);
}

// Serial time of one TP or CP collective of the layer (0 when its group has one rank).
double comm_op_time_s(const Context& c, const LayerOp& op, double bytes) {
  if (op.kind == OpKind::CpExchange) {
    if (c.cp_group.ranks <= 1) return 0.0;
    return collective_time_s(CollOp::SendRecv, bytes,
                             group_shape(2, c.job.parallel.tensor_model_parallel_size, c.job.cluster.gpus_per_node),
                             c.job.cluster, c.nccl);
  }
  if (c.tp_group.ranks <= 1) return 0.0;
  return collective_time_s(comm_op_of(op.kind), bytes, c.tp_group, c.job.cluster, c.nccl);
}

// The time a compute op takes in the pass: overlap-path forward and dgrad GEMMs (m = tokens) run
// in token chunks. Weight-gradient GEMMs reduce over the tokens (k = tokens): they stay whole,
// since splitting the reduction would rewrite the whole weight gradient once per chunk.
bool runs_chunked(const LayerOp& op, int chunks) {
  return op.kind == OpKind::Gemm && op.tp_overlap_path && chunks > 1 && !op.weight_gradient;
}
double compute_op_time_s(const Context& c, const LayerOp& op, int chunks) {
  return runs_chunked(op, chunks) ? chunked_gemm_time_s(c, op, chunks) : op_time_s(c.hw, c.job.cluster.gpu, c.job, op);
}

// Transformer Engine's userbuffers (tp_overlap with tp_overlap_scope = all-linears) overlap each
// collective its own way (TE's initialize_ub method table): the forward all-gathers and the
// backward output-gradient all-gathers by ring exchange with the GEMM that consumes them (the GEMM
// starts on the local shard while the next shard arrives, so nothing is exposed beyond what
// outlasts the remaining GEMM chunks); the forward reduce-scatters pipelined behind the GEMM that
// produces them (the last chunk's reduction is exposed); the wgrad input all-gather and the
// dgrad reduce-scatter in bulk beside the dgrad and wgrad GEMMs (Megatron's async pair).
bool te_userbuffers(const JobSpec& job) { return job.system.tp_overlap && job.system.tp_overlap_scope == "all-linears"; }

// Forward and dgrad GEMMs an all-gather at ops[i] feeds: the next run of GEMMs, past any FP8
// cast/transpose kernels, up to the first wgrad GEMM or non-GEMM op. op_s: each op's pass time.
double gemms_after_s(const std::vector<LayerOp>& ops, const std::vector<double>& op_s, std::size_t i) {
  double s = 0;
  std::size_t j = i + 1;
  while (j < ops.size() && ops[j].kind == OpKind::Elementwise) ++j;
  for (; j < ops.size() && ops[j].kind == OpKind::Gemm && !ops[j].weight_gradient; ++j) s += op_s[j];
  return s;
}
// GEMMs a reduce-scatter at ops[i] reduces the output of: the run of GEMMs right before it.
double gemms_before_s(const std::vector<LayerOp>& ops, const std::vector<double>& op_s, std::size_t i) {
  double s = 0;
  for (std::size_t j = i; j > 0 && ops[j - 1].kind == OpKind::Gemm; --j) s += op_s[j - 1];
  return s;
}

// Compute time and communication of an op list, split the way TP overlap needs it.
PassTimes time_ops(const Context& c, const std::vector<LayerOp>& ops) {
  PassTimes t;
  const int chunks = overlap_chunks(c.job);
  const bool te = te_userbuffers(c.job);
  // Each compute op's time in the pass, once: the loop sums them and Transformer Engine's
  // collectives look up the GEMMs next to them.
  std::vector<double> op_s(ops.size(), 0.0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!is_communication(ops[i].kind)) op_s[i] = compute_op_time_s(c, ops[i], chunks);
  }
  std::map<std::string, double> gemm_s;  // backward GEMM times by name, for collectives beside them
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const LayerOp& op = ops[i];
    if (!is_communication(op.kind)) {
      const double s = op_s[i];
      t.compute_s += s;
      t.kernels += runs_chunked(op, chunks) ? op.kernels * chunks : op.kernels;
      if (op.kind == OpKind::Gemm && op.tp_overlap_path) t.overlap_gemm_s += s;
      if (op.kind == OpKind::Gemm && (c.job.system.tp_async_backward || te)) gemm_s[op.name] = s;
      continue;
    }
    if (op.kind == OpKind::CpExchange) {
      t.cp_comm_s += comm_op_time_s(c, op, op.comm_bytes);
      continue;
    }
    if (c.tp_group.ranks <= 1) continue;
    const bool bulk_beside = !op.async_beside.empty();
    if (te && op.tp_overlap_path) {
      double s = 0, exposed = 0;
      if (bulk_beside) {
        s = comm_op_time_s(c, op, op.comm_bytes);
        exposed = beside_exposed_s(s, beside_gemm_s(op, gemm_s), c.overlap_slowdown);
      } else if (op.kind == OpKind::TpAllGather) {
        s = chunks * comm_op_time_s(c, op, op.comm_bytes / chunks);
        exposed = ring_exchange_exposed_s(s, gemms_after_s(ops, op_s, i), chunks, c.overlap_slowdown);
      } else {
        s = chunks * comm_op_time_s(c, op, op.comm_bytes / chunks);
        exposed = pipelined_reduce_scatter_exposed_s(s, gemms_before_s(ops, op_s, i), chunks, c.overlap_slowdown);
      }
      t.async_comm_s += s;
      t.async_exposed_s += exposed;
      continue;
    }
    // Chunked TP overlap takes the overlap-path collectives; Megatron's asynchronous backward
    // collectives off that path run beside their linear's other GEMM.
    const bool chunk_overlapped = c.job.system.tp_overlap && op.tp_overlap_path;
    if (c.job.system.tp_async_backward && bulk_beside && !chunk_overlapped) {
      const double s = comm_op_time_s(c, op, op.comm_bytes);
      t.async_comm_s += s;
      t.async_exposed_s += beside_exposed_s(s, beside_gemm_s(op, gemm_s), c.overlap_slowdown);
      continue;
    }
    // A fused collective runs once per GEMM chunk on 1/chunks of the bytes: each piece pays the
    // collective's latency and runs at the (lower) bandwidth of its smaller message.
    const int pieces = op.tp_overlap_path ? chunks : 1;
    const double s = pieces * comm_op_time_s(c, op, op.comm_bytes / pieces);
    (op.tp_overlap_path ? t.overlap_comm_s : t.other_comm_s) += s;
  }
  // An eager framework cannot launch faster than its host dispatch rate: when the kernels are
  // short the GPU waits for the CPU (hw profile: host_dispatch_s, measured).
  t.compute_s = std::max(t.compute_s, t.kernels * c.hw.host_dispatch_s);
  return t;
}

// The critical-path times of a forward and a backward pass (compute, exposed TP after overlap,
// exposed CP) as a chunk records them; layout fields are left to the caller.
ChunkCosts pass_costs(const PassTimes& f, const PassTimes& b, const TpOverlapConfig& ov) {
  ChunkCosts ch;
  ch.fwd_compute_s = f.compute_s;
  ch.bwd_compute_s = b.compute_s;
  ch.fwd_tp_comm_s = f.tp_comm_s();
  ch.bwd_tp_comm_s = b.tp_comm_s();
  ch.fwd_tp_exposed_s = apply_tp_overlap(f, ov).exposed_s;
  ch.bwd_tp_exposed_s = apply_tp_overlap(b, ov).exposed_s;
  ch.fwd_cp_exposed_s = f.cp_comm_s;  // K/V ring exchange is on the critical path
  ch.bwd_cp_exposed_s = b.cp_comm_s;
  return ch;
}

constexpr double kWeightBytesPerParam = 2.0;  // 16-bit weights, as ZeRO all-gathers them
constexpr double kMaxDpBucketsPerChunk = 16.0;

}  // namespace

struct StepCostData {
  HardwareProfile hw;
  NcclModel nccl;
  HostOverheads host;
};

namespace {

// The hardware profile of the job's GPU (catalog hw/<cluster.gpu.profile>).
HardwareProfile load_job_hardware_profile(const JobSpec& job, const Catalog& catalog) {
  return load_hardware_profile(catalog.entry("hw", job.cluster.gpu.profile, "cluster.gpu.profile"),
                               "cluster.gpu.profile");
}

Context make_context(const JobSpec& job, const StepCostData& data) {
  const int gpn = job.cluster.gpus_per_node;
  return Context{job, data.hw, data.nccl, group_shape(job.parallel.tensor_model_parallel_size, 1, gpn),
                 group_shape(job.parallel.context_parallel_size, job.parallel.tensor_model_parallel_size, gpn),
                 overlap_compute_slowdown(data.hw) - 1.0};
}

}  // namespace

std::shared_ptr<const StepCostData> load_step_cost_data(const JobSpec& job, const Catalog& catalog) {
  return std::make_shared<const StepCostData>(StepCostData{
      load_job_hardware_profile(job, catalog), load_default_nccl_model(catalog.root()),
      load_host_overheads(catalog)});
}

BufferSizes buffer_sizes(const StepCostData& data) { return data.hw.buffers; }

StepCosts compute_step_costs(const JobSpec& job, const Catalog& catalog) {
  return compute_step_costs(job, *load_step_cost_data(job, catalog));
}

StepCosts compute_step_costs(const JobSpec& job, const StepCostData& data) {
  const auto& par = job.parallel;
  const auto& sys = job.system;
  const int tp = par.tensor_model_parallel_size;
  const int pp = par.pipeline_model_parallel_size;
  const int vpp = par.virtual_pipeline_model_parallel_size;
  const int cp = par.context_parallel_size;
  const std::int64_t dp = par.data_parallel_size;
  const int gpn = job.cluster.gpus_per_node;

  const HardwareProfile& hw = data.hw;
  const NcclModel& nccl = data.nccl;

  const Context ctx = make_context(job, data);
  const double slowdown = ctx.overlap_slowdown;  // SMs lost to NCCL kernels

  // One layer, one micro-batch.
  const PassTimes fwd = time_ops(ctx, layer_forward_ops(job));
  PassTimes bwd = time_ops(ctx, layer_backward_ops(job));
  bwd += time_ops(ctx, layer_recompute_ops(job));
  const PassTimes emb_f = time_ops(ctx, embedding_forward_ops(job));
  const PassTimes emb_b = time_ops(ctx, embedding_backward_ops(job));
  const PassTimes head_f = time_ops(ctx, lm_head_forward_ops(job));
  const PassTimes head_b = time_ops(ctx, lm_head_backward_ops(job));
  const TpOverlapConfig ov{sys.tp_overlap, sys.tp_overlap_chunks, slowdown};

  StepCosts c;
  const ChunkCosts one_layer = pass_costs(fwd, bwd, ov);
  c.layer_fwd_s = one_layer.fwd_s();
  c.layer_bwd_s = one_layer.bwd_s();
  c.pp = pp;
  c.vpp = vpp;
  c.dp = dp;
  c.micro_batches = micro_batches_per_pipeline(job);

  int first_layer = 0;
  for (int s = 0; s < pp; ++s) {
    std::vector<ChunkCosts> chunks;
    for (int v = 0; v < vpp; ++v) {
      const auto layers = static_cast<int>(layers_in_chunk(job, s, v));
      const bool has_embedding = s == 0 && v == 0;
      const bool has_lm_head = s == pp - 1 && v == vpp - 1;
      PassTimes f = fwd.scaled(layers);
      PassTimes b = bwd.scaled(layers);
      if (has_embedding) {
        f += emb_f;
        b += emb_b;
      }
      if (has_lm_head) {
        f += head_f;
        b += head_b;
      }
      ChunkCosts ch = pass_costs(f, b, ov);
      // Its share of the stage's DP traffic: the first stage's first chunk also carries the
      // embedding, the last stage's last chunk the LM head.
      ch.param_bytes = kWeightBytesPerParam *
                       (layers * layer_parameters_per_tp_rank(job.model, tp) +
                        (has_embedding ? embedding_parameters_per_gpu(job) : 0.0) +
                        (has_lm_head ? lm_head_parameters_per_gpu(job) : 0.0));
      // Megatron-Core buckets only model chunk 0 (disable_bucketing=(model_chunk_idx > 0):
      // later chunks' collectives overlap compute anyway); FSDP (ZeRO-3) gathers per unit in
      // every chunk, and gradients reduced every micro-batch go bucket by bucket in every chunk.
      const bool bucketed_chunk = sys.dp_overlap_granularity == "bucket" &&
                                  ((sys.dp_overlap && v == 0) || par.zero_stage == 3 ||
                                   gradients_reduced_every_micro_batch(job));
      if (bucketed_chunk) {
        // Megatron-Core fills buckets in backward order, max(40M, 1M x DP) elements by default,
        // DP counted with context parallelism (megatron/core/distributed/distributed_data_parallel.py:
        // larger buckets at large DP keep each rank's ring chunk bandwidth-bound); more than
        // kMaxDpBucketsPerChunk would only add events (the exposed tail is already 1/cap).
        const double bucket_elements =
            std::max(hw.buffers.grad_bucket_elements, 1e6 * static_cast<double>(dp) * cp);
        const double buckets = std::ceil(ch.param_bytes / kWeightBytesPerParam / bucket_elements);
        ch.dp_buckets = static_cast<int>(std::clamp(buckets, 1.0, kMaxDpBucketsPerChunk));
      }
      ch.first_layer = first_layer;
      ch.layers = layers;
      ch.has_embedding = has_embedding;
      ch.has_lm_head = has_lm_head;
      first_layer += layers;
      chunks.push_back(ch);
    }
    c.chunks.push_back(std::move(chunks));
  }

  // Pipeline p2p: with sequence parallelism (or Megatron's scatter-gather optimisation) each
  // TP rank sends only its 1/t slice of the b x s x h activation, over its own rail's NIC.
  const double act_bytes = activation_bytes_per_element(job.training.precision);
  const double boundary_bytes = static_cast<double>(job.training.micro_batch_size) *
                                static_cast<double>(job.training.seq_length / cp) *
                                static_cast<double>(job.model.hidden_size) * act_bytes;
  c.p2p_bytes = boundary_bytes / tp;
  c.p2p_nics = 1;
  const std::int64_t pp_stride =
      static_cast<std::int64_t>(tp) * cp * (par.placement == PlacementOrder::DpFirst ? dp : 1);
  c.p2p_time_s = pp > 1 ? collective_time_s(CollOp::SendRecv, c.p2p_bytes, group_shape(2, pp_stride, gpn),
                                            job.cluster, nccl)
                        : 0.0;

  // Data parallel: the stage with the most parameters sets the pace.
  double stage_params = 0;
  for (int s = 0; s < pp; ++s) stage_params = std::max(stage_params, parameters_per_gpu(job, s));
  const double grad_bytes_per_param = sys.grad_reduce_in_fp32 ? 4.0 : 2.0;
  c.dp_grad_reduce_bytes = stage_params * grad_bytes_per_param;
  c.dp_param_gather_bytes = par.zero_stage >= 1 ? stage_params * kWeightBytesPerParam : 0.0;
  const std::int64_t dp_stride =
      static_cast<std::int64_t>(tp) * cp * (par.placement == PlacementOrder::DpFirst ? 1 : pp);
  const CollGroupShape dp_group = group_shape(dp, dp_stride, gpn);
  if (dp > 1) {
    const CollOp reduce = par.zero_stage == 0 ? CollOp::AllReduce : CollOp::ReduceScatter;
    c.dp_reduce_time_s = collective_time_s(reduce, c.dp_grad_reduce_bytes, dp_group, job.cluster, nccl);
    c.dp_gather_time_s = par.zero_stage >= 1 ? collective_time_s(CollOp::AllGather, c.dp_param_gather_bytes,
                                                                 dp_group, job.cluster, nccl)
                                             : 0.0;
    if (par.zero_stage == 3) c.dp_gather_time_s *= 2.0;  // parameters gathered for forward and backward
  }
  c.dp_overlap_compute_slowdown = slowdown;

  // Optimizer: this rank's shard of the update (memory-bound) plus the global gradient-norm
  // all-reduce of one scalar per rank (latency-bound).
  const CollGroupShape world = group_shape(job.cluster.num_gpus, 1, gpn);
  c.optimizer_s = optimizer_step_time_s(job, hw) +
                  collective_time_s(CollOp::AllReduce, 4.0, world, job.cluster, nccl);

  const HostOverheads& host = data.host;
  c.data_loading_s = data_loading_time_s(host, sys, gpn);
  c.gc_skew_s = gc_skew_time_s(host, sys, dp);
  c.launch_overhead_per_chunk_s = p2p_sync_gap_time_s(host, sys, pp);

  // Straggler hosts: the step waits for the slowest pipeline replica, so one slow host
  // anywhere slows everyone; expected slow-down = slowdown x P(at least one slow host).
  const double nodes = std::ceil(static_cast<double>(job.cluster.num_gpus) / gpn);
  const double slow_fraction = sys.straggler_host_fraction.value_or(job.cluster.straggler_host_fraction);
  const double slow_host_slowdown = sys.straggler_slowdown.value_or(job.cluster.straggler_slowdown);
  c.straggler_slowdown = slow_host_slowdown * (1.0 - std::pow(1.0 - slow_fraction, nodes));
  c.buffers = hw.buffers;
  return c;
}

std::vector<LayerKernelTime> layer_kernel_times(const JobSpec& job, const StepCostData& data) {
  const Context ctx = make_context(job, data);
  std::vector<LayerKernelTime> rows;
  const auto add = [&](const char* pass, const std::vector<LayerOp>& ops) {
    for (const auto& op : ops) {
      const double s = is_communication(op.kind) ? comm_op_time_s(ctx, op, op.comm_bytes)
                                                 : op_time_s(data.hw, job.cluster.gpu, job, op);
      rows.push_back(LayerKernelTime{pass, op, s});
    }
  };
  add("forward", layer_forward_ops(job));
  add("backward", layer_backward_ops(job));
  add("recompute", layer_recompute_ops(job));
  return rows;
}

}  // namespace megasim
