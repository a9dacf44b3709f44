// The MegaScale 175B step on 12,288 GPUs (TP 8, PP 8, VPP 6, DP 192, 32 micro-batches,
// ZeRO-2, MegaScale overlaps) through the discrete-event engine with folding. Target: < 10 s
// and < 4 GiB on a 2-core machine. Step costs are hand-set round figures (not the cost
// model's) so the benchmark measures the simulator, not the physics.
#include <benchmark/benchmark.h>

#include <string>

#include "megasim/catalogs/nccl_model_reader.hpp"
#include "megasim/coll/nccl_model.hpp"
#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/exec/simulate.hpp"
#include "megasim/exec/des_step.hpp"
#include "megasim/net/topology_builders.hpp"
#include "coll/test_clusters.hpp"

namespace {

megasim::JobSpec job175b(std::int64_t gpus) {
  megasim::JobSpec j;
  j.cluster = megasim::testing::dgx_a100(gpus / 8);
  j.cluster.network.servers_per_tor = 64;  // MegaScale's ToR sets
  auto& p = j.parallel;
  p.tensor_model_parallel_size = 8;
  p.pipeline_model_parallel_size = 8;
  p.virtual_pipeline_model_parallel_size = 6;
  p.data_parallel_size = gpus / 64;
  p.zero_stage = 2;
  j.system.pp_overlap = j.system.dp_overlap = j.system.dp_prefetch_first_all_gather = true;
  return j;
}

megasim::StepCosts costs175b(const megasim::JobSpec& j, std::int64_t m) {
  megasim::StepCosts c;
  c.pp = 8;
  c.vpp = 6;
  c.dp = j.parallel.data_parallel_size;
  c.micro_batches = m;
  c.chunks.assign(8, std::vector<megasim::ChunkCosts>(6));
  for (auto& st : c.chunks)
    for (auto& ch : st) {
      ch.layers = 2;
      ch.fwd_compute_s = 9e-3;   // 2 layers of 175B, b = 1, s = 2048, TP 8 on A100: ~9 ms
      ch.bwd_compute_s = 18e-3;
      ch.param_bytes = 2 * 2 * 12.0 * 12288 * 12288 / 8;
    }
  c.p2p_bytes = 2.0 * 2048 * 12288 / 8;  // bf16 activations, SP shard per GPU
  c.dp_grad_reduce_bytes = 4.0 * 12 * 12.0 * 12288 * 12288 / 8;  // fp32 grads of 12 layers
  c.dp_param_gather_bytes = 2.0 * 12 * 12.0 * 12288 * 12288 / 8;
  c.optimizer_s = 0.05;
  c.data_loading_s = 0.05;
  c.dp_overlap_compute_slowdown = 0.05;
  return c;
}

void BM_MegaScale175B(benchmark::State& state) {
  const std::int64_t gpus = state.range(0);
  const auto j = job175b(gpus);
  const auto c = costs175b(j, 6144 / j.parallel.data_parallel_size);
  const megasim::Fabric f = megasim::build_fabric(j.cluster);
  const megasim::NcclModel nccl =
      megasim::load_default_nccl_model(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  for (auto _ : state) {
    const auto r = megasim::simulate_step_des(j, c, f, nccl, megasim::DesOptions{});
    state.counters["step_s"] = r.step_time_s;
    benchmark::DoNotOptimize(r.step_time_s);
  }
}
BENCHMARK(BM_MegaScale175B)->Arg(3072)->Arg(12288)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

// DeepSeek-V3 on 1,024 H100s (configs/bench/deepseek-v3-1024-h100.json) through the whole
// pipeline, cost model included: parse, MoE step costs, event engine. Target (issue 26): < 10 s.
void BM_DeepSeekV3_1024(benchmark::State& state) {
  const auto catalog = megasim::Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  const auto job =
      megasim::load_job(std::string(MEGASIM_SOURCE_DIR) + "/configs/bench/deepseek-v3-1024-h100.json", {}, catalog);
  for (auto _ : state) {
    const megasim::StepReport r = megasim::simulate_step(job, catalog, megasim::SimulateOptions{});
    benchmark::DoNotOptimize(r.step_time_s);
  }
}
BENCHMARK(BM_DeepSeekV3_1024)->Unit(benchmark::kMillisecond)->Iterations(3);

BENCHMARK_MAIN();
