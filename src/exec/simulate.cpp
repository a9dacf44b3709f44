#include "megasim/exec/simulate.hpp"

#include "megasim/config/catalog.hpp"
#include "megasim/core/error.hpp"
#include "megasim/exec/analytic_step.hpp"
#include "megasim/exec/des_step.hpp"
#include "megasim/exec/startup.hpp"
#include "megasim/exec/step_costs.hpp"
#include "megasim/model/flops.hpp"
#include "megasim/model/memory.hpp"
#include "megasim/model/moe_routing.hpp"
#include "megasim/model/params.hpp"

namespace megasim {

EngineKind parse_engine_kind(const std::string& name) {
  if (name == "des") return EngineKind::Des;
  if (name == "analytic") return EngineKind::Analytic;
  throw InputError("--engine", "unknown engine \"" + name + "\"; valid: des, analytic");
}

namespace {

double dense_peak_flops(const JobSpec& job) {
  const auto& gpu = job.cluster.gpu;
  if (job.training.precision == Precision::Fp8 && gpu.peak_fp8_flops > 0) return gpu.peak_fp8_flops;
  return gpu.peak_bf16_flops;
}

// Everything that follows from the step time alone: rates, utilisation, time to train.
void fill_derived_fields(const JobSpec& job, const BufferSizes& buffers, StepReport& r) {
  const double tokens_per_step =
      static_cast<double>(job.training.global_batch_size) * static_cast<double>(job.training.seq_length);
  const double gpus = static_cast<double>(job.cluster.num_gpus);
  r.name = job.name;
  r.num_gpus = job.cluster.num_gpus;
  r.model_parameters = parameter_count(job.model);
  r.model_active_parameters = active_parameter_count(job.model);
  r.model_mtp_parameters = mtp_parameter_count(job.model);
  if (is_moe(job.model)) {
    const ExpertLoad load = expert_load(job);
    MoeSummary m;
    m.ep = job.parallel.expert_model_parallel_size;
    m.etp = expert_tensor_parallel_size(job);
    m.edp = expert_data_parallel_size(job);
    m.dispatcher = to_string(job.system.moe_token_dispatcher_type);
    m.routing_cv = load.routing_cv;
    m.max_to_mean_rank_load = load.max_to_mean_rank_load;
    m.max_to_mean_expert_load = load.max_to_mean_expert_load;
    m.dropped_token_fraction = load.dropped_token_fraction;
    r.moe = m;
  }
  r.model_flops_per_step = model_flops_per_step(job);
  r.hardware_flops_per_step = hardware_flops_per_step(job);
  r.peak_flops_per_gpu = dense_peak_flops(job);
  r.tokens_per_s = tokens_per_step / r.step_time_s;
  r.mfu = r.model_flops_per_step / (r.step_time_s * gpus * r.peak_flops_per_gpu);
  r.hfu = r.hardware_flops_per_step / (r.step_time_s * gpus * r.peak_flops_per_gpu);
  r.model_tflops_per_gpu = r.model_flops_per_step / r.step_time_s / gpus / 1e12;
  if (job.training.train_tokens) {
    r.time_to_train_days = *job.training.train_tokens / r.tokens_per_s / 86400.0;
  }
  const PeakMemory peak = peak_memory_per_gpu(job, buffers);
  r.memory = peak.breakdown;
  r.memory_peak_stage = peak.stage;
  r.memory_capacity_bytes = job.cluster.gpu.memory_bytes;
  r.memory_fits = r.memory.total_bytes() <= r.memory_capacity_bytes;
  const auto& p = job.parallel;
  r.plan.tp = p.tensor_model_parallel_size;
  r.plan.pp = p.pipeline_model_parallel_size;
  r.plan.vpp = p.virtual_pipeline_model_parallel_size;
  r.plan.cp = p.context_parallel_size;
  r.plan.dp = p.data_parallel_size;
  r.plan.micro_batch_size = job.training.micro_batch_size;
  r.plan.micro_batches_per_pipeline = micro_batches_per_pipeline(job);
  r.plan.zero_stage = p.zero_stage;
  r.plan.recompute = to_string(job.training.recompute);
}

}  // namespace

StepReport simulate_step(const JobSpec& job, const Catalog& catalog, const SimulateOptions& opts) {
  StepCosts costs;
  StepReport r;
  if (opts.engine == EngineKind::Analytic) {
    costs = compute_step_costs(job, catalog);
    r = estimate_step_analytic(job, costs);
  } else {
    r = simulate_step_des(job, catalog, opts, costs);
  }
  fill_derived_fields(job, costs.buffers, r);
  r.layer_time = LayerTime{costs.layer_fwd_s, costs.layer_bwd_s};
  if (r.moe) {
    r.moe->block_forward_s = costs.moe_block_fwd_s;
    r.moe->block_backward_s = costs.moe_block_bwd_s;
    if (costs.ep_priced_on_fabric) {
      r.moe->exchange_priced_by = "fabric";
      r.moe->exchange_groups_simulated = costs.ep_groups_simulated;
      r.moe->exchange_groups_per_stage = costs.ep_groups_per_stage;
    }
  }
  const CommunicatorStartup startup = communicator_startup(job, catalog);
  r.startup_s = startup.seconds;
  r.startup_hint = startup.hint;
  return r;
}

}  // namespace megasim
