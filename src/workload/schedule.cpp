#include "megasim/workload/schedule.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "megasim/core/error.hpp"

namespace megasim {

namespace {

// Megatron's get_model_chunk_id / microbatch id for virtual pass k.
ChunkPass virtual_pass(std::int64_t k, bool forward, int p, int v) {
  const std::int64_t group = k % (static_cast<std::int64_t>(p) * v);
  int chunk = static_cast<int>(group / p);
  if (!forward) chunk = v - 1 - chunk;
  const std::int64_t mb = (k / (static_cast<std::int64_t>(p) * v)) * p + k % p;
  return {forward, chunk, mb};
}

}  // namespace

std::int64_t warmup_passes(int p, int v, std::int64_t m, int stage, int extra_warmup) {
  const std::int64_t total = m * v;
  if (v == 1) return std::min<std::int64_t>(p - stage - 1 + extra_warmup, m);
  if (m == p) return total;
  return std::min<std::int64_t>(static_cast<std::int64_t>(p - stage - 1) * 2 +
                                    static_cast<std::int64_t>(v - 1) * p + extra_warmup,
                                total);
}

std::vector<ChunkPass> stage_schedule(PipelineSchedule schedule, int p, int v, std::int64_t m,
                                      int stage, int extra_warmup) {
  if (p < 1 || v < 1 || m < 1 || stage < 0 || stage >= p) {
    throw std::invalid_argument("stage_schedule: p, v, m must be >= 1 and 0 <= stage < p");
  }
  std::vector<ChunkPass> out;
  out.reserve(static_cast<std::size_t>(2 * m * v));
  if (schedule == PipelineSchedule::GPipe) {
    for (int c = 0; c < v; ++c)
      for (std::int64_t i = 0; i < m; ++i) out.push_back({true, c, i});
    for (int c = v - 1; c >= 0; --c)
      for (std::int64_t i = 0; i < m; ++i) out.push_back({false, c, i});
    return out;
  }
  if (v > 1 && m % p != 0) {
    throw InputError("parallel.virtual_pipeline_model_parallel_size",
                     "the interleaved schedule needs micro-batches per pipeline (" +
                         std::to_string(m) + ") to be a multiple of pipeline_model_parallel_size (" +
                         std::to_string(p) + ")");
  }
  const std::int64_t total = m * v;
  const std::int64_t warm = warmup_passes(p, v, m, stage, extra_warmup);
  for (std::int64_t k = 0; k < warm; ++k) out.push_back(virtual_pass(k, true, p, v));
  for (std::int64_t k = 0; k < total - warm; ++k) {
    out.push_back(virtual_pass(warm + k, true, p, v));
    out.push_back(virtual_pass(k, false, p, v));
  }
  for (std::int64_t k = total - warm; k < total; ++k) out.push_back(virtual_pass(k, false, p, v));
  return out;
}

}  // namespace megasim
