// The four TP-communication regimes a collective of a pass can run under, each a named function
// below, and the pass loop that picks one per collective:
//   Transformer Engine's userbuffers (tp_overlap, scope all-linears): each collective priced
//     beside its own GEMMs by TE's method for it (bulk, ring exchange, pipelined reduce-scatter);
//   Megatron's asynchronous backward collectives (tp_async_backward) off the overlap path;
//   MegaScale's chunked overlap (tp_overlap, scope ffn): the overlap path's collectives run in
//     token chunks, priced together with their GEMMs by apply_tp_overlap;
//   serial: on the critical path.
#include "pass_times.hpp"

#include <algorithm>

#include "host_launch_queue.hpp"
#include "megasim/hw/kernel_time.hpp"

namespace megasim {

namespace {

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
  return chunks * op_time_s(c.hw, c.job.cluster.gpu, piece);
}

// The time a compute op takes in the pass: overlap-path forward and dgrad GEMMs (m = tokens) run
// in token chunks. Weight-gradient GEMMs reduce over the tokens (k = tokens): they stay whole,
// since splitting the reduction would rewrite the whole weight gradient once per chunk.
bool runs_chunked(const LayerOp& op, int chunks) {
  return op.kind == OpKind::Gemm && op.tp_overlap_path && chunks > 1 && !op.weight_gradient;
}
double compute_op_time_s(const Context& c, const LayerOp& op, int chunks) {
  return runs_chunked(op, chunks) ? chunked_gemm_time_s(c, op, chunks) : op_time_s(c.hw, c.job.cluster.gpu, op);
}

// A compute op's kernel launches in the pass: a chunked GEMM launches once per chunk.
int op_launches(const LayerOp& op, int chunks) { return runs_chunked(op, chunks) ? op.kernels * chunks : op.kernels; }

// A collective on the TP-overlap path runs once per GEMM chunk on 1/chunks of the bytes (each
// piece pays the collective's latency at the lower bandwidth of its smaller message).
int collective_pieces(const LayerOp& op, int chunks) { return op.tp_overlap_path ? chunks : 1; }
double chunked_collective_s(const Context& c, const LayerOp& op, int chunks) {
  const int pieces = collective_pieces(op, chunks);
  return pieces * comm_op_time_s(c, op, op.comm_bytes / pieces);
}

// The backward GEMMs a collective runs beside (LayerOp::beside_gemms), their pass times summed.
double beside_gemm_s(const LayerOp& op, const std::vector<double>& op_s) {
  double s = 0;
  for (const std::size_t i : op.beside_gemms) s += op_s[i];
  return s;
}

// Transformer Engine's userbuffers (tp_overlap with tp_overlap_scope = all-linears) overlap each
// collective its own way (TE's initialize_ub method table): the forward all-gathers and the
// backward output-gradient all-gathers by ring exchange with the GEMM that consumes them (the GEMM
// starts on the local shard while the next shard arrives, so nothing is exposed beyond what
// outlasts the remaining GEMM chunks); the forward reduce-scatters pipelined behind the GEMM that
// produces them (the last chunk's reduction is exposed); the wgrad input all-gather and the
// dgrad reduce-scatter in bulk beside the dgrad and wgrad GEMMs (Megatron's async pair).
bool te_userbuffers(const JobSpec& job) { return job.system.tp_overlap && job.system.tp_overlap_scope == TpOverlapScope::AllLinears; }

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

// What the pass loop knows while it reaches collective ops[i].
struct PassState {
  const std::vector<LayerOp>& ops;
  const std::vector<double>& op_s;  // each compute op's pass time
  int chunks;
};

// Regime 1: Transformer Engine's userbuffers, each collective priced beside its own GEMMs.
void te_userbuffers_collective(const Context& c, const PassState& p, std::size_t i, PassTimes& t) {
  const LayerOp& op = p.ops[i];
  double s = 0, exposed = 0;
  if (!op.beside_gemms.empty()) {
    s = comm_op_time_s(c, op, op.comm_bytes);
    exposed = beside_exposed_s(s, beside_gemm_s(op, p.op_s), c.overlap_slowdown);
  } else if (op.kind == OpKind::TpAllGather) {
    s = p.chunks * comm_op_time_s(c, op, op.comm_bytes / p.chunks);
    exposed = ring_exchange_exposed_s(s, gemms_after_s(p.ops, p.op_s, i), p.chunks, c.overlap_slowdown);
  } else {
    s = p.chunks * comm_op_time_s(c, op, op.comm_bytes / p.chunks);
    exposed = pipelined_reduce_scatter_exposed_s(s, gemms_before_s(p.ops, p.op_s, i), p.chunks, c.overlap_slowdown);
  }
  t.async_comm_s += s;
  t.async_exposed_s += exposed;
}

// Regime 2: Megatron's asynchronous backward collective beside its linear's other GEMM.
void megatron_async_collective(const Context& c, const PassState& p, std::size_t i, PassTimes& t) {
  const LayerOp& op = p.ops[i];
  const double s = comm_op_time_s(c, op, op.comm_bytes);
  t.async_comm_s += s;
  t.async_exposed_s += beside_exposed_s(s, beside_gemm_s(op, p.op_s), c.overlap_slowdown);
}

// Regimes 3 and 4: a fused collective of MegaScale's chunked overlap runs in pieces
// (chunked_collective_s; apply_tp_overlap prices what hides); any other is serial.
void chunked_or_serial_collective(const Context& c, const PassState& p, std::size_t i, PassTimes& t) {
  const LayerOp& op = p.ops[i];
  (op.tp_overlap_path ? t.overlap_comm_s : t.other_comm_s) += chunked_collective_s(c, op, p.chunks);
}

void time_collective(const Context& c, const PassState& p, std::size_t i, PassTimes& t) {
  const LayerOp& op = p.ops[i];
  if (op.kind == OpKind::CpExchange) {
    t.cp_comm_s += comm_op_time_s(c, op, op.comm_bytes);
    return;
  }
  if (collective_group(c, op).ranks <= 1) return;
  if (te_userbuffers(c.job) && op.tp_overlap_path) return te_userbuffers_collective(c, p, i, t);
  // Chunked TP overlap takes the overlap-path collectives; Megatron's asynchronous backward
  // collectives off that path run beside their linear's other GEMM.
  const bool chunk_overlapped = c.job.system.tp_overlap && op.tp_overlap_path;
  if (c.job.system.tp_async_backward && !op.beside_gemms.empty() && !chunk_overlapped) {
    return megatron_async_collective(c, p, i, t);
  }
  chunked_or_serial_collective(c, p, i, t);
}

// Host time per launch of one op: the framework's rate, or a plain eager op's for the ops a
// plain PyTorch loop launches (LayerOp::plain_torch_launches).
double op_host_s_per_launch(const Context& c, const LayerOp& op, double framework_s_per_launch) {
  return op.plain_torch_launches ? c.hw.host_dispatch_s : framework_s_per_launch;
}

// The host's time to issue a collective op. Each piece is a torch.distributed call
// (ProcessGroupNCCL's work object, events, stream waits and the NCCL enqueue, with the output's
// allocation: hardware profile host_collective_call_s, host_all_reduce_call_s for an in-place
// all-reduce, host_all_to_all_call_s for Megatron-Core's all-to-all with its split lists;
// measured), which the framework host factors leave out: they were measured on one GPU, where
// Megatron-Core bypasses every collective. No call is made over a one-rank group (the same
// bypass) or for Transformer Engine's userbuffers collectives (issued inside their GEMM's launch). The flex dispatcher's DeepEP / HybridEP exchange is its
// own C++ call, unmeasured: one launch at the framework's rate.
double collective_host_s(const Context& c, const LayerOp& op, int chunks, double host_s_per_launch) {
  if (collective_group(c, op).ranks <= 1) return 0.0;
  if (te_userbuffers(c.job) && op.tp_overlap_path) return 0.0;
  const int pieces = collective_pieces(op, chunks);
  if (is_ep_exchange(op.kind)) {
    switch (c.job.system.moe_token_dispatcher_type) {
      case MoeDispatcher::Flex: return pieces * host_s_per_launch;
      case MoeDispatcher::AllToAll: return pieces * c.hw.host_all_to_all_call_s;
      case MoeDispatcher::AllGather: break;
    }
  }
  return pieces * (op.kind == OpKind::TpAllReduce ? c.hw.host_all_reduce_call_s : c.hw.host_collective_call_s);
}

// A pass whose host blocks at ops[s] until the GPU is idle (LayerOp::host_waits_for_gpu): the
// stretch between two waits is this pass's ops from the wait to its end and the next layer's up
// to its wait - in steady state this pass rotated to start at ops[s] - launched at
// host_s_per_launch apiece (host_launch_queue.hpp). Collectives count as GPU time at their serial
// duration, issued at collective_host_s.
double host_wait_idle_s(const Context& c, const std::vector<LayerOp>& ops, const std::vector<double>& op_s,
                        std::size_t s, int chunks, double host_s_per_launch) {
  std::vector<LaunchedOp> run;
  run.reserve(ops.size());
  for (std::size_t n = 0; n < ops.size(); ++n) {
    const std::size_t i = (s + n) % ops.size();
    const LayerOp& op = ops[i];
    if (is_communication(op.kind)) {
      const int pieces = collective_pieces(op, chunks);
      run.push_back({chunked_collective_s(c, op, chunks), pieces,
                     collective_host_s(c, op, chunks, host_s_per_launch) / pieces});
    } else {
      run.push_back({op_s[i], op_launches(op, chunks), op_host_s_per_launch(c, op, host_s_per_launch)});
    }
  }
  return gpu_idle_behind_host_s(run);
}

}  // namespace

