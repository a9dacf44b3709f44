// Runs lowered collectives on the flow network (see runner.hpp).
#include "megasim/coll/runner.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "megasim/core/rng.hpp"
#include "megasim/core/zeroed_array.hpp"

namespace megasim {

struct CollectiveRunner::Prepared {
  struct Flow {
    const LinkPath* path = nullptr;  // into the runner's path cache
    double bytes = 0;
    int multiplicity = 1;
  };
  struct Phase {
    double latency_s = 0;
    std::vector<Flow> simulated;
    // Isolated edges, evaluated instead of simulated: the one that ends last (a copy's bytes and
    // rate; the phase ends with it, at any scale), what they put on their links (a FlowNetwork
    // link-load set) and how many flows they stand for.
    bool has_isolated = false;
    double critical_bytes = 0;
    double critical_rate_Bps = 0;
    std::size_t isolated_loads = 0;
    std::uint64_t isolated_flows = 0;
  };
  std::vector<Phase> phases;
};

struct CollectiveRunner::Running {
  std::shared_ptr<const Prepared> plan;
  std::string tag;
  std::function<void()> on_done;
  TaskId task = 0;
  std::size_t phase = 0;
  std::size_t pending = 0;
  double scale = 1;  // every flow's bytes times this (size_scale)
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

void CollectiveRunner::enable_isolated_edges(std::function<bool(int gpu)> touched_elsewhere) {
  touched_elsewhere_ = std::move(touched_elsewhere);
}

bool CollectiveRunner::may_isolate(int src, int dst) const {
  const ClusterSpec& c = fabric_.cluster();
  // A shared NIC carries several GPUs' edges: not private to one. A rail-only (multi-plane)
  // relay borrows the ports of the GPU on the destination's rail in the source's node; for a
  // group laid out alike on every node (every DP group of a step) that GPU is a member, so
  // the relay is a flow of the same phase and the conflict check below sees it.
  if (!touched_elsewhere_ || c.network.nics_per_node != c.gpus_per_node) return false;
  return !touched_elsewhere_(src) && !touched_elsewhere_(dst);
}

// prepare()'s working arrays, kept between calls: a 100,000-GPU step prepares a DP group of
// tens of thousands of edges 16 times, and fresh arrays each time were fresh pages to fault in.
struct CollectiveRunner::Scratch {
  // The flows of one (source, destination) pair. An edge is isolated when its endpoints may be
  // isolated, its route is switch-free (Router::direct_path), its flows have one size, and no
  // other edge of the phase uses its links.
  struct Edge {
    bool isolated = true;
    std::array<LinkId, 4> links{};
    int length = 0;
    double bytes = -1;
    std::uint64_t copies = 0;
  };
  std::vector<Edge> edges;
  std::vector<int> edge_of;                               // per flow step
  std::vector<const std::vector<WeightedPath>*> routed;  // per flow step, routed lazily
  std::vector<LinkId> touched;
  // Per link: 0 free, e + 1 claimed by edge e, -1 claimed by several (zero-filled lazily: a
  // phase touches a few of a large fabric's links).
  ZeroedArray<int> link_owner;
};

CollectiveRunner::~CollectiveRunner() = default;

std::shared_ptr<const CollectiveRunner::Prepared> CollectiveRunner::prepare(const CollectivePlan& plan) {
  auto out = std::make_shared<Prepared>();
  using Edge = Scratch::Edge;
  if (!scratch_) scratch_ = std::make_unique<Scratch>();
  Scratch& sc = *scratch_;
  if (touched_elsewhere_ && sc.link_owner.size() != fabric_.num_links()) sc.link_owner = ZeroedArray<int>(fabric_.num_links());
  const auto& cap = fabric_.link_capacity_Bps();
  for (const CollPhase& phase : plan.phases) {
    Prepared::Phase ph;
    ph.latency_s = phase.latency_s;
    // Routed lazily: an edge evaluated in isolation never enters the path cache.
    sc.routed.assign(phase.flows.size(), nullptr);
    auto route = [&](std::size_t i) -> const std::vector<WeightedPath>& {
      if (sc.routed[i] == nullptr) {
        const FlowStep& f = phase.flows[i];
        sc.routed[i] = &paths(f.src_gpu, f.dst_gpu, f.queue_pair);
      }
      return *sc.routed[i];
    };
    std::vector<Edge>& edges = sc.edges;
    edges.clear();
    // Hand back the links the previous phase claimed (also when it threw: a bad GPU id in a
    // hand-built plan).
    for (LinkId l : sc.touched) sc.link_owner[l] = 0;
    sc.touched.clear();
    sc.edge_of.assign(phase.flows.size(), -1);
    if (touched_elsewhere_) {
      std::unordered_map<std::uint64_t, int> index;
      auto claim = [&](LinkId l, int e) {
        int& owner = sc.link_owner[l];
        if (owner == 0) {
          owner = e + 1;
          sc.touched.push_back(l);
        } else if (owner != e + 1) {
          if (owner > 0) edges[static_cast<std::size_t>(owner - 1)].isolated = false;
          edges[static_cast<std::size_t>(e)].isolated = false;
          owner = -1;
        }
      };
      // Lowered phases list their flows sorted by (source, destination) (lower_collective), so an
      // edge's flows are one run and need no index; any other order goes through the map.
      const bool runs = std::is_sorted(phase.flows.begin(), phase.flows.end(), [](const FlowStep& a, const FlowStep& b) {
        return std::tie(a.src_gpu, a.dst_gpu) < std::tie(b.src_gpu, b.dst_gpu);
      });
      for (std::size_t i = 0; i < phase.flows.size(); ++i) {
        const FlowStep& f = phase.flows[i];
        int e = 0;
        if (runs) {
          const bool fresh = i == 0 || phase.flows[i - 1].src_gpu != f.src_gpu || phase.flows[i - 1].dst_gpu != f.dst_gpu;
          if (fresh) edges.emplace_back();
          e = static_cast<int>(edges.size()) - 1;
        } else {
          const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(f.src_gpu)) << 32) |
                                    static_cast<std::uint32_t>(f.dst_gpu);
          const auto [it, fresh] = index.emplace(key, static_cast<int>(edges.size()));
          if (fresh) edges.emplace_back();
          e = it->second;
        }
        sc.edge_of[i] = e;
        std::array<LinkId, 4> direct{};
        int length = 0;
        if (may_isolate(f.src_gpu, f.dst_gpu) && router_.direct_path(f.src_gpu, f.dst_gpu, direct, length)) {
          Edge& edge = edges[static_cast<std::size_t>(e)];
          if (edge.bytes >= 0 && edge.bytes != f.wire_bytes) edge.isolated = false;
          edge.links = direct;
          edge.length = length;
          edge.bytes = f.wire_bytes;
          edge.copies += static_cast<std::uint64_t>(f.multiplicity);
          for (int k = 0; k < length; ++k) claim(direct[static_cast<std::size_t>(k)], e);
        } else {
          edges[static_cast<std::size_t>(e)].isolated = false;
          for (const WeightedPath& p : route(i))
            for (LinkId l : p.links) claim(l, e);
        }
      }
    }

