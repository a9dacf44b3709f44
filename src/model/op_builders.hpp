#pragma once
// The builders the layer-op lists are made of (private to the model module): the per-rank
// dimensions of a layer and small constructors for GEMMs, memory-bound kernels and collectives,
// shared by the dense layer (layer_ops.cpp) and the MoE block (moe_ops.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "megasim/config/specs.hpp"
#include "megasim/model/layer_ops.hpp"

namespace megasim::model_detail {

struct Dims {
  std::int64_t t, cp, b, s_local, tokens, h, a_local, g_local, hd, q_local, kv_local, f_local,
      fc1_local, span, vocab_local;
  double e;      // bytes per activation element
  bool sp, fused, ptb, gated;
  bool hidden_dropout, attention_dropout;  // dropout kernels run (probability > 0)
  bool bias;                               // linear layers carry biases
  bool rope;                               // rotary position embeddings rotate Q and K
  bool rope_unfused;  // ... in PyTorch ops (YaRN outside MLA: Megatron-Core never fuses it)
  bool qk_norm;       // each head's query and key are RMS-normalised after the projection
  bool attn_overlap;  // the attention block's linears are on the TP-overlap path too
  bool fp8;           // the layer's linears run in FP8 (Transformer Engine)
  Fp8Recipe fp8_recipe;  // how TE scales them (the casts' kernels and bytes)
  bool fp8_forward_rs;  // forward reduce-scatters of the row-parallel linears in FP8
  // The GPU's FP8 GEMMs take non-TN layouts (Blackwell): one per-tensor-scaled FP8 copy serves
  // both usages, so TE writes no transposes (utils.py is_non_tn_fp8_gemm_supported).
  bool fp8_non_tn = false;
  double main_grad_bytes;          // per element of the main-grad buffer wgrad GEMMs accumulate into
  AttentionKernel attention_kernel;
  std::int64_t o_local = 0;  // input width of the attention projection (MLA: heads x v_head_dim)
  bool mla = false;          // multi-head latent attention's projections instead of one QKV GEMM
  std::int64_t mla_rope_local = 0;  // MLA: this rank's heads x qk_rope_head_dim
};

Dims dims(const JobSpec& job);
Dims dims(const JobSpec& job, const LayerKind& kind);
double dd(std::int64_t v);

LayerOp gemm(std::string name, std::int64_t m, std::int64_t n, std::int64_t k, double e, bool overlap);
// A transformer layer's linear: FP8 under fp8 training.
LayerOp linear(const Dims& x, std::string name, std::int64_t m, std::int64_t n, std::int64_t k, bool overlap);
LayerOp mem(std::string name, OpKind kind, double bytes, int kernels);

// The weights behind a layer's op list: its forward linears (an n x k weight each) or, in a
// backward list, their wgrad GEMMs (m x n output); expert GEMMs count once per local expert.
struct LinearWeights {
  double dense = 0;   // parameters sharded over DP x CP
  double expert = 0;  // routed experts' parameters, sharded over expert DP
  int linears = 0;    // GEMMs counted
  double total() const { return dense + expert; }
};
LinearWeights linear_weights(const std::vector<LayerOp>& ops, bool backward);

// Shared by the layer and the embedding / LM head (embedding_ops.cpp).
double resid_elems(const Dims& x);  // elements of the residual stream this rank holds
LayerOp norm_fwd(const Dims& x, const char* name);
LayerOp norm_bwd(const Dims& x, const char* name);
// dgrad + wgrad GEMMs of a linear; returns the dgrad's position, its wgrad follows it.
std::size_t add_gemm_bwd(std::vector<LayerOp>& ops, const Dims& x, const char* name, std::int64_t n,
                         std::int64_t k, bool overlap, bool fp8);
LayerOp comm(std::string name, OpKind kind, double bytes, bool overlap);
// Sets `flag` on the compute ops appended since ops[from] (the collectives are left unmarked).
void mark_compute_from(std::vector<LayerOp>& ops, std::size_t from, bool LayerOp::*flag);

// The FP32-weight casts torch.autocast adds to a layer's forward or backward op list
// (system.autocast_fp32_weights; autocast_ops.cpp), from the linears and norms already in it.
void add_autocast_casts(std::vector<LayerOp>& ops, const Dims& x, bool backward);
// PyTorch FSDP's per-unit staging copies (system.fsdp_staging; fsdp_staging_ops.cpp) appended
// to a layer's forward or backward op list; `weights` are the layer's, from its forward linears
// (a backward list's wgrad GEMMs miss the router, whose gradient no GEMM epilogue accumulates).
void add_fsdp_staging(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, const LinearWeights& weights,
                      bool backward);

LayerOp act_fwd(const Dims& x);  // over x.tokens x x.f_local (x.fc1_local in)
LayerOp act_bwd(const Dims& x);
// TP all-gather of the SP shard / reduce-scatter (all-reduce without SP) of T x h elements.
// `width` features a token (0: the hidden size).
void add_ag(std::vector<LayerOp>& ops, const Dims& x, const char* name, bool overlap, double elem_bytes,
            std::int64_t width = 0);
void add_rs_or_ar(std::vector<LayerOp>& ops, const Dims& x, const char* name, bool overlap, double elem_bytes);
// The same with 16-bit elements (x.e).
void add_ag(std::vector<LayerOp>& ops, const Dims& x, const char* name, bool overlap);
void add_rs_or_ar(std::vector<LayerOp>& ops, const Dims& x, const char* name, bool overlap);
double norm_out_bytes(const Dims& x);
double forward_rs_bytes(const Dims& x, bool on_overlap_path);
// Ring attention's K/V exchange over the CP group (none with CP 1).
void add_cp(std::vector<LayerOp>& ops, const Dims& x, const char* name);
// The rotary embedding of Q and K in one pass (rope_ops.cpp): fused, or unfused under YaRN.
void add_rope(std::vector<LayerOp>& ops, const Dims& x, bool backward);
void add_qk_norm(std::vector<LayerOp>& ops, const Dims& x, bool backward);
// Megatron-Core's copies around the fused QKV output (system.qkv_split_copies; qkv_split_ops.cpp):
// the GQA query's reshape, the value made contiguous for TE's attention, the gradients' concat.
void add_query_reshape_copy(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);
void add_value_contiguous_copy(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);
void add_qkv_grad_concat(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);
// The MoE router and the all-to-all dispatcher's metadata (moe_router_ops.cpp); `tokens`: this
// rank's tokens entering the MoE block.
void add_router_forward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, std::int64_t tokens,
                        bool grad_enabled);
