// Top level of a job config and its parallel / training / system sections.
#include <array>

#include "config/json_reader.hpp"
#include "config/parse_parts.hpp"
#include "config/sections.hpp"
#include "megasim/config/load.hpp"

namespace megasim::config_detail {

namespace {

// Parallel sizes above this are far beyond any cluster and would overflow products of sizes.
constexpr std::int64_t kMaxParallel = 1 << 20;

constexpr std::array<EnumName<PlacementOrder>, 2> kPlacements{{{"dp-first", PlacementOrder::DpFirst},
                                                              {"pp-first", PlacementOrder::PpFirst}}};
constexpr std::array<EnumName<Recompute>, 3> kRecompute{{{"none", Recompute::None},
                                                        {"selective", Recompute::Selective},
                                                        {"full", Recompute::Full}}};
constexpr std::array<EnumName<Precision>, 3> kPrecisions{{{"bf16", Precision::Bf16},
                                                         {"fp16", Precision::Fp16},
                                                         {"fp8", Precision::Fp8}}};
constexpr std::array<EnumName<Fp8Recipe>, 4> kFp8Recipes{{{"delayed", Fp8Recipe::Delayed},
                                                         {"tensorwise", Fp8Recipe::Tensorwise},
                                                         {"mxfp8", Fp8Recipe::Mxfp8},
                                                         {"blockwise", Fp8Recipe::Blockwise}}};
constexpr std::array<EnumName<MoeLoadBalancing>, 4> kLoadBalancing{{{"aux_loss", MoeLoadBalancing::AuxLoss},
                                                                      {"seq_aux_loss", MoeLoadBalancing::SeqAuxLoss},
                                                                      {"global_aux_loss", MoeLoadBalancing::GlobalAuxLoss},
                                                                      {"none", MoeLoadBalancing::None}}};
constexpr std::array<EnumName<MoeRouterDtype>, 2> kRouterDtypes{{{"fp32", MoeRouterDtype::Fp32},
                                                                 {"input", MoeRouterDtype::Input}}};
constexpr std::array<EnumName<Optimizer>, 3> kOptimizers{{{"adam", Optimizer::Adam},
                                                         {"adamw", Optimizer::Adam},
                                                         {"lamb", Optimizer::Lamb}}};
// "auto" is Transformer Engine's choice, resolved once the GPU is known (parse_system).
constexpr std::array<EnumName<std::optional<AttentionKernel>>, 5> kAttentionKernels{
    {{"unfused", AttentionKernel::Unfused},
     {"flash-v1", AttentionKernel::FlashV1},
     {"flash-v2", AttentionKernel::FlashV2},
     {"cudnn-fused", AttentionKernel::CudnnFused},
     {"auto", std::nullopt}}};
constexpr std::array<EnumName<TpOverlapScope>, 2> kTpOverlapScopes{{{"ffn", TpOverlapScope::Ffn},
                                                                   {"all-linears", TpOverlapScope::AllLinears}}};
constexpr std::array<EnumName<DpOverlapGranularity>, 2> kDpOverlapGranularities{
    {{"chunk", DpOverlapGranularity::Chunk}, {"bucket", DpOverlapGranularity::Bucket}}};
constexpr std::array<EnumName<FsdpStaging>, 3> kFsdpStagings{
    {{"none", FsdpStaging::None}, {"fsdp1", FsdpStaging::Fsdp1}, {"fsdp2", FsdpStaging::Fsdp2}}};
constexpr std::array<EnumName<OptimizerImpl>, 4> kOptimizerImpls{{{"fused", OptimizerImpl::Fused},
                                                                 {"foreach", OptimizerImpl::Foreach},
                                                                 {"for-loop", OptimizerImpl::ForLoop},
                                                                 {"decoupled-adamw", OptimizerImpl::DecoupledAdamw}}};
constexpr std::array<EnumName<CrossEntropyImpl>, 4> kCrossEntropyImpls{{{"fused", CrossEntropyImpl::Fused},
                                                                        {"unfused", CrossEntropyImpl::Unfused},
                                                                        {"xentropy", CrossEntropyImpl::Xentropy},
                                                                        {"te", CrossEntropyImpl::Te}}};
constexpr std::array<EnumName<MoeDispatcher>, 3> kDispatchers{{{"alltoall", MoeDispatcher::AllToAll},
                                                              {"allgather", MoeDispatcher::AllGather},
                                                              {"flex", MoeDispatcher::Flex}}};
constexpr std::array<EnumName<FlexBackend>, 2> kFlexBackends{{{"deepep", FlexBackend::DeepEp},
                                                             {"hybridep", FlexBackend::HybridEp}}};

int small_int(std::optional<std::int64_t> v, int def) { return v ? static_cast<int>(*v) : def; }

// Megatron-Core's recompute_modules names (transformer_config.py).
RecomputeModules parse_recompute_modules(const nlohmann::json& v, const std::string& path) {
  if (!v.is_array()) throw InputError(path, "must be a list of module names, e.g. [\"core_attn\", \"mlp\"]");
  RecomputeModules m;
  m.core_attn = false;
  const std::array<std::pair<std::string_view, bool RecomputeModules::*>, 7> names{{
      {"core_attn", &RecomputeModules::core_attn}, {"layernorm", &RecomputeModules::layernorm},
      {"mla_up_proj", &RecomputeModules::mla_up_proj}, {"mlp", &RecomputeModules::mlp},
      {"moe_act", &RecomputeModules::moe_act}, {"moe", &RecomputeModules::moe},
      {"shared_experts", &RecomputeModules::shared_experts}}};
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    if (!v[i].is_string()) throw InputError(at, "must be a module name string");
    const std::string name = v[i].get<std::string>();
    bool known = false;
    for (const auto& [n, field] : names) {
      if (n == name) {
        m.*field = true;
        known = true;
      }
    }
    if (!known) {
      throw InputError(at, "unknown module \"" + name + "\"; valid: core_attn, layernorm, mla_up_proj, mlp, "
                           "moe_act, moe, shared_experts");
    }
  }
  return m;
}

// Every SystemSpec member, read from one object (a preset file or the job's overrides).
// `attention_auto` becomes true when the object writes attention_kernel "auto", false when it
// writes a kernel, and is left alone otherwise.
void read_system_fields(ObjectReader& r, SystemSpec& s, bool& attention_auto) {
  auto flag = [&r](std::string_view key, bool& field) {
    if (const auto b = r.bool_opt(key)) field = *b;
  };
  flag("tp_overlap", s.tp_overlap);
  s.tp_overlap_chunks = small_int(r.int_opt("tp_overlap_chunks", 1, 1024), s.tp_overlap_chunks);
  if (const auto sc = r.enum_opt("tp_overlap_scope", kTpOverlapScopes)) s.tp_overlap_scope = *sc;
  flag("tp_async_backward", s.tp_async_backward);
  flag("pp_overlap", s.pp_overlap);
  flag("dp_overlap", s.dp_overlap);
  if (const auto g = r.enum_opt("dp_overlap_granularity", kDpOverlapGranularities)) {
    s.dp_overlap_granularity = *g;
  }
  flag("dp_prefetch_first_all_gather", s.dp_prefetch_first_all_gather);
  flag("dp_megatron_core_ddp", s.dp_megatron_core_ddp);
  flag("dp_reduce_every_micro_batch", s.dp_reduce_every_micro_batch);
  flag("fused_kernels", s.fused_kernels);
  flag("autocast_fp32_weights", s.autocast_fp32_weights);
  flag("qkv_split_copies", s.qkv_split_copies);
  s.fsdp_staging = r.enum_opt("fsdp_staging", kFsdpStagings).value_or(s.fsdp_staging);
  s.optimizer_implementation =
      r.enum_opt("optimizer_implementation", kOptimizerImpls).value_or(s.optimizer_implementation);
  s.cross_entropy_implementation =
      r.enum_opt("cross_entropy_implementation", kCrossEntropyImpls).value_or(s.cross_entropy_implementation);
  if (const auto k = r.enum_opt("attention_kernel", kAttentionKernels)) {
    attention_auto = !k->has_value();
    if (k->has_value()) s.attention_kernel = **k;
  }
  flag("async_data_preprocessing", s.async_data_preprocessing);
  flag("data_loader_per_node", s.data_loader_per_node);
  flag("gc_stragglers_fixed", s.gc_stragglers_fixed);
  if (const auto f = r.number_opt("straggler_host_fraction", 0.0, 1.0)) s.straggler_host_fraction = *f;
  if (const auto d = r.number_opt("straggler_slowdown", 0.0, 100.0)) s.straggler_slowdown = *d;
  if (const auto st = r.string_opt("comm_init_store")) s.comm_init_store = parse_comm_init_store(*st, r.path_of("comm_init_store"));
  flag("comm_init_ordered", s.comm_init_ordered);
  flag("comm_init_lazy", s.comm_init_lazy);
  flag("gloo_process_groups", s.gloo_process_groups);
  flag("grad_reduce_in_fp32", s.grad_reduce_in_fp32);
  flag("tp_fp8_forward_reduce_scatter", s.tp_fp8_forward_reduce_scatter);
  s.moe_token_dispatcher_type = r.enum_opt("moe_token_dispatcher_type", kDispatchers).value_or(s.moe_token_dispatcher_type);
  s.moe_flex_dispatcher_backend =
      r.enum_opt("moe_flex_dispatcher_backend", kFlexBackends).value_or(s.moe_flex_dispatcher_backend);
  if (const auto n = r.int_opt("moe_flex_dispatcher_num_sms", 1, 1024)) s.moe_flex_dispatcher_num_sms = static_cast<int>(*n);
  flag("moe_grouped_gemm", s.moe_grouped_gemm);
  flag("moe_shared_expert_overlap", s.moe_shared_expert_overlap);
  flag("overlap_moe_expert_parallel_comm", s.overlap_moe_expert_parallel_comm);
  const std::array<std::pair<std::string_view, double SystemSpec::*>, 4> host_factors{{
      {"host_launch_factor_dense_forward", &SystemSpec::host_launch_factor_dense_forward},
      {"host_launch_factor_dense_backward", &SystemSpec::host_launch_factor_dense_backward},
      {"host_launch_factor_moe_forward", &SystemSpec::host_launch_factor_moe_forward},
      {"host_launch_factor_moe_backward", &SystemSpec::host_launch_factor_moe_backward}}};
  for (const auto& [key, field] : host_factors) {
    if (const auto f = r.number_opt(key, 1.0, 10.0)) s.*field = *f;
  }
}

// system.attention_kernel = "auto": Transformer Engine's backend choice, cuDNN's fused attention
// on Hopper and newer and FlashAttention-2 before (configs/systems/megatron-core.json). megasim
// takes cudnn-fused where the GPU's hardware profile has a cuDNN block (Hopper measured, Blackwell
// derived from published figures) and flash-v2 elsewhere, so that a GPU without one still runs.
AttentionKernel auto_attention_kernel(const GpuSpec& gpu, const Catalog& catalog) {
  const nlohmann::json hw = catalog.entry("hw", gpu.profile, "cluster.gpu.profile");
  const bool measured = hw.is_object() && hw.contains("attention") && hw["attention"].is_object() &&
                        hw["attention"].contains("cudnn_fused_forward");
  return measured ? AttentionKernel::CudnnFused : AttentionKernel::FlashV2;
}

// A required section, or an error that says what it must hold (one line, with an example).
const nlohmann::json& require_section(ObjectReader& r, std::string_view key) {
  const nlohmann::json* v = r.raw(key);
  if (v != nullptr && !v->is_null()) return *v;
  std::string need;
  if (key == "model") {
    need = "a catalog name (\"llama-3.1-8b\"; megasim list models), a Hugging Face config.json path, or an "
           "object with hidden_size, num_hidden_layers, num_attention_heads, vocab_size";
  } else if (key == "cluster") {
    need = "a catalog name (\"dgx-h100-ndr-clos\"; megasim list clusters) or an object with gpu and num_gpus, "
           "e.g. {\"base\": \"dgx-h100-ndr-clos\", \"num_gpus\": 64}";
  } else {
    need = "an object with at least seq_length and global_batch_size, e.g. {\"seq_length\": 8192, "
           "\"global_batch_size\": 512}";
  }
  throw InputError(r.path_of(key), "required section is missing: give " + need);
}

}  // namespace

