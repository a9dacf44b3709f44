// Rules that tie sections together: the parallel plan must tile the cluster, the model and the
// batch. Each rule follows Megatron-LM's own argument checks so that a config megasim accepts is
// one Megatron would run. Memory fit is deliberately not checked here (the planner reports it).
#include <algorithm>
#include <string>

#include "config/parse_parts.hpp"
#include "megasim/core/error.hpp"

namespace megasim::config_detail {

namespace {

std::string s(std::int64_t v) { return std::to_string(v); }

void check_cluster_shape(const JobSpec& job) {
  const auto& c = job.cluster;
  const auto& p = job.parallel;
  if (c.num_gpus > c.gpus_per_node && c.num_gpus % c.gpus_per_node != 0) {
    throw InputError("cluster.num_gpus", s(c.num_gpus) + " GPUs is not a whole number of " +
                                             s(c.gpus_per_node) + "-GPU nodes");
  }
  const int domain = nvlink_domain_gpus(c);
  if (c.num_gpus > domain && c.num_gpus % domain != 0) {
    throw InputError("cluster.num_gpus", s(c.num_gpus) + " GPUs is not a whole number of " + s(domain) +
                                             "-GPU NVLink domains (cluster.nvlink_domain_size)");
  }
  if (p.tensor_model_parallel_size > domain) {
    throw InputError("parallel.tensor_model_parallel_size",
                     "TP " + s(p.tensor_model_parallel_size) + " exceeds the NVLink domain of " + s(domain) +
                         " GPUs (tensor parallelism must stay inside one NVLink domain)");
  }
  if (domain % p.tensor_model_parallel_size != 0) {
    throw InputError("parallel.tensor_model_parallel_size",
                     "TP " + s(p.tensor_model_parallel_size) + " does not divide the NVLink domain of " + s(domain) +
                         " GPUs (a TP group would straddle two domains)");
  }
  const std::int64_t model_gpus = static_cast<std::int64_t>(p.tensor_model_parallel_size) *
                                  p.pipeline_model_parallel_size * p.context_parallel_size;
  if (c.num_gpus % model_gpus != 0) {
    throw InputError("cluster.num_gpus", s(c.num_gpus) + " GPUs is not divisible by TP*PP*CP = " +
                                             s(p.tensor_model_parallel_size) + "*" +
                                             s(p.pipeline_model_parallel_size) + "*" +
                                             s(p.context_parallel_size) + " = " + s(model_gpus));
  }
}

void check_heads(const JobSpec& job) {
  const int tp = job.parallel.tensor_model_parallel_size;
  if (job.model.num_attention_heads % tp != 0) {
    throw InputError("parallel.tensor_model_parallel_size",
                     "TP " + s(tp) + " does not divide num_attention_heads " + s(job.model.num_attention_heads));
  }
  if (job.model.num_key_value_heads % tp != 0) {
    throw InputError("parallel.tensor_model_parallel_size",
                     "TP " + s(tp) + " does not divide num_key_value_heads " + s(job.model.num_key_value_heads) +
                         " (Megatron shards whole query groups)");
  }
}

// Layers per pipeline stage, Megatron-Core style: optional explicit first/last stage counts,
// the remainder split evenly over the middle stages; with interleaving each stage's layers are
// cut into VPP equal model chunks.
void check_layers(const JobSpec& job) {
  const auto& p = job.parallel;
  if (!p.layout_layers.empty()) {
    const char* path = "parallel.pipeline_model_parallel_layout";
    if (p.account_for_embedding_in_pipeline_split || p.account_for_loss_in_pipeline_split ||
        p.decoder_first_pipeline_num_layers || p.decoder_last_pipeline_num_layers) {
      throw InputError(path, "cannot be combined with account_for_*_in_pipeline_split or "
                             "decoder_first/last_pipeline_num_layers (the layout places every layer)");
    }
    return;  // parse_pipeline_layout checked it against PP and the model
  }
  const std::int64_t layers = job.model.num_hidden_layers;
  const int pp = p.pipeline_model_parallel_size;
  const int vpp = p.virtual_pipeline_model_parallel_size;
  if (vpp > 1 && pp == 1) {
    throw InputError("parallel.virtual_pipeline_model_parallel_size",
                     "interleaving (VPP " + s(vpp) + ") needs pipeline_model_parallel_size > 1");
  }
  const auto& first = p.decoder_first_pipeline_num_layers;
  const auto& last = p.decoder_last_pipeline_num_layers;
  const bool emb = p.account_for_embedding_in_pipeline_split;
  const bool loss = p.account_for_loss_in_pipeline_split;
  if (emb || loss) {
    // Megatron-Core (TransformerConfig.__post_init__, get_num_layers_to_build): the accounted
    // layers and an explicit first/last stage are exclusive; L plus one slot for each accounted
    // part must split evenly into PP x VPP model chunks.
    const char* flag = emb ? "parallel.account_for_embedding_in_pipeline_split"
                           : "parallel.account_for_loss_in_pipeline_split";
    if (first || last) {
      throw InputError(flag, "cannot be combined with decoder_first/last_pipeline_num_layers (Megatron-Core's rule)");
    }
    const std::int64_t slots = layers + (emb ? 1 : 0) + (loss ? 1 : 0);
    if (slots % (static_cast<std::int64_t>(pp) * vpp) != 0) {
      throw InputError(flag, "num_hidden_layers " + s(layers) + " plus the accounted embedding/loss (" + s(slots) +
                                 ") does not split evenly into PP*VPP = " + s(pp) + "*" + s(vpp) + " model chunks");
    }
    // The first chunk gives a slot to the embedding, the last to the loss (one chunk: both).
    const std::int64_t per_chunk = slots / pp / vpp;
    const bool one_chunk = pp * vpp == 1;
    const std::int64_t first_chunk = per_chunk - (emb ? 1 : 0) - (one_chunk && loss ? 1 : 0);
    const std::int64_t last_chunk = per_chunk - (loss ? 1 : 0) - (one_chunk && emb ? 1 : 0);
    if (std::min(first_chunk, last_chunk) < 1) {
      throw InputError(flag, "the first or last model chunk would hold no transformer layer (" + s(per_chunk) +
                                 " slots per chunk, one taken by the embedding or the loss)");
    }
    return;
  }
  if (!first && !last) {
    if (layers % pp != 0) {
      throw InputError("parallel.pipeline_model_parallel_size",
                       "num_hidden_layers " + s(layers) + " does not split evenly over PP " + s(pp) + " stages");
    }
    if ((layers / pp) % vpp != 0) {
      throw InputError("parallel.virtual_pipeline_model_parallel_size",
                       s(layers / pp) + " layers per pipeline stage do not split into VPP " + s(vpp) +
                           " equal model chunks (the interleaved schedule needs layers per stage divisible by VPP)");
    }
    return;
  }
  const std::string where = first ? "parallel.decoder_first_pipeline_num_layers"
                                  : "parallel.decoder_last_pipeline_num_layers";
  const int fixed_stages = (first ? 1 : 0) + (last ? 1 : 0);
  if (pp < 2) {
    throw InputError(where, "an uneven first/last stage needs more pipeline stages (PP is " + s(pp) + ")");
  }
  const std::int64_t rest = layers - first.value_or(0) - last.value_or(0);
  const int middle = pp - fixed_stages;
  if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && (rest == 0 || rest % middle != 0))) {
    throw InputError(where, "the remaining " + s(rest) + " of " + s(layers) + " layers must split evenly (and "
                            "non-empty) over the " + s(middle) + " middle pipeline stages");
  }
  for (const auto& [count, path] : {std::pair{first, "parallel.decoder_first_pipeline_num_layers"},
                                    std::pair{last, "parallel.decoder_last_pipeline_num_layers"}}) {
    if (count && *count % vpp != 0) {
      throw InputError(path, s(*count) + " layers do not split into VPP " + s(vpp) + " equal model chunks");
    }
  }
  if (middle > 0 && (rest / middle) % vpp != 0) {
    throw InputError("parallel.virtual_pipeline_model_parallel_size",
                     s(rest / middle) + " layers per middle stage do not split into VPP " + s(vpp) + " model chunks");
  }
}