PassTimes time_ops(const Context& c, const std::vector<LayerOp>& ops, double host_s_per_launch) {
  PassTimes t;
  const int chunks = overlap_chunks(c.job);
  // Each compute op's time in the pass, once: the loop sums them and the collectives that run
  // beside GEMMs read theirs by position.
  std::vector<double> op_s(ops.size(), 0.0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!is_communication(ops[i].kind)) op_s[i] = compute_op_time_s(c, ops[i], chunks);
  }
  const PassState state{ops, op_s, chunks};
  double host_launch_s = 0;  // the host's time to launch the pass's kernels and issue its collectives
  int ep_exchanges = 0;      // EP exchanges begun so far (PassTimes::first_exchange_s)
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const LayerOp& op = ops[i];
    if (is_communication(op.kind)) host_launch_s += collective_host_s(c, op, chunks, host_s_per_launch);
    if (is_ep_exchange(op.kind)) {
      if (i == 0 || !is_ep_exchange(ops[i - 1].kind)) ++ep_exchanges;
      (ep_exchanges == 1 ? t.first_exchange_s : t.second_exchange_s) += comm_op_time_s(c, op, op.comm_bytes);
      continue;
    }
    if (op.kind == OpKind::EpAllGather) {
      t.ep_serial_comm_s += comm_op_time_s(c, op, op.comm_bytes);
      continue;
    }
    if (is_communication(op.kind)) {
      time_collective(c, state, i, t);
      continue;
    }
    t.compute_s += op_s[i];
    t.kernels += op_launches(op, chunks);
    host_launch_s += op_launches(op, chunks) * op_host_s_per_launch(c, op, host_s_per_launch);
    if (op.kind == OpKind::Gemm && op.tp_overlap_path) t.overlap_gemm_s += op_s[i];
    if (op.shared_expert) t.shared_expert_s += op_s[i];
    if (op.attention_block && op.weight_gradient) t.attention_wgrad_s += op_s[i];
    if (op.combine_node) {
      t.combine_node_kernels_s += op_s[i];
    } else {
      (op.expert_side || op.shared_expert ? t.expert_side_kernels_s : t.attention_side_kernels_s) += op_s[i];
    }
  }
  // An eager framework cannot launch faster than its host issues kernels: when the kernels are
  // short the GPU waits for the CPU (hw profile host_dispatch_s times the framework's factor,
  // both measured). Where the host waits
  // for the GPU mid-pass it cannot run ahead: the GPU also idles after the wait. The queue counts
  // the pass's collectives at their serial time; where overlap later hides them, the host still
  // had to launch everything, so the rate bound stays a floor.
  const double rate_bound_s = host_launch_s;
  const auto wait = std::find_if(ops.begin(), ops.end(), [](const LayerOp& op) { return op.host_waits_for_gpu; });
  if (wait != ops.end()) {
    t.host_wait_s = host_wait_idle_s(c, ops, op_s, static_cast<std::size_t>(wait - ops.begin()), chunks,
                                     host_s_per_launch);
    t.compute_s = std::max(t.compute_s + t.host_wait_s, rate_bound_s);
  } else {
    // Only this op list's own exchanges can use its slack: PassTimes are summed over layers and
    // over a backward and its recomputation, and a list with a host wait has none to give.
    t.host_slack_s = std::min(std::max(0.0, rate_bound_s - t.compute_s), t.ep_exchange_s());
    t.compute_s = std::max(t.compute_s, rate_bound_s);
  }
  return t;
}

}  // namespace megasim