ParallelInput parse_parallel(const nlohmann::json& v, const std::string& path) {
  ObjectReader r(v, path);
  ParallelInput in;
  ParallelSpec& p = in.spec;
  p.tensor_model_parallel_size = small_int(r.int_opt("tensor_model_parallel_size", 1, kMaxParallel), 1);
  p.pipeline_model_parallel_size = small_int(r.int_opt("pipeline_model_parallel_size", 1, kMaxParallel), 1);
  // Megatron writes "no interleaving" as null; so may we.
  p.virtual_pipeline_model_parallel_size =
      small_int(r.int_opt("virtual_pipeline_model_parallel_size", 1, kMaxParallel), 1);
  p.context_parallel_size = small_int(r.int_opt("context_parallel_size", 1, kMaxParallel), 1);
  in.sequence_parallel = r.bool_opt("sequence_parallel");
  p.zero_stage = small_int(r.int_opt("zero_stage", 0, 3), p.zero_stage);
  if (const auto f = r.int_opt("decoder_first_pipeline_num_layers", 1, kMaxInt)) {
    p.decoder_first_pipeline_num_layers = static_cast<int>(*f);
  }
  if (const auto l = r.int_opt("decoder_last_pipeline_num_layers", 1, kMaxInt)) {
    p.decoder_last_pipeline_num_layers = static_cast<int>(*l);
  }
  p.account_for_embedding_in_pipeline_split =
      r.bool_opt("account_for_embedding_in_pipeline_split").value_or(false);
  p.account_for_loss_in_pipeline_split = r.bool_opt("account_for_loss_in_pipeline_split").value_or(false);
  p.placement = r.enum_opt("placement", kPlacements).value_or(p.placement);
  in.pipeline_layout = r.string_opt("pipeline_model_parallel_layout");
  p.expert_model_parallel_size = small_int(r.int_opt("expert_model_parallel_size", 1, kMaxParallel), 1);
  p.expert_tensor_parallel_size = small_int(r.int_opt("expert_tensor_parallel_size", 1, kMaxParallel), 0);
  in.data_parallel_size = r.int_opt("data_parallel_size", 1, kMaxInt);
  r.finish();
  return in;
}