void check_batch(const JobSpec& job) {
  const auto& p = job.parallel;
  const auto& t = job.training;
  const std::int64_t per_step = t.micro_batch_size * p.data_parallel_size;
  if (t.global_batch_size % per_step != 0) {
    throw InputError("training.global_batch_size",
                     "global_batch_size " + s(t.global_batch_size) + " is not divisible by micro_batch_size * DP = " +
                         s(t.micro_batch_size) + "*" + s(p.data_parallel_size) + " = " + s(per_step));
  }
  const std::int64_t m = t.global_batch_size / per_step;
  if (p.virtual_pipeline_model_parallel_size > 1 && m % p.pipeline_model_parallel_size != 0) {
    throw InputError("training.global_batch_size",
                     "the interleaved schedule (VPP " + s(p.virtual_pipeline_model_parallel_size) +
                         ") needs micro-batches per pipeline (" + s(m) + ") divisible by PP " +
                         s(p.pipeline_model_parallel_size) + " (Megatron's rule)");
  }
  const int cp = p.context_parallel_size;
  if (cp > 1 && t.seq_length % (2 * cp) != 0) {
    throw InputError("training.seq_length",
                     "seq_length " + s(t.seq_length) + " is not divisible by 2*CP = " + s(2 * cp) +
                         " (context parallelism splits each sequence into 2*CP chunks for causal load balance)");
  }
  const int tp = p.tensor_model_parallel_size;
  if (p.sequence_parallel && (t.seq_length / cp) % tp != 0) {
    throw InputError("training.seq_length",
                     "with sequence_parallel each rank's " + s(t.seq_length / cp) +
                         " tokens must be divisible by TP " + s(tp));
  }
}

