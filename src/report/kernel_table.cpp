#include "megasim/report/kernel_table.hpp"

#include <fmt/format.h>

#include "megasim/core/units.hpp"

namespace megasim {

namespace {

// Shape column: m x n x k for a GEMM, heads x queries x span for attention, bytes otherwise.
std::string kernel_shape(const LayerOp& op) {
  if (op.kind == OpKind::Gemm) return fmt::format("{}x{}x{}{}", op.gemm_m, op.gemm_n, op.gemm_k, op.fp8 ? " fp8" : "");
  if (op.kind == OpKind::Attention) {
    return fmt::format("{}h {}q {}kv", op.attn.batch * op.attn.heads, op.attn.seq_q, op.attn.seq_kv_span);
  }
  return format_bytes(is_communication(op.kind) ? op.comm_bytes : op.bytes);
}

// Achieved rate: TFLOP/s for FLOP-bound kernels, GB/s of HBM traffic for memory-bound ones,
// GB/s of (full-tensor) collective size for communication.
std::string kernel_rate(const LayerOp& op, double s) {
  if (s <= 0) return "-";
  if (op.kind == OpKind::Gemm || op.kind == OpKind::Attention) return fmt::format("{:.0f} TFLOP/s", op.flops / s / 1e12);
  return fmt::format("{:.0f} GB/s", (is_communication(op.kind) ? op.comm_bytes : op.bytes) / s / 1e9);
}

}  // namespace

void write_kernel_table(const std::vector<LayerKernelTime>& rows, std::ostream& out) {
  out << "kernels of one layer, one micro-batch, this GPU (each timed alone: GEMMs whole, collectives\n"
         "at their serial time before TP overlap hides them):\n";
  out << fmt::format("  {:<9} {:<22} {:<17} {:<26} {:>11} {:>15}\n", "pass", "kernel", "kind", "shape", "time", "rate");
  std::string pass;
  double pass_s = 0, pass_comm_s = 0;
  int launches = 0;
  const auto flush = [&] {
    if (pass.empty()) return;
    out << fmt::format("  {:<9} total compute {:.3f} ms, collectives {:.3f} ms (serial), {} kernel launches\n", pass,
                       pass_s * 1e3, pass_comm_s * 1e3, launches);
  };
  for (const auto& r : rows) {
    if (r.pass != pass) {
      flush();
      pass = r.pass;
      pass_s = pass_comm_s = 0;
      launches = 0;
    }
    (is_communication(r.op.kind) ? pass_comm_s : pass_s) += r.time_s;
    launches += is_communication(r.op.kind) ? 1 : r.op.kernels;
    out << fmt::format("  {:<9} {:<22} {:<17} {:<26} {:8.1f} us {:>15}\n", r.pass, r.op.name, to_string(r.op.kind),
                       kernel_shape(r.op), r.time_s * 1e6, kernel_rate(r.op, r.time_s));
  }
  flush();
}

}  // namespace megasim
