#pragma once
// Typed, validated job description: the result of parsing a config (DESIGN.md A2).
// Everything downstream (cost model, topology, planner, engine) reads these structs only,
// never JSON. All fields are already validated and defaulted when a JobSpec exists.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace megasim {

enum class Activation { Gelu, GeluNew, Silu, Relu, SquaredRelu };  // naming only: every one is one elementwise pass
enum class Norm { LayerNorm, RmsNorm };
enum class Precision { Bf16, Fp16, Fp8 };
// How Transformer Engine scales FP8 tensors (Megatron-Core --fp8-recipe): from the amax history
// (delayed), from each tensor's own amax (tensorwise: "current scaling", an extra amax pass), or
// per block (mxfp8: 1x32 blocks, Blackwell; blockwise: 1x128 / 128x128, DeepSeek-V3's recipe).
enum class Fp8Recipe { Delayed, Tensorwise, Mxfp8, Blockwise };

// Megatron-Core's moe_router_load_balancing_type: the auxiliary loss per micro-batch, per
// sequence, over the global batch (its token counts all-reduced over DP), or none.
enum class MoeLoadBalancing { AuxLoss, SeqAuxLoss, GlobalAuxLoss, None };
// Megatron-Core's moe_router_dtype: the dtype of the router's logits, scores and routing
// probabilities: FP32 ("fp32", what Megatron-Bridge's MoE providers set) or the input's 16-bit
// dtype (Megatron-Core's default, None; megasim's "input").
enum class MoeRouterDtype { Fp32, Input };
enum class Recompute { None, Selective, Full };
enum class Optimizer { Adam, Lamb };
// How an MoE layer moves tokens to their experts (Megatron-Core moe_token_dispatcher_type).
enum class MoeDispatcher { AllToAll, AllGather, Flex };
enum class FlexBackend { DeepEp, HybridEp };  // moe_flex_dispatcher_backend
// The system switches that name one of a few choices, parsed once into enums (their config
// spellings are to_string's: "ffn", "all-linears", "chunk", "bucket", ...).
enum class TpOverlapScope { Ffn, AllLinears };                        // tp_overlap_scope
enum class DpOverlapGranularity { Chunk, Bucket };                    // dp_overlap_granularity
enum class AttentionKernel { Unfused, FlashV1, FlashV2, CudnnFused };  // attention_kernel
enum class CommInitStore { TcpStore, Redis };                         // comm_init_store
enum class FsdpStaging { None, Fsdp1, Fsdp2 };                        // fsdp_staging
enum class OptimizerImpl { Fused, Foreach, ForLoop, DecoupledAdamw };  // optimizer_implementation
enum class CrossEntropyImpl { Fused, Unfused, Xentropy, Te };  // cross_entropy_implementation

// Mixture of Experts (DESIGN.md A4). num_experts == 0: a dense model, every field below unused.
struct MoeSpec {
  std::int64_t num_experts = 0;                // routed experts E
  std::int64_t experts_per_token = 0;          // top-k
  std::int64_t expert_intermediate_size = 0;   // FFN width of one routed expert
  // Total FFN width of the always-on shared experts (DeepSeek: n_shared_experts x
  // moe_intermediate_size; Qwen2-MoE: shared_expert_intermediate_size); 0 = none.
  std::int64_t shared_expert_intermediate_size = 0;
  std::int64_t num_groups = 0;                 // group-limited routing (DeepSeek-V3 n_group); 0 = none
  std::int64_t topk_groups = 0;                // groups a token may reach (topk_group)
  // Per layer: 1 = the layer's MLP is an MoE block, 0 = a dense MLP of intermediate_size.
  // num_hidden_layers entries when num_experts > 0, empty otherwise.
  std::vector<std::uint8_t> layer_is_moe;
};