    for (std::size_t i = 0; i < phase.flows.size(); ++i) {
      const FlowStep& f = phase.flows[i];
      const int e = sc.edge_of[i];
      if (e >= 0 && edges[static_cast<std::size_t>(e)].isolated) continue;
      for (const WeightedPath& p : route(i)) ph.simulated.push_back({&p.links, f.wire_bytes * p.weight, f.multiplicity});
    }
    // The isolated edges' loads, one group per distinct (bytes, seconds): a ring's edges fall
    // in a few (NVLink hops, NIC hops).
    std::vector<FlowNetwork::LinkLoad> loads;
    double critical_s = -1;  // the exact (unrounded) time of the edge that ends last
    for (const Edge& e : edges) {
      if (!e.isolated || e.copies == 0 || !(e.bytes > 0)) continue;
      // Alone on its links, each copy gets the bottleneck's capacity over the copies.
      double bottleneck = std::numeric_limits<double>::infinity();
      for (int k = 0; k < e.length; ++k) bottleneck = std::min(bottleneck, cap[e.links[static_cast<std::size_t>(k)]]);
      const double rate = bottleneck / static_cast<double>(e.copies);
      // The critical edge by its exact time: rounding up to the picosecond keeps the order of
      // different times but can tie them, and a scaled start must still pick the later one.
      if (e.bytes / rate > critical_s) {
        critical_s = e.bytes / rate;
        ph.critical_bytes = e.bytes;
        ph.critical_rate_Bps = rate;
      }
      ph.has_isolated = true;
      ph.isolated_flows += e.copies;
      const double bytes = e.bytes * static_cast<double>(e.copies);
      const double busy_s = e.bytes / rate;
      auto group = std::find_if(loads.begin(), loads.end(), [&](const FlowNetwork::LinkLoad& g) {
        return g.bytes == bytes && g.busy_s == busy_s;
      });
      if (group == loads.end()) group = loads.insert(loads.end(), {bytes, busy_s, {}});
      group->links.insert(group->links.end(), e.links.begin(), e.links.begin() + e.length);
    }
    if (ph.has_isolated) ph.isolated_loads = network_.register_link_loads(std::move(loads));
    out->phases.push_back(std::move(ph));
  }
  return out;
}

