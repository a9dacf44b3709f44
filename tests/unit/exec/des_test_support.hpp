#pragma once
// Hand-built jobs and step costs for the DES tests (no dependency on the lead's cost model).
#include <string>

#include "megasim/catalogs/nccl_model_reader.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/specs.hpp"
#include "megasim/exec/step_costs.hpp"
#include "coll/test_clusters.hpp"

namespace megasim::destest {

// DGX A100 nodes (NVLink3 300 GB/s, 8 x 200 Gb/s NICs) under a rail-optimised Clos,
// figures from shared/reference/hardware-and-nccl.md.
inline JobSpec job(int tp, int pp, int vpp, std::int64_t gpus) {
  JobSpec j;
  j.name = "des-test";
  j.cluster = testing::dgx_a100(gpus / 8);
  j.parallel.tensor_model_parallel_size = tp;
  j.parallel.pipeline_model_parallel_size = pp;
  j.parallel.virtual_pipeline_model_parallel_size = vpp;
  j.parallel.data_parallel_size = gpus / (tp * pp);
  j.parallel.zero_stage = 1;
  return j;
}

// Equal stages: every chunk pass takes fwd_s / bwd_s; no communication unless set later.
inline StepCosts costs(const JobSpec& j, std::int64_t m, double fwd_s, double bwd_s) {
  StepCosts c;
  c.pp = j.parallel.pipeline_model_parallel_size;
  c.vpp = j.parallel.virtual_pipeline_model_parallel_size;
  c.dp = j.parallel.data_parallel_size;
  c.micro_batches = m;
  c.chunks.assign(static_cast<std::size_t>(c.pp), std::vector<ChunkCosts>(static_cast<std::size_t>(c.vpp)));
  for (auto& st : c.chunks)
    for (auto& ch : st) {
      ch.fwd_compute_s = fwd_s;
      ch.bwd_compute_s = bwd_s;
      ch.param_bytes = 1e6;
    }
  return c;
}

inline NcclModel nccl() { return load_default_nccl_model(std::string(MEGASIM_SOURCE_DIR) + "/configs"); }

}  // namespace megasim::destest
