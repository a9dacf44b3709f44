#include "megasim/report/job_explanation.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "megasim/core/units.hpp"
#include "megasim/model/flops.hpp"
#include "megasim/model/params.hpp"
#include "megasim/plan/placement.hpp"
#include "megasim/report/human_number.hpp"

namespace megasim {

void write_job_explanation(const JobSpec& job, const BufferSizes& buffers, std::int64_t max_rows, std::ostream& out) {
  const auto& m = job.model;
  const auto& p = job.parallel;
  const auto& t = job.training;
  const std::int64_t micro_batches = micro_batches_per_pipeline(job);
  out << "job: " << (job.name.empty() ? "(unnamed)" : job.name) << "\n";
  out << "model: " << m.name << ": h " << m.hidden_size << ", layers " << m.num_hidden_layers
      << ", heads " << m.num_attention_heads << " (kv " << m.num_key_value_heads << "), ffn "
      << m.intermediate_size << ", vocab " << m.vocab_size << (m.gated_mlp ? ", gated MLP" : "")
      << (m.use_parallel_residual ? ", parallel block" : "")
      << (m.sliding_window ? ", sliding window " + std::to_string(*m.sliding_window) : "")
      << ", dropout " << fmt::format("{:g}", m.hidden_dropout) << " hidden / " << fmt::format("{:g}", m.attention_dropout)
      << " attention\n";
  if (is_moe(m)) {
    const MoeSpec& e = m.moe;
    const auto moe_layers = std::count(e.layer_is_moe.begin(), e.layer_is_moe.end(), 1);
    out << "  experts: " << e.num_experts << " routed, top-" << e.experts_per_token << ", width "
        << e.expert_intermediate_size;
    if (e.shared_expert_intermediate_size > 0) out << ", shared width " << e.shared_expert_intermediate_size;
    if (e.num_groups > 0) out << ", " << e.topk_groups << " of " << e.num_groups << " groups per token";
    out << "; " << moe_layers << " MoE and " << m.num_hidden_layers - moe_layers << " dense layers\n";
  }
  if (is_mla(m)) {
    out << "  multi-head latent attention: q rank " << m.mla.q_lora_rank << ", kv rank " << m.mla.kv_lora_rank
        << ", head dims " << m.mla.qk_nope_head_dim << "+" << m.mla.qk_rope_head_dim << " / v " << m.mla.v_head_dim << "\n";
  }
  out << "  parameters                " << human_number(parameter_count(m)) << "\n";
  if (is_moe(m)) out << "  active parameters         " << human_number(active_parameter_count(m)) << " per token\n";
  if (m.num_nextn_predict_layers > 0) {
    out << "  MTP modules               " << m.num_nextn_predict_layers << ", " << human_number(mtp_parameter_count(m))
        << " parameters as stored (embedding and head copies included)\n";
  }
  out << "  model FLOPs per token     " << fmt::format("{:.4g}", model_flops_per_token(job))
      << "  (Megatron-Core convention, attended span)\n";
  out << "  model FLOPs per step      " << fmt::format("{:.4g}", model_flops_per_step(job)) << "\n";
  out << "  hardware FLOPs per step   " << fmt::format("{:.4g}", hardware_flops_per_step(job)) << "  (recompute "
      << to_string(t.recompute) << ")\n";
  out << "cluster: " << job.cluster.num_gpus << " x " << job.cluster.gpu.name << ", "
      << job.cluster.gpus_per_node << " GPUs per node, ";
  if (nvlink_domain_gpus(job.cluster) != job.cluster.gpus_per_node) {
    out << nvlink_domain_gpus(job.cluster) << " GPUs per NVLink domain, ";
  }
  if (job.cluster.network.nic_bandwidth_Bps > 0) {
    out << job.cluster.network.nics_per_node << " NICs of " << format_rate_GBps(job.cluster.network.nic_bandwidth_Bps)
        << " per node, " << to_string(job.cluster.network.topology) << "\n";
  } else {
    out << "one node, no scale-out network\n";
  }
  out << "parallel: TP " << p.tensor_model_parallel_size << " · CP " << p.context_parallel_size
      << " · PP " << p.pipeline_model_parallel_size << " · VPP "
      << p.virtual_pipeline_model_parallel_size << " · DP " << p.data_parallel_size << " (derived), ZeRO-"
      << p.zero_stage << ", SP " << (p.sequence_parallel ? "on" : "off") << ", placement "
      << to_string(p.placement) << "\n";
  if (is_moe(m)) {
    out << "experts: EP " << p.expert_model_parallel_size << " · ETP " << expert_tensor_parallel_size(job)
        << " · expert DP " << expert_data_parallel_size(job) << " (derived), " << m.moe.num_experts / p.expert_model_parallel_size
        << " experts per GPU, " << to_string(job.system.moe_token_dispatcher_type) << " dispatch\n";
  }
  // The framework behaviour the step model was priced with (system section; docs/configuration.md).
  const SystemSpec& sys = job.system;
  out << "system: " << sys.preset << " preset, attention " << to_string(sys.attention_kernel) << ", "
      << "optimizer " << to_string(t.optimizer) << " (" << to_string(sys.optimizer_implementation) << "), TP overlap "
      << (sys.tp_overlap ? to_string(sys.tp_overlap_scope) : "off") << ", DP overlap "
      << (sys.dp_overlap ? to_string(sys.dp_overlap_granularity) : "off");
  if (sys.fsdp_staging != FsdpStaging::None) out << ", FSDP staging " << to_string(sys.fsdp_staging);
  if (sys.autocast_fp32_weights) out << ", autocast over FP32 weights";
  out << "\n";
  out << "  micro-batches per pipeline " << micro_batches << " of " << t.micro_batch_size
      << " sequences x " << t.seq_length << " tokens\n";
  for (int s = 0; s < p.pipeline_model_parallel_size; ++s) {
    const auto layers = layers_on_stage(job, s);
    out << "  stage " << s << ": " << layers << " layers";
    if (p.virtual_pipeline_model_parallel_size > 1) {
      // Equal chunks print as one count; otherwise (an accounted embedding or loss) each chunk.
      const auto first_chunk = layers_in_chunk(job, s, 0);
      std::string sizes = std::to_string(first_chunk);
      bool equal = true;
      for (int v = 1; v < p.virtual_pipeline_model_parallel_size; ++v) {
        const auto n = layers_in_chunk(job, s, v);
        equal = equal && n == first_chunk;
        sizes += "+" + std::to_string(n);
      }
      out << " in " << p.virtual_pipeline_model_parallel_size << " chunks of "
          << (equal ? std::to_string(first_chunk) : sizes);
    }
    if (s == 0 && p.account_for_embedding_in_pipeline_split) out << " (+ embedding as a layer)";
    if (s == p.pipeline_model_parallel_size - 1 && p.account_for_loss_in_pipeline_split) {
      out << " (+ loss as a layer)";
    }
    out << ", " << human_number(parameters_per_gpu(job, s)) << " parameters per GPU\n";
  }
  const PeakMemory peak = peak_memory_per_gpu(job, buffers);
  const MemoryBreakdown& mem = peak.breakdown;
  out << "memory per GPU (pipeline stage " << peak.stage << ", the one that needs the most):\n";
  out << "  weights           " << format_bytes(mem.weights_bytes) << "\n";
  out << "  gradients         " << format_bytes(mem.gradients_bytes) << "\n";
  out << "  optimizer states  " << format_bytes(mem.optimizer_states_bytes) << "\n";
  out << "  activations       " << format_bytes(mem.activations_bytes) << "\n";
  out << "  buffers           " << format_bytes(mem.buffers_bytes) << "\n";
  out << "  total             " << format_bytes(mem.total_bytes()) << " of "
      << format_bytes(job.cluster.gpu.memory_bytes)
      << (mem.total_bytes() <= job.cluster.gpu.memory_bytes ? " (fits)\n" : " (DOES NOT FIT)\n");
  out << "placement (rank -> GPU -> node -> ToR set):\n";
  out << render_placement_table(Placement(p, job.cluster), max_rows);
}

}  // namespace megasim