TrainingSpec parse_training(const nlohmann::json& v, const std::string& path) {
  ObjectReader r(v, path);
  TrainingSpec t;
  t.seq_length = r.int_req("seq_length", 1, kMaxInt);
  t.global_batch_size = r.int_req("global_batch_size", 1, kMaxInt);
  t.micro_batch_size = r.int_opt("micro_batch_size", 1, kMaxInt).value_or(1);
  t.recompute = r.enum_opt("recompute", kRecompute).value_or(t.recompute);
  if (const nlohmann::json* mods = r.raw("recompute_modules"); mods != nullptr && !mods->is_null()) {
    t.recompute_modules = parse_recompute_modules(*mods, r.path_of("recompute_modules"));
    if (t.recompute != Recompute::Selective) {
      throw InputError(r.path_of("recompute_modules"),
                       "needs recompute = \"selective\" (Megatron-Core reads the modules only then)");
    }
  }
  t.precision = r.enum_opt("precision", kPrecisions).value_or(t.precision);
  // Read whatever the precision, and used only under fp8, as Megatron-Core reads --fp8-recipe:
  // a what-if that switches an FP8 job to bf16 keeps its recipe line.
  t.fp8_recipe = r.enum_opt("fp8_recipe", kFp8Recipes).value_or(t.fp8_recipe);
  t.optimizer = r.enum_opt("optimizer", kOptimizers).value_or(t.optimizer);
  if (const auto tokens = r.number_opt("train_tokens", 0.0, 1e30)) {
    if (!(*tokens > 0)) throw InputError(r.path_of("train_tokens"), "must be positive");
    t.train_tokens = *tokens;
  }
  t.moe_router_force_load_balancing = r.bool_opt("moe_router_force_load_balancing").value_or(false);
  // Megatron-Core: capacity per expert = ceil(tokens * topk / E * factor); below 1 drops tokens
  // even under perfect balance, which no published recipe does, but it is a valid setting.
  t.moe_expert_capacity_factor = r.number_opt("moe_expert_capacity_factor", 0.01, 1000.0);
  t.moe_pad_expert_input_to_capacity = r.bool_opt("moe_pad_expert_input_to_capacity").value_or(false);
  if (t.moe_pad_expert_input_to_capacity && !t.moe_expert_capacity_factor) {
    throw InputError(r.path_of("moe_pad_expert_input_to_capacity"), "needs moe_expert_capacity_factor (the capacity)");
  }
  t.moe_routing_skew = r.number_opt("moe_routing_skew", 0.0, 10.0);
  if (r.string_opt("moe_router_load_balancing_type") == "sinkhorn") {
    throw InputError(r.path_of("moe_router_load_balancing_type"),
                     "Megatron-Core's sinkhorn routing is not modelled (aux_loss, seq_aux_loss, global_aux_loss or none)");
  }
  t.moe_router_load_balancing_type = r.enum_opt("moe_router_load_balancing_type", kLoadBalancing);
  t.moe_aux_loss_coeff = r.number_opt("moe_aux_loss_coeff", 0.0, 1e3).value_or(0.0);
  t.moe_router_enable_expert_bias = r.bool_opt("moe_router_enable_expert_bias").value_or(false);
  if (r.string_opt("moe_router_dtype") == "fp64") {
    throw InputError(r.path_of("moe_router_dtype"), "Megatron-Core's fp64 router is not modelled (fp32 or input)");
  }
  t.moe_router_dtype = r.enum_opt("moe_router_dtype", kRouterDtypes);
  r.finish();
  return t;
}