// Multi-head latent attention (DeepSeek-V2/V3); on when kv_lora_rank > 0.
struct MlaSpec {
  std::int64_t q_lora_rank = 0;       // 0: queries projected from h directly (no low-rank step)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

// Transformer shape, named after Hugging Face config.json keys.
struct ModelSpec {
  std::string name;                   // catalog or file name, for reports
  std::int64_t hidden_size = 0;       // h
  std::int64_t num_hidden_layers = 0; // L
  std::int64_t num_attention_heads = 0;  // a
  std::int64_t num_key_value_heads = 0;  // g (== a for MHA)
  std::int64_t head_dim = 0;             // kv_channels; default h / a
  std::int64_t intermediate_size = 0;    // f; default 4h
  std::int64_t vocab_size = 0;           // V (padded by the cost model as Megatron does)
  Activation hidden_act = Activation::Gelu;
  bool gated_mlp = false;                // SwiGLU-style gate: 3 MLP matrices instead of 2
  Norm normalization = Norm::LayerNorm;
  bool use_parallel_residual = false;    // parallel transformer block (PTB)
  std::optional<std::int64_t> sliding_window;  // attention window in tokens; nullopt = full causal
  bool tie_word_embeddings = false;
  bool attention_bias = true;            // GPT-style biases on linear layers (Llama: false)
  std::int64_t max_position_embeddings = 0;  // learned absolute positions if > 0 and not rope
  bool rope = false;                     // rotary embeddings (no position-embedding table)
  // YaRN-scaled rotary embeddings (Hugging Face rope_scaling / rope_parameters rope_type "yarn";
  // native key rope_yarn). Megatron-Core applies them unfused (src/model/rope_ops.cpp add_rope).
  bool rope_yarn = false;
  // RMSNorm of the query and key after the QKV projection, per head or over the projection
  // (Megatron-Core's qk_layernorm; Hugging Face's Qwen3, OLMo and Gemma 3 classes always build it):
  // src/model/qk_norm_ops.cpp.
  bool qk_layernorm = false;
  // Clamp on the gated activation's two halves (Hugging Face swiglu_limit, GPT-OSS's 7.0; 0 = none):
  // Megatron-Core clamps them in eager ops outside its fused activation kernel
  // (src/model/moe_ops.cpp add_moe_activation).
  double swiglu_limit = 0;
  // Dropout probabilities (Megatron-LM's --hidden-dropout / --attention-dropout, default 0.1).
  // At 0 the framework skips the kernel (torch's dropout returns its input for p = 0), so no
  // mask is written or kept and bias-dropout-add is a plain residual add.
  double hidden_dropout = 0.1;           // residual branches and the embedding output
  double attention_dropout = 0.1;        // attention probabilities
  MoeSpec moe;
  MlaSpec mla;
  // DeepSeek-V3 multi-token prediction: modules after the last layer, each one transformer
  // layer (of the last layer's kind) plus a projection, trained with the model.
  std::int64_t num_nextn_predict_layers = 0;
  // Per layer (GPT-OSS layer_types): 1 = attends within sliding_window, 0 = full causal. Empty:
  // every layer uses sliding_window (when set).
  std::vector<std::uint8_t> layer_is_sliding;
};

inline bool is_moe(const ModelSpec& m) { return m.moe.num_experts > 0; }
inline bool is_mla(const ModelSpec& m) { return m.mla.kv_lora_rank > 0; }
// The QK norm runs on the attention's own query and key; MLA normalises its latents inside the
// attention projections instead (src/model/qk_norm_ops.cpp).
inline bool has_qk_norm(const ModelSpec& m) { return m.qk_layernorm && !is_mla(m); }

// One GPU type's datasheet figures, each from the catalog with its source.
struct GpuSpec {
  std::string name;
  double peak_bf16_flops = 0;      // dense BF16/FP16 tensor-core FLOP/s
  double peak_fp8_flops = 0;       // dense FP8 FLOP/s; 0 = not supported
  double peak_fp32_flops = 0;      // non-tensor FP32 FLOP/s (vector units)
  double memory_bytes = 0;         // HBM capacity (usable, as reported by the driver)
  double memory_bandwidth_Bps = 0; // HBM bandwidth
  double nvlink_bandwidth_Bps = 0; // NVLink bandwidth per direction per GPU
  int architecture_sm = 0;         // compute capability x10 (80 Ampere, 90 Hopper, 100 Blackwell)
  std::string profile;             // name of the hardware-efficiency profile (hw/ catalog)
};

enum class Topology { RailOptimizedClos, FatTree, RailOnly };
enum class Routing { Ecmp, IdealSpray, SinglePath };

struct NetworkSpec {
  Topology topology = Topology::RailOptimizedClos;
  double nic_bandwidth_Bps = 0;        // per NIC, per direction
  int nics_per_node = 0;
  int switch_radix = 0;                // ports per switch
  double switch_port_bandwidth_Bps = 0;
  double oversubscription = 1.0;       // down:up bandwidth ratio at the leaf (>= 1)
  int servers_per_tor = 0;             // servers under one ToR set (rail group)
  bool split_port = false;             // each switch port split into two NIC links (2x200G of a 400G port)
  Routing routing = Routing::Ecmp;
  std::uint64_t ecmp_seed = 1;
  int queue_pairs_per_connection = 1;  // NCCL_IB_QPS_PER_CONNECTION
  double link_latency_s = 0;           // per hop (cable + switch), from the catalog
  double nic_latency_s = 0;            // NIC/host software per message, from the catalog
};

struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  std::int64_t num_gpus = 0;
  int gpus_per_node = 8;               // GPUs per host (a GB200 compute tray holds 4)
  // GPUs joined by one NVLink fabric: gpus_per_node for an NVSwitch node (0 means that), 72 for
  // an NVL72 rack whose NVLink switch trays join 18 four-GPU trays. Collectives inside a
  // domain run on NVLink; across domains on the hosts' NICs.
  int nvlink_domain_size = 0;
  NetworkSpec network;
  double pcie_bandwidth_Bps = 0;       // GPU <-> host, per GPU, per direction
  // The fleet's slow hosts: the share of hosts whose GPUs compute slower, and by how much
  // (MegaScale section 5.1 measured about 0.5% of hosts taking about 10% longer).
  double straggler_host_fraction = 0;
  double straggler_slowdown = 0;       // 0.1 = 10% longer compute on a slow host
};

