#pragma once
// Flows on the discrete-event engine (DESIGN.md B3): a flow first pays its latency, then
// shares link bandwidth max-min fairly with every other active flow (MaxMinSolver) until its
// bytes are delivered, then calls on_complete.
//
// Byte accounting is lazy: each flow keeps (remaining bytes, rate, time of last update).
// Changes (a flow joining or leaving) only mark links dirty; one resolve event per timestamp
// re-solves the touched components, advances just the flows whose rate changed to `now` with
// their old rate, and reschedules only their completion events. Completion times are rounded
// up to the picosecond so a flow never finishes early.
//
// Every flow is an Engine task named after the request (or "flow <id>"), so a run that ends
// with flows stuck (e.g. on a zero-capacity link) shows up in Engine::require_all_finished().
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "megasim/core/units.hpp"
#include "megasim/core/zeroed_array.hpp"
#include "megasim/net/link.hpp"
#include "megasim/net/maxmin_solver.hpp"
#include "megasim/sim/engine.hpp"

namespace megasim {

// (slot, generation) packed in 64 bits; never 0.
using FlowId = std::uint64_t;
inline constexpr FlowId kNoFlow = 0;

struct FlowRequest {
  LinkPath path{};          // empty: a local copy limited only by rate_cap_Bps
  // Instead of `path`: a route the caller keeps alive until the flow completes (a cached
  // route), read in place rather than copied for each of a run's half-million flows.
  const LinkPath* shared_path = nullptr;
  double bytes = 0.0;       // per flow; each of the `multiplicity` copies moves this many
  double latency_s = 0.0;   // paid before the flow takes bandwidth
  double rate_cap_Bps = std::numeric_limits<double>::infinity();
  int multiplicity = 1;
  std::function<void()> on_complete{};
  std::string name{};       // task name for the deadlock report; default "flow <id>"
};

class FlowNetwork {
 public:
  FlowNetwork(Engine& engine, std::span<const double> link_capacity_Bps);
  FlowNetwork(Engine& engine, const std::vector<double>& link_capacity_Bps)
      : FlowNetwork(engine, std::span<const double>(link_capacity_Bps)) {}
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Negative/NaN bytes or latency, multiplicity < 1, cap <= 0 or an unknown link are
  // programming errors (std::invalid_argument).
  FlowId start_flow(FlowRequest request);

  bool is_active(FlowId id) const;
  // Current rate of one copy of the flow; 0 while it is still paying latency.
  double flow_rate_Bps(FlowId id) const;
  // Bytes not yet delivered by one copy, as of now().
  double flow_remaining_bytes(FlowId id) const;

  // Bytes carried by the link direction (all copies) by the flows that have completed; a flow
  // still in flight is counted when it completes.
  double link_bytes(LinkId link) const;
  // Seconds during which at least one flow was transferring over the link.
  double link_busy_s(LinkId link) const;
  // Load of traffic evaluated outside the network (CollectiveRunner's isolated edges): bytes
  // and the seconds the link carried them, added to the link's counters. A set that recurs (a
  // prepared collective's, once per start) is registered once and added by weight (each
  // entry's bytes and seconds times the weight): its links are updated once, when the
  // counters are next read, instead of at every start.
  // A set is a few groups of links that each carried the same load (a ring's edges all do).
  struct LinkLoad {
    double bytes = 0;   // on each of the links
    double busy_s = 0;
    std::vector<LinkId> links;
  };
  std::size_t register_link_loads(std::vector<LinkLoad> loads);
  void add_link_loads(std::size_t set, double weight);
  // The k links with most bytes, ties by lower id; links that carried nothing are omitted.
  std::vector<std::pair<LinkId, double>> busiest_links(std::size_t k) const;

  // Picoseconds to move `bytes` at `rate_Bps`, rounded up so a flow never finishes early (the
  // slack of a few ulps keeps an exact quotient from gaining a picosecond through rounding
  // noise). CollectiveRunner's isolated edges use it to end where a simulated flow would.
  static double transfer_ps(double bytes, double rate_Bps);

  std::size_t active_flows() const { return active_; }
  std::uint64_t flows_completed() const { return completed_; }
  std::uint64_t flows_started() const { return started_; }
  const MaxMinSolver& solver() const { return solver_; }
  Engine& engine() const { return engine_; }

 private:
  struct NetFlow {
    FlowRequest req;
    const LinkPath& path() const { return req.shared_path != nullptr ? *req.shared_path : req.path; }
    FlowHandle handle;            // valid while transferring
    double remaining_bytes = 0.0;
    double rate_Bps = 0.0;
    SimTime last_update;
    EventId event = kNoEvent;     // completion (latency ends run as shared activations)
    TaskId task = 0;
    std::uint32_t gen = 1;
    bool live = false;
    bool transferring = false;
  };

  NetFlow* lookup(FlowId id);
  const NetFlow* lookup(FlowId id) const;
  static FlowId pack(std::uint32_t slot, std::uint32_t gen) {
    return (static_cast<std::uint64_t>(gen) << 32) | slot;
  }
  void activate(std::uint32_t slot);
  void activate_after_latency(std::uint32_t slot, SimTime at);
  void run_activation(std::uint32_t batch);
  void advance(NetFlow& f);
  void schedule_completion(std::uint32_t slot);
  void on_completion_event(std::uint32_t slot);
  void finish(std::uint32_t slot);
  void request_resolve();
  void resolve();
  void fold_link_loads() const;  // registered sets' pending weight into the link counters

  Engine& engine_;
  MaxMinSolver solver_;
  std::vector<NetFlow> flows_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<std::uint32_t> solver_to_net_;  // solver slot -> our slot
  // Per link direction, zero until a flow crosses it (most of a large fabric's never are).
  // Mutable: reading them folds in the registered load sets' pending weight first, so the const
  // readers write (a FlowNetwork is single-threaded, as its engine). Sets live as long as the
  // network: a caller that registers one per start (CollectiveRunner::start with a plan, not a
  // prepared one) grows them with every start.
  mutable ZeroedArray<double> link_bytes_;
  mutable ZeroedArray<std::int64_t> link_busy_ps_;
  struct LoadSet {
    std::vector<LinkLoad> loads;
    double weight = 0;  // added since the last fold
  };
  mutable std::vector<LoadSet> load_sets_;
  mutable std::vector<std::size_t> pending_sets_;  // sets with weight to fold
  ZeroedArray<std::int64_t> link_busy_since_ps_;
  ZeroedArray<std::uint32_t> link_active_;
  // Flows whose latency ends at the same picosecond, started one after another with no other
  // event scheduled in between, share one activation event: the same order of effects as one
  // event each, without a heap entry per flow (a pipeline transfer starts hundreds at once).
  std::vector<std::vector<std::uint32_t>> activations_;  // slots per batch, pooled
  std::vector<std::uint32_t> free_activations_;
  std::int64_t open_batch_ps_ = -1;     // when the batch that may still take flows activates
  std::uint64_t open_batch_seq_ = 0;    // engine_.events_scheduled() right after scheduling it
  std::uint32_t open_batch_ = 0;
  bool resolve_pending_ = false;
  std::size_t active_ = 0;
  std::uint64_t started_ = 0;
  std::uint64_t completed_ = 0;
};

}  // namespace megasim