// Rules between the training and system sections, independent of the parallel plan.
void check_precision_and_system(const JobSpec& job) {
  if (job.training.precision == Precision::Fp8 && !(job.cluster.gpu.peak_fp8_flops > 0)) {
    throw InputError("training.precision",
                     "fp8 needs FP8 tensor cores; GPU \"" + job.cluster.gpu.name + "\" has none (peak_fp8 unset)");
  }
  // MXFP8's block scales are Blackwell tensor-core formats (Transformer Engine runs the mxfp8
  // recipe on compute capability 10.0 and newer only).
  if (job.training.precision == Precision::Fp8 && job.training.fp8_recipe == Fp8Recipe::Mxfp8 &&
      job.cluster.gpu.architecture_sm < 100) {
    throw InputError("training.fp8_recipe", "mxfp8 needs a Blackwell GPU (compute capability 10.0+); GPU \"" +
                                                job.cluster.gpu.name + "\" is " +
                                                std::to_string(job.cluster.gpu.architecture_sm / 10) + "." +
                                                std::to_string(job.cluster.gpu.architecture_sm % 10));
  }
  // LAMB is modelled as Apex's FusedLAMB (the one LAMB MegaScale and Megatron-LM use); PyTorch
  // ships no LAMB to run foreach or per tensor.
  if (job.training.optimizer == Optimizer::Lamb && job.system.optimizer_implementation != OptimizerImpl::Fused) {
    throw InputError("system.optimizer_implementation",
                     "must be \"fused\" with training.optimizer = lamb (Apex FusedLAMB; PyTorch has no LAMB)");
  }
  if (job.system.dp_reduce_every_micro_batch && job.parallel.zero_stage < 2) {
    throw InputError("system.dp_reduce_every_micro_batch",
                     "needs parallel.zero_stage >= 2 (only sharded gradients are reduced every micro-batch)");
  }
  if (job.system.tp_fp8_forward_reduce_scatter &&
      (job.training.precision != Precision::Fp8 || !job.system.tp_overlap)) {
    throw InputError("system.tp_fp8_forward_reduce_scatter",
                     "needs training.precision = fp8 and system.tp_overlap = true (a userbuffers FP8 reduce-scatter)");
  }
}

