// Planner speed: exhaustive search for the 530B model on 5,128 and 5,120 GPUs (MegaScale's
// fabric), analytic ranking of every candidate plus the event-engine re-simulation of the
// top 10. Target: < 3 s on a 2-core machine. Results in RESULTS.md.
#include <benchmark/benchmark.h>

#include <string>

#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/sweep/plan_search.hpp"

namespace {

using megasim::Catalog;

megasim::JobSpec bench_job(std::int64_t gpus) {
  const Catalog cat = Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  megasim::JobSpec job =
      megasim::load_job(std::string(MEGASIM_SOURCE_DIR) + "/configs/bench/plan-530b-5128.json", {}, cat);
  job.cluster.num_gpus = gpus;  // the search replaces the plan, so only the size matters
  return job;
}

void run(benchmark::State& state, std::int64_t gpus, bool des) {
  const Catalog cat = Catalog::open(std::string(MEGASIM_SOURCE_DIR) + "/configs");
  const megasim::JobSpec job = bench_job(gpus);
  megasim::PlanSearchOptions o;
  o.space.global_batch_sizes = {1260, 2520, 2564};
  o.top_k = 10;
  o.rerank_engine = des ? megasim::EngineKind::Des : megasim::EngineKind::Analytic;
  o.jobs = static_cast<int>(state.range(0));
  megasim::PlanSearchResult r;
  for (auto _ : state) {
    r = megasim::search_plans(job, cat, o);
    benchmark::DoNotOptimize(r.valid);
  }
  state.counters["candidates"] = static_cast<double>(r.candidates_total);
  state.counters["valid"] = static_cast<double>(r.valid);
  state.counters["memory_rejected"] = static_cast<double>(r.rejected["memory"]);
  state.counters["best_step_s"] = r.ranked.empty() ? 0.0 : r.ranked.front().step_time_s;
  state.counters["best_mfu"] = r.ranked.empty() ? 0.0 : r.ranked.front().mfu;
  if (!r.ranked.empty()) state.SetLabel(r.ranked.front().key);
}

void BM_Plan530B_5120_Top10Des(benchmark::State& s) { run(s, 5120, true); }
void BM_Plan530B_5120_AnalyticOnly(benchmark::State& s) { run(s, 5120, false); }
void BM_Plan530B_5128_Top10Des(benchmark::State& s) { run(s, 5128, true); }

BENCHMARK(BM_Plan530B_5120_Top10Des)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Plan530B_5120_AnalyticOnly)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Plan530B_5128_Top10Des)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
BENCHMARK_MAIN();
