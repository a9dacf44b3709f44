// Memory per GPU. Activations follow Korthikanti et al. 2022 (formulas.md), whose 34·s·b·h term
// is rebuilt from its parts so that GQA, FFN size, gated MLPs and PTB change it correctly:
//   attention  3sbh + 4sbq + 4sb·g·d  (+5·a·s·s_att·b unless flash/selective)   [11sbh for MHA]
//   MLP        3sbh + 4sbf (gated: 3sbh + 6sbf)                                 [19sbh for f=4h]
//   norms      2sbh each (two per layer; PTB has one and saves its GEMM input once)
// With TP+SP everything is divided by t; without SP the 10sbh of norm inputs, the QKV/FC1 inputs
// and the dropout masks stay replicated (Korthikanti: sbh(10 + 24/t + 5as/(ht))). A dropout
// probability of 0 keeps no mask (torch skips the kernel), and the attention probabilities are
// then saved once instead of twice.
#include "megasim/model/memory.hpp"

#include <algorithm>

#include "megasim/model/params.hpp"

namespace megasim {
namespace {
double dd(std::int64_t v) { return static_cast<double>(v); }
}  // namespace

namespace {

// The modules selective recompute replays (training.recompute_modules); none without it.
RecomputeModules recomputed_modules(const JobSpec& job) {
  if (job.training.recompute == Recompute::Selective) return job.training.recompute_modules;
  return RecomputeModules{false, false, false, false, false, false, false};
}

// Bytes per element of a GEMM input kept for the weight gradient: the FP8 copy Transformer
// Engine cast under FP8, else the 16-bit tensor.
double fp8_saved_input_bytes(const JobSpec& job) {
  return job.training.precision == Precision::Fp8 ? 1.0 : 2.0;
}

// Bytes per logit at the loss's peak, the 16-bit logits counted:
//   fused, unfused: Megatron's vocab-parallel loss upcasts the logits (calculate_logits_max's
//     .float(), core/tensor_parallel/cross_entropy.py) and saves the FP32 softmax for its
//     backward, the 16-bit logits beside it while it runs: 2 + 4 (torchtitan's F.cross_entropy,
//     filed under unfused, is not in place and peaks higher; docs/limitations.md);
//   te: Transformer Engine's Triton kernels write the gradient into the 16-bit logits in place
//     (transformer_engine/pytorch/triton/cross_entropy.py): 2;
//   xentropy: flash-attn's CrossEntropyLoss saves the 16-bit logits and a row log-sum-exp, and
//     its backward writes a new 16-bit gradient (inplace_backward false, its default): 2 + 2.
double loss_bytes_per_logit(CrossEntropyImpl impl) {
  switch (impl) {
    case CrossEntropyImpl::Fused:
    case CrossEntropyImpl::Unfused: return 6.0;
    case CrossEntropyImpl::Te: return 2.0;
    case CrossEntropyImpl::Xentropy: return 4.0;
  }
  return 6.0;  // not reached: the switch is exhaustive
}

// The parameters of the largest FSDP unit on one GPU: PyTorch FSDP wraps each
// transformer block as a unit (the pytorch-fsdp / torchtitan presets' auto-wrap), so a unit is
// the stage's largest layer (an MoE layer with this GPU's experts, or a dense one).
double largest_layer_parameters_per_gpu(const JobSpec& job) {
  const double dense = layer_parameters_per_gpu(job, false).total();
  return is_moe(job.model) ? std::max(dense, layer_parameters_per_gpu(job, true).total()) : dense;
}

}  // namespace

bool gradients_sharded(const JobSpec& job) {
  return job.parallel.zero_stage >= 2 &&
         (gradients_reduced_every_micro_batch(job) || micro_batches_per_pipeline(job) == 1);
}

double layer_activation_bytes(const JobSpec& job) { return layer_activation_bytes(job, 0); }

double layer_activation_bytes(const JobSpec& job, std::int64_t layer) {
  const ModelSpec& m = job.model;
  const double t = std::max(1, job.parallel.tensor_model_parallel_size);
  const double cp = std::max(1, job.parallel.context_parallel_size);
  const double s = dd(job.training.seq_length) / cp;
  const double b = dd(job.training.micro_batch_size);
  const double h = dd(m.hidden_size);
  const double a = dd(m.num_attention_heads);
  const double hd = dd(m.head_dim > 0 ? m.head_dim : m.hidden_size / m.num_attention_heads);
  const double g = dd(m.num_key_value_heads > 0 ? m.num_key_value_heads : m.num_attention_heads);
  const double q = a * hd;
  const double f = dd(m.intermediate_size > 0 ? m.intermediate_size : 4 * m.hidden_size);
  const double span = dd(is_sliding_layer(m, layer) ? std::min(*m.sliding_window, job.training.seq_length)
                                                     : job.training.seq_length);
  const bool sp = job.parallel.sequence_parallel && t > 1;
  const double sbh = s * b * h;

  if (job.training.recompute == Recompute::Full) return 2.0 * sbh / (sp ? t : 1.0);

  // Selective recompute by module (training.recompute_modules): what is recomputed is not kept.
  const RecomputeModules rec = recomputed_modules(job);
  // Replicated-without-SP part (norm inputs, QKV and FC1 inputs, dropout masks) and the rest.
  const int norms = m.use_parallel_residual ? 1 : 2;
  // Under FP8, Transformer Engine keeps the FP8 copy of each GEMM input it cast for the weight
  // gradient (1 byte: module/linear.py, layernorm_linear.py, grouped_linear.py save the quantized
  // input with only its column-wise usage) instead of the 16-bit tensor.
  const double gemm_input_bytes = fp8_saved_input_bytes(job);
  // The QKV and FC1 inputs are the norms' outputs: not kept when the norms are recomputed.
  const double gemm_inputs =
      rec.layernorm ? 0.0 : (m.use_parallel_residual ? 1.0 : 2.0) * gemm_input_bytes * sbh;
  // Two 1-byte dropout masks (attention and MLP branches).
  const double masks = m.hidden_dropout > 0 ? 2.0 * sbh : 0.0;
  const double replicated = 2.0 * sbh * norms + gemm_inputs + masks;
  // Q, K, V and context (16-bit); MLA's up-projected Q, K, V are not kept under mla_up_proj.
  double sharded = rec.mla_up_proj && is_mla(m) ? s * b * 2.0 * q : s * b * (4.0 * q + 4.0 * g * hd);
  // Under FP8 with delayed scaling the attention projection keeps its FP8 copy of the context
  // beside the attention's own 16-bit output; under any other recipe Megatron-Core has it keep
  // the 16-bit input it shares with the attention (set_save_original_input, attention.py).
  if (gemm_input_bytes < 2.0 && job.training.fp8_recipe == Fp8Recipe::Delayed) sharded += s * b * gemm_input_bytes * q;
  // QK norm keeps its inputs, the projected Q and K before normalisation (TE's RMSNorm saves its
  // input for the backward; its per-row inverse RMS is negligible).
  if (has_qk_norm(m)) sharded += s * b * 2.0 * (q + g * hd);
  if (is_moe_layer(m, layer)) {
    if (!rec.moe) sharded += moe_mlp_activation_bytes(job, s * b);
  } else if (!rec.mlp) {
    // FC1 out (+gate, 16-bit: the activation's backward reads it) and act out (FC2's input).
    sharded += ((m.gated_mlp ? 4.0 : 2.0) + gemm_input_bytes) * s * b * f;
  }
  // MLA's compressed query and key/value latents (inputs of the up-projections, which every TP
  // rank computes in full: the down-projections are duplicated), on this rank's sequence shard
  // under SP (the up-projections gather them and save the shard).
  double latents = 0;
  if (is_mla(m)) {
    latents = 2.0 * s * b * dd(m.mla.q_lora_rank + m.mla.kv_lora_rank + m.mla.qk_rope_head_dim) / (sp ? t : 1.0);
  }
  const bool flash = job.system.attention_kernel != AttentionKernel::Unfused;
  if (!flash && !rec.core_attn) {
    // softmax out (2), dropout mask (1), dropout out (2); without dropout the softmax out only
    sharded += (m.attention_dropout > 0 ? 5.0 : 2.0) * a * s * span * b;
  }
  return (sp ? replicated / t : replicated) + sharded / t + latents;
}

double moe_mlp_activation_bytes(const JobSpec& job, double tokens) {
  const ModelSpec& m = job.model;
  const MoeSpec& e = m.moe;
  const double h = dd(m.hidden_size);
  const double t = std::max(1, job.parallel.tensor_model_parallel_size);
  const double etp = expert_tensor_parallel_size(job);
  const RecomputeModules rec = recomputed_modules(job);
  // FC1 out (+gate, 16-bit) and activation out (FC2's input, FP8 under FP8); the activation out
  // is recomputed under moe_act.
  const double in_bytes = fp8_saved_input_bytes(job);
  double per_width = (m.gated_mlp ? 4.0 : 2.0) + (rec.moe_act ? 0.0 : in_bytes);
  // Without bias_activation_fusion the eager chain (moe_ops.cpp unfused_activation) keeps more
  // for autograd: the activation's output for the product with the probabilities (2 bytes);
  // gated, also SiLU's output and `x_linear + offset` for their product (2 + 2). Not kept when
  // moe_act recomputes the chain.
  if (!job.system.fused_kernels && !rec.moe_act) per_width += m.gated_mlp ? 6.0 : 2.0;
  // Routed: every token goes to top-k experts; a rank keeps, for its share of those copies, the
  // permuted input (FC1's wgrad operand) and its expert's FC1 and activation outputs. Expressed
  // per TP rank (the caller divides by TP): ETP ranks share each copy's width, and each rank
  // holds ETP/TP of the copies.
  const double copies = tokens * dd(e.experts_per_token);
  double bytes = copies * (in_bytes * h * etp + per_width * dd(e.expert_intermediate_size));
  bytes += tokens * dd(e.num_experts) * 4.0 * t;  // router logits and probabilities (FP32, every rank)
  // Shared experts: a TP-parallel MLP, not kept under shared_experts.
  if (!rec.shared_experts) {
    bytes += (m.gated_mlp ? 6.0 : 4.0) * tokens * dd(e.shared_expert_intermediate_size);
  }
  return bytes;
}

double stage_layer_activation_bytes(const JobSpec& job, int stage) {
  const ModelSpec& m = job.model;
  if (!is_moe(m) && m.layer_is_sliding.empty()) return layer_activation_bytes(job, 0);
  double sum = 0;
  std::int64_t n = 0;
  for (int v = 0; v < std::max(1, job.parallel.virtual_pipeline_model_parallel_size); ++v) {
    const std::int64_t first = first_layer_in_chunk(job, stage, v);
    for (std::int64_t i = first; i < first + layers_in_chunk(job, stage, v); ++i, ++n) {
      sum += layer_activation_bytes(job, i);
    }
  }
  return n > 0 ? sum / dd(n) : layer_activation_bytes(job, 0);
}

double activation_layer_units_in_flight(const JobSpec& job, int stage) {
  const int p = std::max(1, job.parallel.pipeline_model_parallel_size);
  const int v = std::max(1, job.parallel.virtual_pipeline_model_parallel_size);
  const double layers = dd(layers_on_stage(job, stage));
  const std::int64_t micro = micro_batches_per_pipeline(job);
  // Megatron-Core's merged 1F1B runs one more warm-up forward, so one more chunk's activations
  // are held (workload/schedule.hpp).
  const int extra = extra_warmup_passes(job);
  if (p == 1) return layers * dd(std::min<std::int64_t>(1 + extra, micro));  // one micro-batch at a time
  if (v == 1) return layers * dd(std::min<std::int64_t>(p - stage + extra, micro));
  // Megatron interleaved warm-up: (p - stage - 1)*2 + (v - 1)*p chunks, plus the one in
  // flight; each chunk holds layers/v layers. Stage 0: layers*p*(1 + (p-1)/(p*v)).
  const std::int64_t chunks = std::min<std::int64_t>(
      static_cast<std::int64_t>((p - stage - 1) * 2 + (v - 1) * p + 1 + extra), micro * v);
  return layers / v * dd(chunks);
}

PeakMemory peak_memory_per_gpu(const JobSpec& job, const BufferSizes& buffers) {
  const int pp = std::max(1, job.parallel.pipeline_model_parallel_size);
  PeakMemory peak{0, memory_per_gpu(job, 0, buffers)};
  // Stage 1, and the last stage when it is another one (PP 2: stage 1 is the last).
  const int others[] = {1, pp - 1};
  const int count = pp > 2 ? 2 : pp - 1;
  for (int i = 0; i < count; ++i) {
    const int stage = others[i];
    MemoryBreakdown m = memory_per_gpu(job, stage, buffers);
    if (m.total_bytes() > peak.breakdown.total_bytes()) peak = {stage, m};
  }
  return peak;
}

MemoryBreakdown memory_per_gpu(const JobSpec& job, int stage, const BufferSizes& buf) {
  const ModelSpec& m = job.model;
  const int t = std::max(1, job.parallel.tensor_model_parallel_size);
  const int p = std::max(1, job.parallel.pipeline_model_parallel_size);
  const int cp = std::max(1, job.parallel.context_parallel_size);
  const double dp = dd(std::max<std::int64_t>(1, job.parallel.data_parallel_size));
  const int zero = job.parallel.zero_stage;
  const StageParameters sp_params = stage_parameters_per_gpu(job, stage);
  const double params = sp_params.dense;
  const double experts = sp_params.expert;
  // ZeRO shards over the data-parallel group (with CP, Megatron shards over DP x CP); routed
  // experts' states over the expert data-parallel group (Megatron-Core's distributed optimizer).
  const double shard = dp * cp;
  const double expert_shard = dd(expert_data_parallel_size(job));

  MemoryBreakdown r;
  const double grad_b = job.system.grad_reduce_in_fp32 ? 4.0 : 2.0;
  // Gradients are resident until they are reduced. Reduced once per step, after each chunk's
  // last backward (MegaScale's ZeRO-2, section 3.2; Megatron's distributed optimizer; FSDP
  // under no_sync), every chunk's full gradients accumulate side by side with the activations;
  // see gradients_sharded.
  const bool grads_sharded = gradients_sharded(job);
  r.gradients_bytes =
      params * grad_b / (grads_sharded ? shard : 1.0) + experts * grad_b / (grads_sharded ? expert_shard : 1.0);
  if (job.system.fsdp_staging != FsdpStaging::None) {
    // PyTorch FSDP: the sharded FP32 parameter is the optimizer's master weight (4 B), cast to
    // BF16 as it is gathered; Adam's two moments (8 B) sit beside it on the same shard. Under
    // FULL_SHARD (ZeRO-3) the gathered BF16 copies are transient (the buffers below); below it
    // (SHARD_GRAD_OP, NO_SHARD) the unsharded BF16 parameters stay from forward to backward.
    const double sh = zero >= 1 ? shard : 1.0;
    const double esh = zero >= 1 ? expert_shard : 1.0;
    const double unsharded_b = zero >= 3 ? 0.0 : 2.0;
    r.weights_bytes = params * (4.0 / sh + unsharded_b) + experts * (4.0 / esh + unsharded_b);
    r.optimizer_states_bytes = params * 8.0 / sh + experts * 8.0 / esh;
  } else {
    // 16-bit weights; fp8 keeps bf16 weights and casts per GEMM (Transformer Engine).
    r.weights_bytes =
        params * 2.0 / (zero >= 3 ? shard : 1.0) + experts * 2.0 / (zero >= 3 ? expert_shard : 1.0);
    // Adam and LAMB: fp32 master weights + first and second moments = 12 B/param.
    r.optimizer_states_bytes =
        params * 12.0 / (zero >= 1 ? shard : 1.0) + experts * 12.0 / (zero >= 1 ? expert_shard : 1.0);
  }

  // Activations: layers in flight, plus the extra first/last-stage tensors.
  double act = stage_layer_activation_bytes(job, stage) * activation_layer_units_in_flight(job, stage);
  const double s = dd(job.training.seq_length) / cp;
  const double b = dd(job.training.micro_batch_size);
  const double h = dd(m.hidden_size);
  const bool sp = job.parallel.sequence_parallel && t > 1;
  const double sbh = s * b * h;
  const double in_flight_mb = p == 1 ? 1.0 : dd(p - stage);
  if (stage == 0 && m.hidden_dropout > 0) act += sbh / (sp ? t : 1) * in_flight_mb;  // embedding dropout mask
  double head = 0;  // the logits and the loss's tensors of the micro-batch being run
  if (stage == p - 1) {
    const double v_local = dd(padded_vocab_size(m, t)) / t;
    act += 2.0 * sbh / (sp ? t : 1);  // final norm input
    head = s * b * v_local * loss_bytes_per_logit(job.system.cross_entropy_implementation);
  }
  // The layer being recomputed holds its full working set during its own backward, which
  // starts once the loss's backward and the LM head's have run and freed the logits: the
  // larger of the two is the peak, not their sum.
  double working = 0;
  if (job.training.recompute == Recompute::Full) {
    JobSpec one = job;
    one.training.recompute = Recompute::Selective;
    working = layer_activation_bytes(one);
  }
  const double transient = std::max(working, head);
  act += transient;
  r.activations_bytes = act;

  // Buffers.
  int communicators = 1;  // DP
  if (t > 1) ++communicators;
  if (p > 1) communicators += 2;  // PP send/recv + embedding-group
  if (cp > 1) ++communicators;
  double buffers = buf.cuda_context_bytes + buf.cublas_workspace_bytes +
                   communicators * buf.nccl_bytes_per_communicator;
  // Send and receive buffers of the boundary activations and of their gradients: with sequence
  // parallelism each rank's are its 1/t slice (what it sends, step_costs' p2p_bytes); without,
  // Megatron's scatter-gather sends 1/t but all-gathers the whole tensor on arrival.
  if (p > 1) buffers += 4.0 * sbh / (sp ? t : 1) * 2.0;
  if (job.system.fsdp_staging != FsdpStaging::None) {
    // PyTorch FSDP moves whole units, not buckets. FULL_SHARD gathers a unit's 16-bit
    // parameters for its forward and again for its backward, the next unit's in flight beside
    // it (FSDP1's limit_all_gathers allows two; FSDP2 prefetches one ahead); the root unit (the
    // embedding, the final norm and an untied head) is not resharded after the forward.
    const double unit = largest_layer_parameters_per_gpu(job);
    if (zero >= 3) {
      buffers += 2.0 * unit * 2.0;
      if (stage == 0) buffers += embedding_parameters_per_gpu(job) * 2.0;
      if (stage == p - 1) buffers += lm_head_parameters_per_gpu(job) * 2.0;
    }
    if (grads_sharded) {
      // A unit's 16-bit gradient builds up during its backward, beside the recomputed layer's
      // working set; once the unit's backward is done (its working set freed) FSDP casts it to
      // the reduce dtype for the reduce-scatter (no copy when that is 16-bit). The peak is the
      // largest of the loss's tensors, working set + gradient, and gradient + copy; what
      // exceeds the activations' transient is counted here. Against one rank of FSDP1 run for
      // real (bench/data/h100-fsdp1-rank-replay.json, MPT-30B and MPT-13B allocated peaks).
      // The replay's collectives finish at once; on real ranks the copy is record_stream'd to
      // the reduce-scatter and can overlap the start of the next unit's recompute.
      const double copy = grad_b > 2.0 ? grad_b : 0.0;
      const double peak = std::max({head, working + 2.0 * unit, (2.0 + copy) * unit});
      buffers += peak - transient;
    }
  } else {
    if (grads_sharded) buffers += 2.0 * buf.grad_bucket_elements * grad_b;  // unsharded grad buckets
    if (zero >= 3) buffers += 2.0 * buf.grad_bucket_elements * 2.0;     // gathered param buckets
  }
  r.buffers_bytes = buffers;
  return r;
}

}  // namespace megasim
