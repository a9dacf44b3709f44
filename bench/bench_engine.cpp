// Engine throughput: schedule and run 1e6 events (pseudo-random times, plus a same-time
// burst), and a self-rescheduling chain that keeps the queue small.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "megasim/core/rng.hpp"
#include "megasim/sim/engine.hpp"

namespace {

void BM_EngineScheduleRun1M(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  for (auto _ : state) {
    megasim::Engine engine;
    megasim::Rng rng(1);
    std::uint64_t sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const auto t = megasim::SimTime::from_ps(static_cast<std::int64_t>(rng.below(1'000'000'000)));
      engine.schedule_at(t, [&sum, i] { sum += static_cast<std::uint64_t>(i); });
    }
    engine.run();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_EngineScheduleRun1M)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// Each event schedules the next of its own chain: queue depth stays at `chains`.
void BM_EngineChains(benchmark::State& state) {
  const std::int64_t chains = state.range(0);
  const std::int64_t total = 1'000'000;
  for (auto _ : state) {
    megasim::Engine engine;
    std::int64_t left = total;
    struct Step {
      megasim::Engine* engine;
      std::int64_t* left;
      std::int64_t delay_ps;
      void operator()() const {
        if (--*left <= 0) return;
        engine->schedule_after(megasim::SimTime::from_ps(delay_ps), *this);
      }
    };
    for (std::int64_t c = 0; c < chains; ++c) {
      engine.schedule_at(megasim::SimTime::from_ps(c), Step{&engine, &left, 1000 + c});
    }
    engine.run();
    benchmark::DoNotOptimize(engine.events_processed());
  }
  state.SetItemsProcessed(state.iterations() * total);
}
BENCHMARK(BM_EngineChains)->Arg(1000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