// GPUs per NVLink domain (cluster.nvlink_domain_size, defaulting to gpus_per_node).
inline int nvlink_domain_gpus(const ClusterSpec& c) {
  return c.nvlink_domain_size > 0 ? c.nvlink_domain_size : c.gpus_per_node;
}

// Order in which the non-TP parallel dimensions are laid over nodes, innermost first.
enum class PlacementOrder { DpFirst, PpFirst };

struct ParallelSpec {
  int tensor_model_parallel_size = 1;
  int pipeline_model_parallel_size = 1;
  int virtual_pipeline_model_parallel_size = 1;
  int context_parallel_size = 1;
  bool sequence_parallel = true;     // default: TP > 1
  int zero_stage = 1;                // 0 DDP, 1 distributed optimizer, 2, 3 (FSDP)
  std::optional<int> decoder_first_pipeline_num_layers;
  std::optional<int> decoder_last_pipeline_num_layers;
  // Megatron-Core's account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split:
  // the embedding (loss) counts as one layer when the stack is split into stages and model
  // chunks, so the first (last) model chunk holds one transformer layer fewer.
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  // Megatron-Core's pipeline_model_parallel_layout, expanded: transformer layers of each virtual
  // stage (chunk v of stage s is entry v * PP + s). Empty: the even / first-last / accounted split.
  std::vector<int> layout_layers;
  PlacementOrder placement = PlacementOrder::DpFirst;
  std::int64_t data_parallel_size = 0;  // derived: num_gpus / (TP*PP*CP)
  // MoE parallel folding (Megatron-Core): the expert layers use ETP x EP x EDP x PP over the same
  // GPUs as attention's TP x CP x DP x PP.
  // Expert DP is derived (expert_data_parallel_size below), never stored, so a planner that
  // changes TP or PP cannot leave it stale.
  int expert_model_parallel_size = 1;   // EP
  int expert_tensor_parallel_size = 0;  // ETP; 0 = not written: the job's TP (Megatron-Core default)
};

