#include "tp_overlap.hpp"

#include <algorithm>

namespace megasim {

OverlapResult apply_tp_overlap(const PassTimes& t, const TpOverlapConfig& cfg) {
  OverlapResult r;
  if (!cfg.enabled || t.overlap_comm_s <= 0) {
    r.exposed_s = t.overlap_comm_s + t.other_comm_s + t.async_exposed_s;
    return r;
  }
  const double k = std::max(1, cfg.chunks);
  // Pipelined chunks: first communication chunk exposed, then max(comm, gemm) per remaining
  // chunk; exposed = total - gemm.
  const double comm = t.overlap_comm_s, gemm = t.overlap_gemm_s;
  const double pipelined = comm / k + (k - 1) / k * std::max(comm, gemm) + gemm / k;
  const double overlapped = std::min(comm * (k - 1) / k, gemm);
  r.exposed_s = (pipelined - gemm) + cfg.slowdown * overlapped + t.other_comm_s + t.async_exposed_s;
  return r;
}

double beside_exposed_s(double comm_s, double gemm_s, double slowdown) {
  return std::max(0.0, comm_s - gemm_s) + slowdown * std::min(comm_s, gemm_s);
}

double ring_exchange_exposed_s(double comm_s, double gemm_s, int k, double slowdown) {
  const double hiding = gemm_s * (k - 1) / k;
  return std::max(0.0, comm_s - hiding) + slowdown * std::min(comm_s, hiding);
}

double pipelined_reduce_scatter_exposed_s(double comm_s, double gemm_s, int k, double slowdown) {
  return comm_s / k + static_cast<double>(k - 1) / k * std::max(0.0, comm_s - gemm_s) +
         slowdown * std::min(comm_s * (k - 1) / k, gemm_s);
}

}  // namespace megasim