// Mixture of Experts: Megatron-Core's rules for the expert grid (ETP x EP x EDP x PP over the
// same GPUs as TP x CP x DP x PP) and the MoE settings that need an MoE model.
void check_experts(const JobSpec& job) {
  const auto& p = job.parallel;
  const auto& moe = job.model.moe;
  const int ep = p.expert_model_parallel_size;
  const int etp = expert_tensor_parallel_size(job);
  if (!is_moe(job.model)) {
    if (ep > 1 || p.expert_tensor_parallel_size > 1) {
      throw InputError(ep > 1 ? "parallel.expert_model_parallel_size" : "parallel.expert_tensor_parallel_size",
                       "expert parallelism needs an MoE model; model \"" + job.model.name + "\" has no routed experts");
    }
    const auto& t = job.training;
    if (t.moe_router_force_load_balancing || t.moe_expert_capacity_factor || t.moe_routing_skew ||
        t.moe_aux_loss_coeff > 0 || t.moe_router_enable_expert_bias || t.moe_router_load_balancing_type ||
        t.moe_router_dtype) {
      throw InputError(t.moe_router_force_load_balancing ? "training.moe_router_force_load_balancing"
                       : t.moe_expert_capacity_factor    ? "training.moe_expert_capacity_factor"
                       : t.moe_routing_skew              ? "training.moe_routing_skew"
                       : t.moe_aux_loss_coeff > 0        ? "training.moe_aux_loss_coeff"
                       : t.moe_router_enable_expert_bias ? "training.moe_router_enable_expert_bias"
                       : t.moe_router_load_balancing_type ? "training.moe_router_load_balancing_type"
                                                          : "training.moe_router_dtype",
                       "routing settings need an MoE model; model \"" + job.model.name + "\" has no routed experts");
    }
    if (job.system.overlap_moe_expert_parallel_comm) {
      throw InputError("system.overlap_moe_expert_parallel_comm",
                       "needs an MoE model; model \"" + job.model.name + "\" has no routed experts");
    }
    return;
  }
  if (job.model.use_parallel_residual) {
    throw InputError("model.use_parallel_residual",
                     "the parallel transformer block is not modelled for an MoE model (its MLP is the MoE block)");
  }
  if (p.tensor_model_parallel_size > 1 && !p.sequence_parallel) {
    throw InputError("parallel.sequence_parallel",
                     "an MoE model with TP > 1 needs sequence parallelism (Megatron-Core's rule)");
  }
  if (moe.num_experts % ep != 0) {
    throw InputError("parallel.expert_model_parallel_size",
                     "EP " + s(ep) + " does not divide the " + s(moe.num_experts) + " routed experts");
  }
  if (etp > nvlink_domain_gpus(job.cluster)) {
    throw InputError("parallel.expert_tensor_parallel_size",
                     "ETP " + s(etp) + " exceeds the NVLink domain of " + s(nvlink_domain_gpus(job.cluster)) +
                         " GPUs (expert tensor parallelism must stay inside one NVLink domain)");
  }
  if (moe.expert_intermediate_size % etp != 0) {
    throw InputError("parallel.expert_tensor_parallel_size",
                     "ETP " + s(etp) + " does not divide the expert FFN width " + s(moe.expert_intermediate_size));
  }
  const std::int64_t grid = static_cast<std::int64_t>(etp) * ep * p.pipeline_model_parallel_size;
  if (job.cluster.num_gpus % grid != 0) {
    throw InputError("parallel.expert_model_parallel_size",
                     s(job.cluster.num_gpus) + " GPUs are not divisible by ETP*EP*PP = " + s(etp) + "*" + s(ep) + "*" +
                         s(p.pipeline_model_parallel_size) + " = " + s(grid) + " (Megatron-Core's expert grid)");
  }
  // Megatron-Core builds the expert grid in the same rank order as the dense one; with the
  // pipeline not outermost (pp-first: tp-cp-ep-pp-dp) its groups only match the dense
  // pipeline's when expert DP equals DP (parallel_state.py: "When not using pp-last rank
  // ordering, the data parallel size of the attention and moe layers must be the same").
  if (p.placement == PlacementOrder::PpFirst && p.pipeline_model_parallel_size > 1 &&
      expert_data_parallel_size(job) != p.data_parallel_size) {
    throw InputError("parallel.placement",
                     "pp-first with PP > 1 needs ETP*EP = TP*CP (expert DP " + s(expert_data_parallel_size(job)) +
                         " must equal DP " + s(p.data_parallel_size) + ", Megatron-Core's rule)");
  }
  if (job.system.overlap_moe_expert_parallel_comm) {
    if (const char* why = merged_a2a_overlap_refusal(job)) throw InputError("system.overlap_moe_expert_parallel_comm", why);
  }
  // moe_act under FP8 makes Megatron-Core keep the experts' FC2 input unquantized
  // (experts.py set_save_original_input), which TE's GroupedLinear refuses under delayed scaling.
  const auto& tr = job.training;
  if (tr.precision == Precision::Fp8 && tr.fp8_recipe == Fp8Recipe::Delayed && tr.recompute == Recompute::Selective &&
      tr.recompute_modules.moe_act) {
    throw InputError("training.recompute_modules",
                     "moe_act under fp8 needs a recipe other than delayed (Transformer Engine refuses "
                     "save_original_input with DelayedScaling)");
  }
  // Megatron-Core's own refusals (transformer_config.py __post_init__).
  const MoeDispatcher dispatcher = job.system.moe_token_dispatcher_type;
  if (job.system.moe_shared_expert_overlap && moe.shared_expert_intermediate_size > 0 &&
      dispatcher != MoeDispatcher::AllToAll) {
    throw InputError("system.moe_shared_expert_overlap", "works with the alltoall token dispatcher only (Megatron-Core's rule)");
  }
  if (dispatcher == MoeDispatcher::Flex && job.system.moe_flex_dispatcher_backend == FlexBackend::DeepEp &&
      job.training.moe_pad_expert_input_to_capacity) {
    throw InputError("training.moe_pad_expert_input_to_capacity",
                     "the flex dispatcher with DeepEP does not pad to the capacity (Megatron-Core's rule)");
  }
}

}  // namespace