SystemSpec parse_system(const nlohmann::json& v, const std::string& path, const Catalog& catalog,
                        const GpuSpec& gpu) {
  ObjectReader r(v, path);
  SystemSpec s;
  bool attention_auto = false;
  s.preset = r.string_opt("preset").value_or(s.preset);
  const nlohmann::json preset = catalog.entry("systems", s.preset, r.path_of("preset"));
  {
    // Errors inside a preset file name the file, not the user's config.
    ObjectReader pr(preset, "systems/" + s.preset + ".json");
    if (const auto self = pr.string_opt("preset"); self && *self != s.preset) {
      throw InputError(pr.path_of("preset"), "names \"" + *self + "\" but the file is \"" + s.preset + "\"");
    }
    pr.allow("name");
    read_system_fields(pr, s, attention_auto);
    pr.finish();
  }
  read_system_fields(r, s, attention_auto);
  r.finish();
  if (attention_auto) s.attention_kernel = auto_attention_kernel(gpu, catalog);
  return s;
}

}  // namespace megasim::config_detail

namespace megasim {

JobSpec parse_job(const nlohmann::json& config, const Catalog& catalog, const std::filesystem::path& base_dir,
                  WrittenPlan plan) {
  using namespace config_detail;
  ObjectReader r(config, "");
  JobSpec job;
  job.name = r.string_opt("name").value_or("");
  job.seed = static_cast<std::uint64_t>(r.int_opt("seed", 0, INT64_MAX).value_or(1));

  const auto model = resolve_section(require_section(r, "model"), "models", "model", catalog, base_dir);
  job.model = parse_model(model.value, "model", model.name);

  const auto cluster = resolve_section(require_section(r, "cluster"), "clusters", "cluster", catalog, base_dir);
  job.cluster = parse_cluster(cluster.value, "cluster", catalog, base_dir, cluster.name);

  const nlohmann::json* par = r.raw("parallel");
  const auto parallel = resolve_section(par != nullptr && !par->is_null() ? *par : nlohmann::json::object(),
                                        "", "parallel", catalog, base_dir);
  const ParallelInput pin = parse_parallel(parallel.value, "parallel");
  job.parallel = pin.spec;

  const auto training = resolve_section(require_section(r, "training"), "", "training", catalog, base_dir);
  job.training = parse_training(training.value, "training");

  const nlohmann::json* sys = r.raw("system");
  const auto system = resolve_section(sys != nullptr && !sys->is_null() ? *sys : nlohmann::json::object(),
                                      "systems", "system", catalog, base_dir);
  job.system = parse_system(system.value, "system", catalog, job.cluster.gpu);
  r.finish();

  if (plan == WrittenPlan::Replaced) {
    validate_without_plan(job, pin);
  } else {
    validate_and_derive(job, pin);
  }
  return job;
}

}  // namespace megasim
