// The tensor- and context-parallel collectives around a layer's linears: sequence-parallel
// all-gathers (FP8 ones with current scaling's amax all-reduce), reduce-scatters or all-reduces,
// the backward's gathers of row-parallel output gradients and of column-parallel inputs, and
// ring attention's K/V exchange. Which layer issues which is layer_ops.cpp's.
#include "op_builders.hpp"

namespace megasim::model_detail {

// A sequence-parallel all-gather of this rank's shard, `elem_bytes` an element. An FP8 one (1) gathers a
// tensor Transformer Engine has just quantized: the input of a column-parallel linear forward,
// the output gradient of a row-parallel one backward. Under current scaling every TP rank must
// quantize with one scale, so the quantizer first all-reduces its 4-byte amax over the TP group
// (TE v2.9 module/linear.py, layernorm_linear.py, layernorm_mlp.py
// _customize_quantizers_float8_current_scaling: with_amax_reduction on the TP group for a
// sequence-parallel column input and row grad_output): a latency-bound collective on the
// compute stream before the gather.
void add_ag(std::vector<LayerOp>& ops, const Dims& x, const char* name, bool overlap, double elem_bytes,
            std::int64_t width) {
  if (!x.sp) return;
  if (elem_bytes == 1.0 && x.fp8 && x.fp8_recipe == Fp8Recipe::Tensorwise && x.t > 1) {
    ops.push_back(comm(std::string(name) + "_amax_all_reduce", OpKind::TpAllReduce, 4.0, false));
  }
  ops.push_back(comm(name, OpKind::TpAllGather, dd(x.tokens) * dd(width > 0 ? width : x.h) * elem_bytes, overlap));
}
void add_ag(std::vector<LayerOp>& ops, const Dims& x, const char* name, bool overlap) {
  add_ag(ops, x, name, overlap, x.e);
}
// Bytes per element of a LayerNorm output that feeds a layer's column-parallel linear.
double norm_out_bytes(const Dims& x) { return x.fp8 ? 1.0 : x.e; }

void add_rs_or_ar(std::vector<LayerOp>& ops, const Dims& x, const char* name, bool overlap, double elem_bytes) {
  if (x.t <= 1) return;
  ops.push_back(comm(name, x.sp ? OpKind::TpReduceScatter : OpKind::TpAllReduce,
                     dd(x.tokens) * dd(x.h) * elem_bytes, overlap));
}
void add_rs_or_ar(std::vector<LayerOp>& ops, const Dims& x, const char* name, bool overlap) {
  add_rs_or_ar(ops, x, name, overlap, x.e);
}
// Bytes per element of a forward reduce-scatter of a row-parallel linear's output: FP8 when
// system.tp_fp8_forward_reduce_scatter puts that linear's userbuffer in FP8 (it must be on the
// TP-overlap path, which is where userbuffers are).
double forward_rs_bytes(const Dims& x, bool on_overlap_path) {
  return x.fp8_forward_rs && on_overlap_path ? 1.0 : x.e;
}

void add_cp(std::vector<LayerOp>& ops, const Dims& x, const char* name) {
  if (x.cp <= 1) return;
  // Ring attention: each rank forwards its K/V block cp-1 times.
  ops.push_back(comm(name, OpKind::CpExchange,
                     dd(x.tokens) * dd(x.kv_local) * x.e * dd(x.cp - 1), false));
}

// Under fp8 with sequence parallelism a row-parallel linear's output gradient arrives as this
// rank's sequence shard and is all-gathered for the dgrad and wgrad GEMMs. Transformer Engine
// casts the shard to FP8 before the gather, so the gather moves 1 byte per element, and
// transposes the gathered FP8 gradient for the wgrad GEMM (TE grad_output_preprocess: "FP8 case
// with gather: unfused bgrad, cast, transpose for efficient gather"; its userbuffers for
// proj_dgrad / fc2_dgrad are FP8 under an FP8 recipe, initialize_ub's all-gather layers).
bool fp8_gathered_grad(const Dims& x) { return x.fp8 && x.sp; }

// The all-gather of a row-parallel linear's output gradient (the backward of its forward
// reduce-scatter), preceded under fp8 by the cast of the local shard.
void add_grad_ag(std::vector<LayerOp>& ops, const Dims& x, const char* name, const std::string& of, bool overlap) {
  if (!x.sp) return;
  if (fp8_gathered_grad(x)) add_fp8_gather_cast(ops, x, of + "_grad_shard", dd(x.tokens) / dd(x.t) * dd(x.h));
  add_ag(ops, x, name, overlap, fp8_gathered_grad(x) ? fp8_gather_bytes(x) : x.e);
}

// Backward of a column-parallel input: forward AG -> backward RS of dX (SP) or AR (no SP);
// with SP the input is all-gathered again for wgrad (Megatron does not keep the gathered copy).
// Megatron issues these asynchronously beside the `linears`' own backward GEMMs: the
// all-gather beside the dgrad GEMM, the reduce-scatter / all-reduce beside the wgrad GEMM.
// `dgrads`: the linears' dgrad GEMM positions (add_linear_bwd); each wgrad GEMM follows its dgrad.
void add_col_bwd_comm(std::vector<LayerOp>& ops, const Dims& x, const char* tag, bool overlap,
                      const std::vector<std::size_t>& dgrads, double input_elem_bytes, std::int64_t width) {
  if (x.t <= 1) return;
  const double elems = dd(x.tokens) * dd(width > 0 ? width : x.h);
  std::vector<std::size_t> wgrads;
  for (const std::size_t d : dgrads) wgrads.push_back(d + 1);
  if (x.sp) {
    ops.push_back(comm(std::string("tp_all_gather_wgrad_") + tag, OpKind::TpAllGather, elems * input_elem_bytes,
                       overlap));
    ops.back().beside_gemms = dgrads;
    ops.push_back(comm(std::string("tp_reduce_scatter_dgrad_") + tag, OpKind::TpReduceScatter, elems * x.e, overlap));
    ops.back().beside_gemms = wgrads;
  } else {
    ops.push_back(comm(std::string("tp_all_reduce_dgrad_") + tag, OpKind::TpAllReduce, elems * x.e, overlap));
    ops.back().beside_gemms = wgrads;
  }
}

}  // namespace megasim::model_detail