// Megatron-Core's recompute_modules under selective recompute: which parts of a layer are not
// kept for the backward but run again. The default is Megatron-Core's: the attention core.
struct RecomputeModules {
  bool core_attn = true;       // the attention core (megasim's selective recompute until now)
  bool layernorm = false;      // the two norms; their outputs (the next GEMMs' inputs) are not kept
  bool mla_up_proj = false;    // MLA's up-projections and RoPE
  bool mlp = false;            // a dense layer's MLP
  bool moe_act = false;        // the experts' activation function
  bool moe = false;            // the whole MoE block
  bool shared_experts = false; // the shared experts
};

struct TrainingSpec {
  std::int64_t seq_length = 0;
  std::int64_t global_batch_size = 0;  // sequences
  std::int64_t micro_batch_size = 1;
  Recompute recompute = Recompute::None;
  RecomputeModules recompute_modules;  // with recompute = selective
  Precision precision = Precision::Bf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  // with precision fp8; Megatron-Core's default
  Optimizer optimizer = Optimizer::Adam;
  std::optional<double> train_tokens;  // enables time-to-train
  // MoE routing (DESIGN.md A4): forced balance (Megatron-Core's benchmark switch), dropless
  // (nullopt) or a capacity factor, and the spread of tokens over experts (coefficient of
  // variation; nullopt = megasim's sourced default for trained routers).
  bool moe_router_force_load_balancing = false;
  std::optional<double> moe_expert_capacity_factor;
  bool moe_pad_expert_input_to_capacity = false;  // every expert runs exactly its capacity
  std::optional<double> moe_routing_skew;
  // The router's load-balancing loss (Megatron-Core's names and defaults: type aux_loss,
  // coefficient 0, i.e. no loss runs) and DeepSeek-V3's aux-free expert bias: kernels of their
  // own in every MoE layer (src/model/moe_router_ops.cpp), no effect on the routing megasim draws.
  std::optional<MoeLoadBalancing> moe_router_load_balancing_type;  // unset: Megatron-Core's aux_loss
  double moe_aux_loss_coeff = 0.0;
  bool moe_router_enable_expert_bias = false;
  std::optional<MoeRouterDtype> moe_router_dtype;  // unset: fp32
};

