#include "megasim/plan/expert_grid.hpp"

#include <algorithm>
#include <cstdint>

namespace megasim {

namespace {

struct Grid {
  std::int64_t etp = 1, ep = 1, edp = 1;
};

Grid grid_of(const Placement& placement, const JobSpec& job) {
  Grid g;
  g.etp = expert_tensor_parallel_size(job);
  g.ep = std::max(1, job.parallel.expert_model_parallel_size);
  const std::int64_t per_stage = static_cast<std::int64_t>(placement.tp()) * placement.cp() * placement.dp();
  g.edp = std::max<std::int64_t>(1, per_stage / (g.etp * g.ep));
  return g;
}

// The GPU at index i of the stage's attention grid (tp fastest, then cp, then dp).
int gpu_at(const Placement& placement, std::int64_t index, int stage) {
  const std::int64_t tp = placement.tp(), cp = placement.cp();
  return placement.gpu_of({static_cast<int>(index % tp), static_cast<int>((index / tp) % cp), index / (tp * cp), stage});
}

}  // namespace

std::vector<std::vector<int>> expert_parallel_groups(const Placement& placement, const JobSpec& job, int stage) {
  const Grid g = grid_of(placement, job);
  std::vector<std::vector<int>> groups;
  for (std::int64_t d = 0; d < g.edp; ++d)
    for (std::int64_t e = 0; e < g.etp; ++e) {
      std::vector<int> members;
      for (std::int64_t r = 0; r < g.ep; ++r) members.push_back(gpu_at(placement, e + g.etp * (r + g.ep * d), stage));
      groups.push_back(std::move(members));
    }
  return groups;
}

std::vector<std::vector<int>> expert_data_parallel_groups(const Placement& placement, const JobSpec& job,
                                                          int stage) {
  const Grid g = grid_of(placement, job);
  std::vector<std::vector<int>> groups;
  for (std::int64_t r = 0; r < g.ep; ++r)
    for (std::int64_t e = 0; e < g.etp; ++e) {
      std::vector<int> members;
      for (std::int64_t d = 0; d < g.edp; ++d) members.push_back(gpu_at(placement, e + g.etp * (r + g.ep * d), stage));
      groups.push_back(std::move(members));
    }
  return groups;
}

}  // namespace megasim
