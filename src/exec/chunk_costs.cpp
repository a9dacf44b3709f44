#include "chunk_costs.hpp"

#include <algorithm>
#include <cmath>

#include "megasim/coll/cost_model.hpp"
#include "megasim/model/params.hpp"
#include "pass_times.hpp"

namespace megasim {

namespace {

constexpr double kMaxDpBucketsPerChunk = 16.0;

// Overlapped DP collectives per step for one chunk, each way (ChunkCosts::dp_buckets).
int dp_buckets_of_chunk(const Context& c, const ChunkCosts& ch, int stage, int chunk) {
  const JobSpec& job = c.job;
  const SystemSpec& sys = job.system;
  // Megatron-Core buckets only model chunk 0 of the first pipeline stage (disable_bucketing=
  // (model_chunk_idx > 0), and `if disable_bucketing or pp_rank > 0: bucket_size = None` in
  // distributed_data_parallel.py: the other chunks' and stages' collectives are off the
  // critical path); FSDP (ZeRO-3) gathers per unit in every chunk, and gradients reduced every
  // micro-batch go bucket by bucket in every chunk.
  const bool bucketed_chunk = sys.dp_overlap_granularity == DpOverlapGranularity::Bucket &&
                              ((sys.dp_overlap && chunk == 0 && (stage == 0 || !sys.dp_megatron_core_ddp)) ||
                               job.parallel.zero_stage == 3 ||
                               gradients_reduced_every_micro_batch(job));
  if (!bucketed_chunk) return 1;
  // Megatron-Core fills buckets in backward order, max(40M, 1M x DP) elements by default,
  // DP counted with context parallelism (megatron/core/distributed/distributed_data_parallel.py:
  // larger buckets at large DP keep each rank's ring chunk bandwidth-bound); more than
  // kMaxDpBucketsPerChunk would only add events (the exposed tail is already 1/cap).
  const double bucket_elements = std::max(c.hw.buffers.grad_bucket_elements,
                                          1e6 * static_cast<double>(job.parallel.data_parallel_size) *
                                              job.parallel.context_parallel_size);
  const double buckets = std::ceil(ch.param_bytes / kWeightBytesPerParam / bucket_elements);
  return static_cast<int>(std::clamp(buckets, 1.0, kMaxDpBucketsPerChunk));
}

double mtp_combine_unhidden_s(const Context& c, const LayerPasses& lp);

// The forward and backward pass times of layers [first, first + layers) of the model (MTP
// modules past num_hidden_layers included), summed by kind.
void add_layers(const Context& c, const LayerPasses& lp, std::int64_t first, std::int64_t layers, PassTimes& f,
                PassTimes& b) {
  if (lp.kinds.size() == 1) {  // one kind: one product (the sum order every dense result keeps)
    f += lp.layer_fwd.scaled(static_cast<int>(layers));
    b += lp.layer_bwd.scaled(static_cast<int>(layers));
    return;
  }
  for (const KindPasses& k : lp.kinds) {
    int n = 0;
    for (std::int64_t i = first; i < first + layers; ++i) n += layer_kind(c.job.model, i) == k.kind ? 1 : 0;
    if (n == 0) continue;
    f += k.fwd.scaled(n);
    b += k.bwd.scaled(n);
  }
}

// One chunk of `layers` layers from global layer `first`; the first stage's first chunk also
// carries the embedding, the last stage's last chunk the LM head and any multi-token-prediction
// modules (one more layer and one more pass through the head each; Megatron-Core places them
// on the last stage), and their share of the stage's DP traffic.
ChunkCosts chunk_cost(const Context& c, const LayerPasses& lp, const TpOverlapConfig& ov, std::int64_t first,
                      int layers, bool has_embedding, bool has_lm_head) {
  const JobSpec& job = c.job;
  PassTimes f, b;
  add_layers(c, lp, first, layers, f, b);
  if (has_embedding) {
    f += lp.embedding_fwd;
    b += lp.embedding_bwd;
  }
  const std::int64_t mtp = has_lm_head ? job.model.num_nextn_predict_layers : 0;
  if (has_lm_head) {
    f += lp.head_fwd;
    b += lp.head_bwd;
  }
  if (mtp > 0) {
    add_layers(c, lp, job.model.num_hidden_layers, mtp, f, b);
    f += lp.head_fwd.scaled(static_cast<int>(mtp));
    b += lp.head_bwd.scaled(static_cast<int>(mtp));
    // Each MTP module embeds its shifted tokens with the shared embedding (Megatron-Core
    // multi_token_prediction.py: the last stage keeps its own copy of the table under PP): one
    // lookup and one dense backward each, the copies' gradients summed by autograd (priced as the
    // main-grad add each).
    f += lp.embedding_fwd.scaled(static_cast<int>(mtp));
    b += lp.embedding_bwd.scaled(static_cast<int>(mtp));
    // ... and joins it to the previous depth's hidden states (norms, concatenation, eh_proj).
    f += lp.mtp_projection_fwd.scaled(static_cast<int>(mtp));
    b += lp.mtp_projection_bwd.scaled(static_cast<int>(mtp));
    if (job.system.overlap_moe_expert_parallel_comm) {
      f.ep_merged_exposed_s += static_cast<double>(mtp) * mtp_combine_unhidden_s(c, lp);
    }
  }
  ChunkCosts ch = pass_costs(c, f, b, ov);
  if (job.system.overlap_moe_expert_parallel_comm) {
    ch.merged_pp_wait_s = merged_pair_receive_wait_s(c, b, layers + static_cast<int>(mtp));
  }
  double params = 0;
  if (is_moe(job.model)) {
    StageParameters held;
    add_layer_parameters_per_gpu(job, first, layers, held);
    add_layer_parameters_per_gpu(job, job.model.num_hidden_layers, mtp, held);
    params = held.total();
  } else {
    params = layers * layer_parameters_per_tp_rank(job.model, job.parallel.tensor_model_parallel_size);
  }
  ch.param_bytes = kWeightBytesPerParam *
                   (params + (has_embedding ? embedding_parameters_per_gpu(job) : 0.0) +
                    (has_lm_head ? lm_head_parameters_per_gpu(job) : 0.0));
  ch.layers = layers;
  ch.merged_layers = layers + static_cast<int>(mtp);
  ch.has_embedding = has_embedding;
  ch.has_lm_head = has_lm_head;
  return ch;
}

// MoE dispatch/combine left on the critical path. Without overlap all of it. Shared-expert
// overlap runs the shared experts beside the dispatch and combine (Megatron-Core
// moe_shared_expert_overlap). Megatron-Core's 1F1B all-to-all overlap (overlap_moe_expert_
// parallel_comm) merges one micro-batch's forward with another's backward, layer by layer
// (merge_ep_phases); what hides slows that compute by the SM-sharing factor.
// EP traffic of `comm_s` run beside `beside_s` of compute: what outlasts the compute, plus the
// compute's slow-down while it shares the SMs with the communication kernels.
double exposed_beside_s(double comm_s, double beside_s, double slowdown) {
  const double hidden = std::min(comm_s, beside_s);
  return comm_s - hidden + hidden * slowdown;
}

// A pass's kernel time on each side of its EP exchanges, with the pass's host bound spread over
// both in proportion (an eager host launches the two passes' kernels in the merged order; the
// dropless wait stays outside, as the other pass's queued kernels keep the GPU busy through it).
struct PassSides {
  double attention_s = 0, expert_s = 0, combine_node_s = 0;
};
PassSides pass_sides(const PassTimes& t) {
  const double kernels = t.attention_side_kernels_s + t.expert_side_kernels_s + t.combine_node_kernels_s;
  const double scale = kernels > 0 ? (t.compute_s - t.host_wait_s) / kernels : 0.0;
  return {t.attention_side_kernels_s * scale, t.expert_side_kernels_s * scale, t.combine_node_kernels_s * scale};
}

// The combine's exchange and its node's kernels, serial on the communication stream, beside
// `beside_s` of the other pass's compute: what that chain leaves exposed beyond the node's
// kernels, which the pass's compute time already holds. Not below 0: where the chain hides,
// the kernels' move off the compute stream is not credited.
double exposed_combine_chain_s(double exchange_s, double node_s, double beside_s, double slowdown) {
  return std::max(0.0, exposed_beside_s(exchange_s + node_s, beside_s, slowdown) - node_s);
}

// Megatron-Core's merged step hides an MTP layer's forward combine behind nothing: the module's
// post-process node (its output layer and loss, on the compute stream) waits for the combine,
// and the other pass's attention backward only follows it (model_chunk_schedule_plan.py
// TransformerLayerSchedulePlan.run: f.moe_combine.forward, f.mtp_post_process.forward, then
// b.post_attn.backward, b.attn.backward). What that adds to one MTP forward's merged exposure:
// the combine's exchange whole, less what its phase left exposed (merge_ep_phases).
double mtp_combine_unhidden_s(const Context& c, const LayerPasses& lp) {
  const LayerKind kind = layer_kind(c.job.model, c.job.model.num_hidden_layers);
  for (const KindPasses& k : lp.kinds) {
    if (k.kind != kind) continue;
    const PassSides fs = pass_sides(k.fwd), bs = pass_sides(k.bwd);
    return k.fwd.second_exchange_s - exposed_combine_chain_s(k.fwd.second_exchange_s, fs.combine_node_s,
                                                             bs.attention_s, c.ep_overlap_slowdown);
  }
  return 0.0;
}

void ep_exposed(const Context& c, const PassTimes& f, const PassTimes& b, ChunkCosts& ch) {
  const SystemSpec& sys = c.job.system;
  if (sys.overlap_moe_expert_parallel_comm) {
    // The merged phases already hide the exchanges behind the other pass's host-bound time
    // (pass_sides spreads the host bound over both sides).
    ch.fwd_ep_exposed_s = f.ep_merged_exposed_s;
    ch.bwd_ep_exposed_s = b.ep_merged_exposed_s;
  } else if (sys.moe_shared_expert_overlap) {
    // The token-count gather runs in the dispatcher's preprocess, before the shared experts start.
    ch.fwd_ep_exposed_s =
        after_host_slack_s(exposed_beside_s(f.ep_exchange_s(), f.shared_expert_s, c.ep_overlap_slowdown), f) +
        f.ep_serial_comm_s;
    ch.bwd_ep_exposed_s =
        after_host_slack_s(exposed_beside_s(b.ep_exchange_s(), b.shared_expert_s, c.ep_overlap_slowdown), b) +
        b.ep_serial_comm_s;
  } else {
    ch.fwd_ep_exposed_s = after_host_slack_s(f.ep_comm_s(), f);
    ch.bwd_ep_exposed_s = after_host_slack_s(b.ep_comm_s(), b);
  }
  // A pass the merged schedule runs alone (warm-up, cool-down) has nothing to hide behind but
  // its own host slack.
  ch.fwd_ep_alone_s = sys.overlap_moe_expert_parallel_comm ? after_host_slack_s(f.ep_comm_s(), f) : ch.fwd_ep_exposed_s;
  ch.bwd_ep_alone_s = sys.overlap_moe_expert_parallel_comm ? after_host_slack_s(b.ep_comm_s(), b) : ch.bwd_ep_exposed_s;
}

}  // namespace

// Megatron-Core's merged pair (model_chunk_schedule_plan.py run) starts by waiting, on the
// compute stream, for the two pipeline receives its passes need (pre_forward, pre_backward wait
// the handles), and the previous pair posted them only as it ended (post_forward,
// post_backward: send_forward_recv_forward and send_backward_recv_backward, asynchronous under
// overlap_p2p_comm, one after the other on the pipeline group's NCCL stream; schedules.py). So
// both transfers run between the two pairs, hidden only by the previous pair's tail: the
// delayed attention weight gradients of its first layer (attn.backward_dw). Outside the merged
// step a forward and a backward alternate, so each receive has a whole pass to arrive.
double merged_pair_receive_wait_s(const Context& c, const PassTimes& b, int layers) {
  const JobSpec& job = c.job;
  if (layers <= 0 || job.parallel.pipeline_model_parallel_size <= 1) return 0.0;
  const CollGroupShape peers = group_shape(2, pipeline_peer_stride(job), nvlink_domain_gpus(job.cluster));
  const double transfer_s = collective_time_s(CollOp::SendRecv, pipeline_p2p_bytes(job), peers, job.cluster, c.nccl);
  const double tail_s = b.attention_wgrad_s / layers;
  return std::max(0.0, 2.0 * transfer_s - tail_s);
}

double after_host_slack_s(double exposed_s, const PassTimes& t) {
  return std::max(0.0, exposed_s - t.host_slack_s);
}

// Megatron-Core's merged 1F1B step for one layer (model_chunk_schedule_plan.py
// TransformerLayerSchedulePlan.run) runs four phases, each one stream's exchange beside the
// other stream's compute, with an event between phases:
//   backward's combine-gradient exchange | forward's attention side (attention, router, permute)
//   forward's dispatch                   | backward's expert side
//   backward's dispatch-gradient exchange| forward's expert side
//   forward's combine                    | backward's attention side
// so an exchange hides only behind the compute of its own phase, not behind the whole other
// pass. The combine node runs on the communication stream: its kernels (the unpermute, the
// MLP's bias-dropout-add; backward, their gradients) extend the combine's exchange there. Sets
// each pass's ep_merged_exposed_s: its exchanges' time beyond their phase's compute (with the
// SM-sharing slow-down of what hides), and its EP collectives on the compute stream (the
// token-count all-gather runs in the attention node, on the compute stream), all exposed.
void merge_ep_phases(const Context& c, PassTimes& f, PassTimes& b) {
  const PassSides fs = pass_sides(f), bs = pass_sides(b);
  const double slow = c.ep_overlap_slowdown;
  f.ep_merged_exposed_s = exposed_beside_s(f.first_exchange_s, bs.expert_s, slow) +
                          exposed_combine_chain_s(f.second_exchange_s, fs.combine_node_s, bs.attention_s, slow) +
                          f.ep_serial_comm_s;
  b.ep_merged_exposed_s = exposed_combine_chain_s(b.first_exchange_s, bs.combine_node_s, fs.attention_s, slow) +
                          exposed_beside_s(b.second_exchange_s, fs.expert_s, slow) + b.ep_serial_comm_s;
}

LayerPasses time_layer_passes(const Context& c) {
  const JobSpec& job = c.job;
  LayerPasses p;
  for (const LayerKind& k : layer_kinds(job.model)) {
    const double fwd_host_s = host_s_per_launch(c, k.moe, PassDirection::Forward);
    const double bwd_host_s = host_s_per_launch(c, k.moe, PassDirection::Backward);
    KindPasses kp{k, time_ops(c, layer_forward_ops(job, k), fwd_host_s),
                  time_ops(c, layer_backward_ops(job, k), bwd_host_s)};
    // Recompute reruns forward code (its Python included) inside the backward.
    kp.bwd += time_ops(c, layer_recompute_ops(job, k), fwd_host_s);
    merge_ep_phases(c, kp.fwd, kp.bwd);
    p.kinds.push_back(kp);
  }
  p.layer_fwd = p.kinds.front().fwd;
  p.layer_bwd = p.kinds.front().bwd;
  const double fwd_host_s = host_s_per_launch(c, false, PassDirection::Forward);
  const double bwd_host_s = host_s_per_launch(c, false, PassDirection::Backward);
  p.embedding_fwd = time_ops(c, embedding_forward_ops(job), fwd_host_s);
  p.embedding_bwd = time_ops(c, embedding_backward_ops(job), bwd_host_s);
  p.head_fwd = time_ops(c, lm_head_forward_ops(job), fwd_host_s);
  p.head_bwd = time_ops(c, lm_head_backward_ops(job), bwd_host_s);
  if (job.model.num_nextn_predict_layers > 0) {
    p.mtp_projection_fwd = time_ops(c, mtp_projection_forward_ops(job), fwd_host_s);
    p.mtp_projection_bwd = time_ops(c, mtp_projection_backward_ops(job), bwd_host_s);
  }
  return p;
}

ChunkCosts pass_costs(const Context& c, const PassTimes& f, const PassTimes& b, const TpOverlapConfig& ov) {
  ChunkCosts ch = pass_costs(f, b, ov);
  ep_exposed(c, f, b, ch);
  return ch;
}

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

std::vector<std::vector<ChunkCosts>> stage_chunk_costs(const Context& c, const LayerPasses& passes,
                                                       const TpOverlapConfig& ov) {
  const int pp = c.job.parallel.pipeline_model_parallel_size;
  const int vpp = c.job.parallel.virtual_pipeline_model_parallel_size;
  std::vector<std::vector<ChunkCosts>> stages;
  int first_layer = 0;
  for (int s = 0; s < pp; ++s) {
    std::vector<ChunkCosts> chunks;
    for (int v = 0; v < vpp; ++v) {
      const auto layers = static_cast<int>(layers_in_chunk(c.job, s, v));
      ChunkCosts ch = chunk_cost(c, passes, ov, first_layer_in_chunk(c.job, s, v), layers, s == 0 && v == 0,
                                 s == pp - 1 && v == vpp - 1);
      ch.dp_buckets = dp_buckets_of_chunk(c, ch, s, v);
      ch.first_layer = first_layer;
      first_layer += layers;
      chunks.push_back(ch);
    }
    stages.push_back(std::move(chunks));
  }
  return stages;
}

}  // namespace megasim
