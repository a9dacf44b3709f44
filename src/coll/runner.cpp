// Runs lowered collectives on the flow network (see runner.hpp).
#include "megasim/coll/runner.hpp"

#include <utility>

#include "megasim/core/rng.hpp"

namespace megasim {

struct CollectiveRunner::Running {
  CollectivePlan plan;
  std::string tag;
  std::function<void()> on_done;
  TaskId task = 0;
  std::size_t phase = 0;
  std::size_t pending = 0;
};

std::size_t CollectiveRunner::KeyHash::operator()(const Key& k) const {
  return static_cast<std::size_t>(stable_hash({static_cast<std::uint64_t>(k.src),
                                               static_cast<std::uint64_t>(k.dst), k.qp}));
}

CollectiveRunner::CollectiveRunner(Engine& engine, FlowNetwork& network, const Router& router,
                                   const Fabric& fabric, const NcclModel& model)
    : engine_(engine), network_(network), router_(router), fabric_(fabric), model_(model) {}

const std::vector<WeightedPath>& CollectiveRunner::paths(int src, int dst, std::uint64_t qp) {
  const Key key{src, dst, qp};
  auto it = path_cache_.find(key);
  if (it == path_cache_.end()) it = path_cache_.emplace(key, router_.paths(src, dst, qp)).first;
  return it->second;
}

void CollectiveRunner::start(const CollectiveRequest& req, std::function<void()> on_done) {
  start(lower_collective(req, fabric_.cluster(), model_), req.tag, std::move(on_done));
}

void CollectiveRunner::start(const CollectivePlan& plan, const std::string& tag,
                             std::function<void()> on_done) {
  auto run = std::make_shared<Running>();
  run->plan = plan;
  run->tag = tag.empty() ? std::string("collective ") + std::to_string(started_) : tag;
  run->on_done = std::move(on_done);
  run->task = engine_.begin_task(run->tag);
  ++started_;
  start_phase(run);
}

void CollectiveRunner::start_phase(const std::shared_ptr<Running>& run) {
  if (run->phase >= run->plan.phases.size()) {
    // Completion is its own event so on_done never runs inside start().
    engine_.schedule_after(SimTime::from_ps(0), [this, run] {
      engine_.end_task(run->task);
      if (run->on_done) run->on_done();
    });
    return;
  }
  const CollPhase& phase = run->plan.phases[run->phase];
  std::size_t count = 0;
  for (const FlowStep& f : phase.flows) count += paths(f.src_gpu, f.dst_gpu, f.queue_pair).size();
  if (count == 0) {  // nothing to move: only the latency term
    engine_.schedule_after(SimTime::from_seconds(phase.latency_s), [this, run] {
      ++run->phase;
      start_phase(run);
    });
    return;
  }
  run->pending = count;
  for (const FlowStep& f : phase.flows) {
    for (const WeightedPath& p : paths(f.src_gpu, f.dst_gpu, f.queue_pair)) {
      FlowRequest fr;
      fr.path = p.links;
      fr.bytes = f.wire_bytes * p.weight;
      fr.latency_s = phase.latency_s;
      fr.multiplicity = f.multiplicity;
      fr.name = run->tag;
      fr.on_complete = [this, run] { flow_done(run); };
      network_.start_flow(std::move(fr));
    }
  }
}

void CollectiveRunner::flow_done(const std::shared_ptr<Running>& run) {
  if (--run->pending > 0) return;
  ++run->phase;
  start_phase(run);
}

}  // namespace megasim