void CollectiveRunner::start(const CollectiveRequest& req, std::function<void()> on_done) {
  start(lower_collective(req, fabric_.cluster(), model_), req.tag, std::move(on_done));
}

void CollectiveRunner::start(const CollectivePlan& plan, const std::string& tag,
                             std::function<void()> on_done) {
  start(prepare(plan), tag, std::move(on_done));
}

void CollectiveRunner::start(const std::shared_ptr<const Prepared>& plan, const std::string& tag,
                             std::function<void()> on_done, double scale) {
  if (!(scale > 0) || !std::isfinite(scale))
    throw std::invalid_argument("CollectiveRunner: a plan's scale must be finite and > 0");
  auto run = std::make_shared<Running>();
  run->plan = plan;
  run->scale = scale;
  run->tag = tag.empty() ? std::string("collective ") + std::to_string(started_) : tag;
  run->on_done = std::move(on_done);
  run->task = engine_.begin_task(run->tag);
  ++started_;
  start_phase(run);
}

void CollectiveRunner::start_phase(const std::shared_ptr<Running>& run) {
  if (run->phase >= run->plan->phases.size()) {
    // Completion is its own event so on_done never runs inside start().
    engine_.schedule_after(SimTime::from_ps(0), [this, run] {
      engine_.end_task(run->task);
      if (run->on_done) run->on_done();
    });
    return;
  }
  const Prepared::Phase& phase = run->plan->phases[run->phase];
  const std::size_t count = phase.simulated.size() + (phase.has_isolated ? 1 : 0);
  if (count == 0) {  // nothing to move: only the latency term
    engine_.schedule_after(SimTime::from_seconds(phase.latency_s), [this, run] {
      ++run->phase;
      start_phase(run);
    });
    return;
  }
  run->pending = count;
  const double k = run->scale;
  if (phase.has_isolated) {
    network_.add_link_loads(phase.isolated_loads, k);
    flows_isolated_ += phase.isolated_flows;
    // Scaled, the edge that ended last still does (its time is linear in its bytes); its end is
    // rounded as the flow network rounds a flow's.
    const SimTime end = SimTime::from_seconds(phase.latency_s) +
                        SimTime::from_ps(static_cast<std::int64_t>(
                            FlowNetwork::transfer_ps(phase.critical_bytes * k, phase.critical_rate_Bps)));
    engine_.schedule_after(end, [this, run] { flow_done(run); });
  }
  for (const Prepared::Flow& f : phase.simulated) {
    FlowRequest fr;
    fr.path = *f.path;
    fr.bytes = f.bytes * k;
    fr.latency_s = phase.latency_s;
    fr.multiplicity = f.multiplicity;
    fr.name = run->tag;
    fr.on_complete = [this, run] { flow_done(run); };
    network_.start_flow(std::move(fr));
    flows_simulated_ += static_cast<std::uint64_t>(f.multiplicity);
  }
}

void CollectiveRunner::flow_done(const std::shared_ptr<Running>& run) {
  if (--run->pending > 0) return;
  ++run->phase;
  start_phase(run);
}

}  // namespace megasim