// Which MegaScale / Megatron-LM techniques are on. Presets fill these; every field can be
// overridden individually ("system": {"preset": "megatron-lm", "tp_overlap": true}).
struct SystemSpec {
  std::string preset = "megatron-core";  // the preset used when a job has no system section
  bool tp_overlap = false;            // GEMMs chunked and pipelined with AG/RS on a 2nd stream
  int tp_overlap_chunks = 4;
  // Which linears TP overlap covers: "ffn" (MegaScale fuses AG/RS into the FFN's linears only)
  // or "all-linears" (Transformer Engine's userbuffers overlap QKV, projection, FC1 and FC2).
  TpOverlapScope tp_overlap_scope = TpOverlapScope::Ffn;
  // Megatron-LM's backward of a column-parallel linear: the dgrad all-reduce (with SP: the
  // input all-gather and the dgrad reduce-scatter) runs asynchronously beside the linear's
  // other backward GEMM (Megatron-LM's async_tensor_model_parallel_allreduce; see the presets).
  bool tp_async_backward = false;
  bool pp_overlap = false;            // decoupled async send/recv in warm-up/cool-down
  bool dp_overlap = false;            // ZeRO AG before each chunk's forward, RS after its backward
  // What one overlapped DP collective covers: "chunk" (MegaScale §3.2: a model chunk's AG
  // before its first forward, its RS after its last backward) or "bucket" (Megatron-Core /
  // NeMo overlap_grad_reduce / overlap_param_gather: buckets of Megatron-Core's default
  // max(grad_bucket_elements, 1M x DP x CP) elements, model chunk 0 only, reduce as the
  // backward produces them and gather as the forward reaches them; with ZeRO-3, before every
  // pass, as FSDP units).
  DpOverlapGranularity dp_overlap_granularity = DpOverlapGranularity::Chunk;
  bool dp_prefetch_first_all_gather = false;  // first AG overlaps data loading
  // Megatron-Core's DistributedDataParallel with the distributed optimizer (ZeRO 1-2, bucket
  // granularity): only pipeline stage 0's model chunk 0 is split into buckets (pp_rank > 0: one
  // bucket), and without the prefetch a stage's first gather is dispatched by its first forward's
  // pre-hook, unless an interleaved pipeline's align_param_gather dispatches it at the schedule's
  // start (Megatron-Bridge and NeMo set it exactly then). Off: every stage like stage 0, gathers
  // issued at the step's start.
  bool dp_megatron_core_ddp = false;
  // ZeRO-2/3 only: reduce-scatter every micro-batch's gradients as its backward produces them
  // and keep only this rank's shard (DeepSpeed ZeRO-2, FSDP without no_sync): m reductions per
  // step instead of one, sharded gradient memory.
  bool dp_reduce_every_micro_batch = false;
  bool fused_kernels = false;         // fused LayerNorm / GeLU / bias-dropout-add
  // The parameters stay FP32 and torch.autocast casts each weight to BF16 at every use, runs
  // the norms in FP32 and casts the weight gradients back (DDP or single-GPU PyTorch under
  // autocast; FSDP with an FP32 param_dtype). Off in every preset: Megatron and FSDP with a
  // BF16 param_dtype hold BF16 weights.
  bool autocast_fp32_weights = false;
  // Megatron-Core's self-attention splits its fused QKV output into strided views and copies
  // around them: the GQA query's reshape, the value made contiguous for Transformer Engine's
  // attention, and the gradients' concatenation in the backward (src/model/qkv_split_ops.cpp).
  bool qkv_split_copies = false;
  // The full-size copies PyTorch FSDP makes of every unit's parameters and gradients each
  // micro-batch under ZeRO-2/3 ("none": Megatron's buffers gather and reduce in place):
  // FSDP1 casts the gradient to reduce_dtype and pre-divides it, FSDP2 copies the all-gather
  // output out and the gradients into the reduce-scatter input (model/fsdp_staging_ops.cpp).
  FsdpStaging fsdp_staging = FsdpStaging::None;
  // How the optimizer step runs over the rank's shard (exec/optimizer_step.cpp): one fused
  // multi-tensor kernel (Apex / Transformer Engine FusedAdam, torch fused=True), PyTorch's
  // foreach or for-loop AdamW (one pass over the shard per arithmetic step), or Composer's
  // DecoupledAdamW loop.
  OptimizerImpl optimizer_implementation = OptimizerImpl::Fused;
  // How the loss runs over the logits on the last stage (model/embedding_ops.cpp): Megatron-
  // Core's fused vocab-parallel cross-entropy (cross_entropy_loss_fusion, compiled helpers),
  // Megatron's unfused one (separate PyTorch ops; torch's cross_entropy on FP32 logits alike),
  // one fused kernel each way (apex / flash-attn xentropy, llm-foundry's fused_crossentropy), or
  // Transformer Engine's Triton loss (cross_entropy_fusion_impl "te", Megatron-Bridge's recipes).
  CrossEntropyImpl cross_entropy_implementation = CrossEntropyImpl::Fused;
  // "unfused" | "flash-v1" | "flash-v2" | "cudnn-fused". A config may write "auto"
  // (Transformer Engine's choice); parsing resolves it, so a JobSpec never holds "auto".
  AttentionKernel attention_kernel = AttentionKernel::FlashV1;
  bool async_data_preprocessing = false;
  bool data_loader_per_node = false;  // one loader per node instead of one per GPU
  bool gc_stragglers_fixed = false;   // "problematic code" removed (GC-induced launch skew)
  // What-if overrides of the cluster's straggler population (e.g. 0 after straggler hunting).
  std::optional<double> straggler_host_fraction;
  std::optional<double> straggler_slowdown;
  CommInitStore comm_init_store = CommInitStore::TcpStore;  // "tcpstore" | "redis"
  bool comm_init_ordered = false;             // O(n) instead of O(n^2) global barriers
  // Today's PyTorch: new_group() without a global barrier, NCCL communicators created lazily
  // (goodput/comm_init.hpp); off, the 2023 behaviour MegaScale measured.
  bool comm_init_lazy = false;
  bool gloo_process_groups = true;            // Megatron-Core create_gloo_process_groups
  bool grad_reduce_in_fp32 = true;            // Megatron forces fp32 grad reduce for bf16
  // FP8 training with TP overlap: the forward reduce-scatters of the row-parallel linears
  // (attention projection, FC2) move FP8 (Transformer Engine userbuffers' fp8_buf on
  // proj_fprop / fc2_fprop) instead of 16-bit values.
  bool tp_fp8_forward_reduce_scatter = false;
  // MoE (DESIGN.md A4).
  MoeDispatcher moe_token_dispatcher_type = MoeDispatcher::AllToAll;
  FlexBackend moe_flex_dispatcher_backend = FlexBackend::DeepEp;
  // SMs the flex dispatcher's kernels hold (Megatron-Core moe_flex_dispatcher_num_sms); unset:
  // the backend's default, DeepEP 20, HybridEP 16.
  std::optional<int> moe_flex_dispatcher_num_sms;
  bool moe_grouped_gemm = true;
  bool moe_shared_expert_overlap = false;
  bool overlap_moe_expert_parallel_comm = false;  // 1F1B all-to-all / compute overlap
  // Host time per kernel launch of the framework's own layer code, relative to a plain eager
  // PyTorch layer on the same host (the hardware profile's host_dispatch_s): module wrappers,
  // custom autograd functions, the router's and token dispatcher's bookkeeping; forward passes
  // (recompute included) and backward passes apart, as measured. 1 = plain PyTorch modules.
  // Measured for Megatron-Core (tools/measure/mcore_moe_host_time.py).
  double host_launch_factor_dense_forward = 1.0;
  double host_launch_factor_dense_backward = 1.0;
  double host_launch_factor_moe_forward = 1.0;
  double host_launch_factor_moe_backward = 1.0;
};

