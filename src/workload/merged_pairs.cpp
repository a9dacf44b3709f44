#include "megasim/workload/merged_pairs.hpp"

#include <cstddef>
#include <cstdint>

namespace megasim {

namespace {

// A merged pass's exposure when its partner overlaps only `partner_layers` of its `layers`
// (its own count unknown, 0, or no partner, -1: the chunk's merged figure): the rest at the lone
// pass's rate.
double paired_ep_s(double merged_s, double alone_s, int layers, int partner_layers) {
  if (layers <= 0 || partner_layers < 0 || partner_layers >= layers) return merged_s;
  const double overlapped = static_cast<double>(partner_layers) / static_cast<double>(layers);
  return merged_s * overlapped + alone_s * (1.0 - overlapped);
}

}  // namespace

std::vector<bool> merged_passes(const StepCosts& c, PipelineSchedule schedule, int stage,
                                const std::vector<ChunkPass>& passes) {
  const std::int64_t total = c.micro_batches * c.vpp;
  // 1F1B's warm-up forwards on this stage; GPipe runs every forward before any backward.
  const std::int64_t warm = schedule == PipelineSchedule::OneFOneB
                                ? warmup_passes(c.pp, c.vpp, c.micro_batches, stage, c.extra_warmup_passes)
                                : total;
  std::vector<bool> out;
  out.reserve(passes.size());
  std::int64_t forwards = 0, backwards = 0;
  for (const ChunkPass& p : passes) out.push_back(p.forward ? forwards++ >= warm : backwards++ < total - warm);
  return out;
}

std::vector<double> scheduled_ep_exposure_s(const StepCosts& c, int stage, const std::vector<ChunkPass>& passes,
                                            const std::vector<bool>& merged) {
  const auto& chunks = c.chunks[static_cast<std::size_t>(stage)];
  const auto chunk = [&](int k) -> const ChunkCosts& { return chunks[static_cast<std::size_t>(k)]; };
  std::vector<int> steady_fwd, steady_bwd;  // chunks of the steady passes, in order
  for (std::size_t i = 0; i < passes.size(); ++i)
    if (merged[i]) (passes[i].forward ? steady_fwd : steady_bwd).push_back(passes[i].chunk);
  std::vector<double> out;
  out.reserve(passes.size());
  std::size_t nf = 0, nb = 0;
  for (std::size_t i = 0; i < passes.size(); ++i) {
    const ChunkPass& p = passes[i];
    const ChunkCosts& ch = chunk(p.chunk);
    const double merged_s = p.forward ? ch.fwd_ep_exposed_s : ch.bwd_ep_exposed_s;
    const double alone_s = p.forward ? ch.fwd_ep_alone_s : ch.bwd_ep_alone_s;
    if (!merged[i]) {
      out.push_back(alone_s);
      continue;
    }
    const std::vector<int>& partners = p.forward ? steady_bwd : steady_fwd;
    const std::size_t n = p.forward ? nf++ : nb++;
    const int partner_layers = n < partners.size() ? chunk(partners[n]).merged_layers : -1;
    out.push_back(paired_ep_s(merged_s, alone_s, ch.merged_layers, partner_layers));
  }
  return out;
}

}  // namespace megasim