void validate_and_derive(JobSpec& job, const ParallelInput& parallel) {
  auto& p = job.parallel;
  // Megatron turns sequence parallelism off (with a warning) when TP is 1: nothing to shard.
  p.sequence_parallel = parallel.sequence_parallel.value_or(true) && p.tensor_model_parallel_size > 1;
  if (parallel.pipeline_layout) {
    p.layout_layers = parse_pipeline_layout(*parallel.pipeline_layout, "parallel.pipeline_model_parallel_layout",
                                            job.model.num_hidden_layers, job.model.num_nextn_predict_layers,
                                            p.pipeline_model_parallel_size, p.virtual_pipeline_model_parallel_size);
  }
  check_cluster_shape(job);
  p.data_parallel_size = job.cluster.num_gpus / (static_cast<std::int64_t>(p.tensor_model_parallel_size) *
                                                 p.pipeline_model_parallel_size * p.context_parallel_size);
  if (parallel.data_parallel_size && *parallel.data_parallel_size != p.data_parallel_size) {
    throw InputError("parallel.data_parallel_size",
                     "is derived as num_gpus/(TP*PP*CP) = " + s(p.data_parallel_size) + ", but " +
                         s(*parallel.data_parallel_size) + " was given");
  }
  check_heads(job);
  check_layers(job);
  check_batch(job);
  check_precision_and_system(job);
  check_experts(job);
}

void validate_without_plan(JobSpec& job, const ParallelInput& parallel) {
  auto& p = job.parallel;
  p.tensor_model_parallel_size = 1;
  p.pipeline_model_parallel_size = 1;
  p.virtual_pipeline_model_parallel_size = 1;
  p.context_parallel_size = 1;
  p.decoder_first_pipeline_num_layers.reset();
  p.decoder_last_pipeline_num_layers.reset();
  p.account_for_embedding_in_pipeline_split = false;
  p.account_for_loss_in_pipeline_split = false;
  p.layout_layers.clear();
  // Kept as written: the planner applies it to every plan with TP > 1.
  p.sequence_parallel = parallel.sequence_parallel.value_or(true);
  job.training.micro_batch_size = 1;
  check_cluster_shape(job);
  p.data_parallel_size = job.cluster.num_gpus;
  check_precision_and_system(job);
}

}  // namespace megasim::config_detail