struct JobSpec {
  std::string name;
  ModelSpec model;
  ClusterSpec cluster;
  ParallelSpec parallel;
  TrainingSpec training;
  SystemSpec system;
  std::uint64_t seed = 1;
};

// Names for reports and errors.
const char* to_string(Activation v);
const char* to_string(Norm v);
const char* to_string(Precision v);
const char* to_string(Fp8Recipe v);
const char* to_string(Recompute v);
const char* to_string(Optimizer v);
const char* to_string(Topology v);
const char* to_string(Routing v);
const char* to_string(PlacementOrder v);
const char* to_string(MoeDispatcher v);
const char* to_string(FlexBackend v);
const char* to_string(TpOverlapScope v);
const char* to_string(DpOverlapGranularity v);
const char* to_string(AttentionKernel v);
const char* to_string(CommInitStore v);
const char* to_string(FsdpStaging v);
const char* to_string(OptimizerImpl v);
const char* to_string(CrossEntropyImpl v);
// The store a config names ("tcpstore", "redis"); InputError(path, ...) otherwise.
CommInitStore parse_comm_init_store(const std::string& text, const std::string& path);

// Micro-batches each pipeline runs per step: global batch / (micro-batch size x DP); at least
// 1 (and no division by zero) for a JobSpec built in code before validation.
inline std::int64_t micro_batches_per_pipeline(const JobSpec& job) {
  const std::int64_t dp = job.parallel.data_parallel_size > 1 ? job.parallel.data_parallel_size : 1;
  const std::int64_t mbs = job.training.micro_batch_size > 1 ? job.training.micro_batch_size : 1;
  const std::int64_t m = job.training.global_batch_size / (dp * mbs);
  return m > 1 ? m : 1;
}