// The router computes its logits, scores and probabilities in FP32 (training.moe_router_dtype
// fp32, the default), or in the input's 16 bits ("input").
bool router_in_fp32(const JobSpec& job);
void add_router_backward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, std::int64_t tokens);
void add_dispatch_metadata(std::vector<LayerOp>& ops, const JobSpec& job, std::int64_t tokens, bool across_ranks);
// FP8 only: TE's quantization of a 16-bit tensor of `elems` elements (with its transpose), in
// `splits` pieces when a grouped linear quantizes each local expert's rows (split_quantize).
void add_fp8_cast_transpose(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems,
                            std::int64_t splits = 1);
// ... writing one copy only (read 2, write 1 bytes per element).
void add_fp8_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems,
                  std::int64_t splits = 1);
// The transpose of a saved FP8 tensor for its wgrad GEMM: none on a non-TN GPU, none but FP8.
void add_fp8_transpose(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems);
LayerOp fp8_transpose(const std::string& of, double elems);
// FP8 only: the quantization of a norm's output (its own elements, the SP shard) that feeds a TE
// LayerNormLinear (under delayed scaling the norm kernel writes FP8 itself), and whether the
// backward transposes the gathered copy for the wgrad (with SP on a TN-only GPU).
void add_fp8_norm_output_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems);
bool fp8_norm_output_transposed_in_backward(const Dims& x);
// FP8 only: a plain column-parallel TE linear's own cast of its input (hidden-size tokens), and
// the backward's transpose of its gathered copy (with SP).
void add_column_input_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of);
void add_column_input_transpose(std::vector<LayerOp>& ops, const Dims& x, const std::string& of);
// FP8 only: the cast of a row-parallel linear's output-gradient shard before its SP all-gather,
// and the bytes an element that gather moves.
void add_fp8_gather_cast(std::vector<LayerOp>& ops, const Dims& x, const std::string& of, double elems);
double fp8_gather_bytes(const Dims& x);
// The attention projection's FP8 input under a non-delayed recipe: Megatron-Core has it keep its
// 16-bit input (set_save_original_input), so the forward quantizes it row-wise only and the
// backward quantizes the kept input again for the wgrad.
void add_proj_input_cast_fwd(std::vector<LayerOp>& ops, const Dims& x, double elems);
void add_proj_input_cast_bwd(std::vector<LayerOp>& ops, const Dims& x, double elems);
// dgrad + wgrad of one linear (position of the dgrad GEMM returned; its wgrad follows).
std::size_t add_linear_bwd(std::vector<LayerOp>& ops, const Dims& x, const char* name, std::int64_t n,
                           std::int64_t k, bool overlap);
void add_row_linear_bwd(std::vector<LayerOp>& ops, const Dims& x, const char* name, std::int64_t k, bool overlap);
// Under fp8 with SP a row-parallel linear's output gradient is gathered in FP8 (tp_comm_ops.cpp).
bool fp8_gathered_grad(const Dims& x);
void add_grad_ag(std::vector<LayerOp>& ops, const Dims& x, const char* name, const std::string& of, bool overlap);
void add_col_bwd_comm(std::vector<LayerOp>& ops, const Dims& x, const char* tag, bool overlap,
                      const std::vector<std::size_t>& dgrads, double input_elem_bytes, std::int64_t width = 0);

// The attention block's input projections: one QKV GEMM, or MLA's down- and up-projections
// (attention_projections.cpp). The backward returns the position of the dgrad GEMM whose wgrad
// follows it and that the TP backward collectives run beside.
void add_qkv_fwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);
std::size_t add_qkv_bwd(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);

// The MoE block in place of the dense MLP, after the post-attention norm (moe_ops.cpp).
// `grad_enabled`: autograd is on in this forward (not a checkpointed first forward, which runs
// without it: the router's loss and expert-bias count run only with it).
void add_moe_forward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x, bool grad_enabled);
void add_moe_backward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);
// Pieces a selective recompute replays: the experts' activation, the shared experts' forward,
// MLA's up-projections with RoPE.
void add_moe_activation(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);
void add_shared_experts_forward(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);
void add_mla_up_projections(std::vector<LayerOp>& ops, const JobSpec& job, const Dims& x);

}  // namespace megasim::model_detail
