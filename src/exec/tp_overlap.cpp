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

}  // namespace megasim