// Whether pipeline transfers run beside compute (system.pp_overlap): only in the interleaved
// schedule. Megatron-Core reads overlap_p2p_comm in forward_backward_pipelining_with_interleaving
// alone; its 1F1B schedule without virtual stages blocks on every send and receive
// (pipeline_parallel/schedules.py). MegaScale's decoupled send and receive is likewise described
// for interleaved 1F1B (section 3.2).
inline bool pipeline_transfers_overlap(const JobSpec& job) {
  return job.system.pp_overlap && job.parallel.virtual_pipeline_model_parallel_size > 1;
}

// Why Megatron-Core would refuse system.overlap_moe_expert_parallel_comm for this job (its
// TransformerConfig asserts, megatron/core/transformer/transformer_config.py), or nullptr. One
// list for the validator, the planner and ablate. The merged 1F1B step is built for expert
// parallelism with the all-to-all or flex dispatcher, merges only in the interleaved schedule
// when PP > 1, runs the shared experts in its own expert node, and takes at most one MTP module;
// full recompute is refused, and (Megatron-Core 2026) recomputing the whole MoE block.
inline const char* merged_a2a_overlap_refusal(const JobSpec& job) {
  const auto& p = job.parallel;
  const auto& t = job.training;
  if (p.expert_model_parallel_size <= 1) return "needs expert_model_parallel_size > 1";
  if (t.recompute == Recompute::Full) return "cannot be combined with full recompute (Megatron-Core's rule)";
  if (t.recompute == Recompute::Selective && t.recompute_modules.moe) {
    return "cannot be combined with recompute_modules \"moe\" (Megatron-Core's rule)";
  }
  if (job.system.moe_token_dispatcher_type == MoeDispatcher::AllGather) {
    return "needs moe_token_dispatcher_type alltoall or flex (Megatron-Core's rule)";
  }
  if (p.pipeline_model_parallel_size > 1 && p.virtual_pipeline_model_parallel_size == 1) {
    return "with pipeline_model_parallel_size > 1 needs the interleaved schedule "
           "(virtual_pipeline_model_parallel_size > 1; Megatron-Core's rule)";
  }
  if (job.system.moe_shared_expert_overlap) return "cannot be combined with moe_shared_expert_overlap (Megatron-Core's rule)";
  if (job.model.num_nextn_predict_layers > 1) {
    return "supports at most 1 MTP module (num_nextn_predict_layers; Megatron-Core's rule)";
  }
  return nullptr;
}

// Warm-up forwards the job's pipeline schedule runs beyond (interleaved) 1F1B's: 1 under
// Megatron-Core's merged 1F1B (overlap_moe_expert_parallel_comm; schedules.py
// get_pp_rank_microbatches), 0 otherwise. The schedule, the step costs and the activation
// memory all read it here.
inline int extra_warmup_passes(const JobSpec& job) { return job.system.overlap_moe_expert_parallel_comm ? 1 : 0; }

// MoE parallel folding: ETP (the job's TP unless written), and expert DP = GPUs / (ETP*EP*PP).
inline int expert_tensor_parallel_size(const JobSpec& job) {
  return job.parallel.expert_tensor_parallel_size > 0 ? job.parallel.expert_tensor_parallel_size
                                                      : job.parallel.tensor_model_parallel_size;
}
inline std::int64_t expert_data_parallel_size(const JobSpec& job) {
  const std::int64_t grid = static_cast<std::int64_t>(expert_tensor_parallel_size(job)) *
                            job.parallel.expert_model_parallel_size * job.parallel.pipeline_model_parallel_size;
  const std::int64_t edp = grid > 0 ? job.cluster.num_gpus / grid : 1;
  return edp > 1 ? edp : 1;
}

// When the gradients are reduce-scattered: every micro-batch (system.dp_reduce_every_micro_batch
// under ZeRO-2/3), or once per step after each chunk's last backward (everything else).
inline bool gradients_reduced_every_micro_batch(const JobSpec& job) {
  return job.system.dp_reduce_every_micro_batch && job.parallel.zero_stage >= 2;
}

}  // namespace megasim
