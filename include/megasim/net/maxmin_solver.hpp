#pragma once
// Flow-level max-min fair sharing over link directions (DESIGN.md B3), solved by progressive
// filling ("water-filling"): raise every unfrozen flow's rate together until a link saturates
// or a flow reaches its own cap, freeze those flows, repeat.
//
// One constraint per LinkId (a link *direction*), one variable per flow. A flow of
// multiplicity k stands for k identical flows: it consumes k times its rate on every link of
// its path and all k get the same rate (symmetry folding without changing the answer).
//
// Incremental: add_flow/remove_flow only mark the touched links dirty; solve() re-solves the
// connected components (flows sharing links, transitively) reachable from dirty links and
// leaves every other flow's rate untouched. changed_flows() lists the flows whose rate moved
// (beyond nearly_equal) in the last solve, so a caller can reschedule only those.
//
// Not thread-safe; no globals. Invalid arguments (unknown link, multiplicity < 1, cap <= 0,
// negative/NaN capacity) are programming errors: std::invalid_argument.
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "megasim/core/huge_pages.hpp"
#include "megasim/core/zeroed_array.hpp"
#include "megasim/net/link.hpp"

namespace megasim {

struct FlowHandle {
  std::uint32_t slot = std::numeric_limits<std::uint32_t>::max();
  std::uint32_t gen = 0;
  friend bool operator==(const FlowHandle&, const FlowHandle&) = default;
};

class MaxMinSolver {
 public:
  static constexpr double kUnlimited = std::numeric_limits<double>::infinity();

  // Copies the capacities (a fabric's are a million links at 98,304 GPUs: read in place from
  // the fabric's huge-page-backed array, not through a std::vector copy).
  explicit MaxMinSolver(std::span<const double> link_capacity_Bps);
  explicit MaxMinSolver(const std::vector<double>& link_capacity_Bps)
      : MaxMinSolver(std::span<const double>(link_capacity_Bps)) {}
  ~MaxMinSolver();
  MaxMinSolver(const MaxMinSolver&) = delete;
  MaxMinSolver& operator=(const MaxMinSolver&) = delete;

  // A flow with an empty path is constrained only by its cap (rate = cap, possibly +inf).
  FlowHandle add_flow(const LinkPath& path, double cap_Bps = kUnlimited, int multiplicity = 1);
  void remove_flow(FlowHandle h);
  // Re-solves the dirty components. Rates of new flows are 0 until the next solve().
  void solve();
  bool dirty() const { return !dirty_links_.empty(); }

  bool valid(FlowHandle h) const;
  double rate_Bps(FlowHandle h) const;
  double cap_Bps(FlowHandle h) const;
  int multiplicity(FlowHandle h) const;
  LinkPath path(FlowHandle h) const;
  // Flows whose rate changed in the last solve() (new flows always appear), in slot order.
  const std::vector<FlowHandle>& changed_flows() const { return changed_; }

  // Sum of rate x multiplicity over the flows crossing the link (O(flows on the link)).
  double link_load_Bps(LinkId link) const;
  double link_capacity_Bps(LinkId link) const;
  std::size_t num_links() const { return capacity_.size(); }
  std::size_t num_flows() const { return live_flows_; }
  std::size_t flows_on_link(LinkId link) const;

  // Work counters, for benchmarks and the curious.
  std::uint64_t solves() const { return solves_; }
  std::uint64_t flows_resolved() const { return flows_resolved_; }
  std::size_t last_component_flows() const { return comp_flows_.size(); }

 private:
  // A flow's hops: the link and the index of the flow's entry in that link's list. Held inline
  // up to kInline hops (a GPU-to-GPU path across a three-tier Clos is 8 links), so moving
  // another flow's entry (remove_flow) touches that flow's slot only, not a second allocation:
  // remove_flow was the solver's largest cost on the planner's runs.
  class Hops {
   public:
    struct Hop {
      LinkId link;
      std::uint32_t pos;
    };
    void assign(const LinkPath& path) {
      n_ = static_cast<std::uint32_t>(path.size());
      if (n_ > kInline) heap_.resize(n_);
      Hop* h = data();
      for (std::size_t i = 0; i < path.size(); ++i) h[i] = Hop{path[i], 0};
    }
    void clear() { n_ = 0; }
    std::size_t size() const { return n_; }
    Hop& operator[](std::size_t i) { return data()[i]; }
    Hop* begin() { return data(); }
    Hop* end() { return data() + n_; }
    const Hop* begin() const { return data(); }
    const Hop* end() const { return data() + n_; }

   private:
    static constexpr std::uint32_t kInline = 10;
    Hop* data() { return n_ <= kInline ? inline_.data() : heap_.data(); }
    const Hop* data() const { return n_ <= kInline ? inline_.data() : heap_.data(); }
    std::array<Hop, kInline> inline_{};
    std::vector<Hop> heap_;  // paths longer than kInline
    std::uint32_t n_ = 0;
  };
  struct Flow {
    Hops hops;
    double cap_Bps = kUnlimited;
    // In a solve: min(cap, capacity / weight of each finite link the flow has to itself). A link
    // with one flow constrains only that flow, so it acts as a cap instead of a heap entry.
    double bound_Bps = kUnlimited;
    double rate_Bps = 0.0;
    double weight = 1.0;  // multiplicity as a double
    std::uint32_t gen = 1;
    std::uint32_t stamp = 0;  // component-visit epoch
    bool live = false;
    bool fresh = false;  // added since the last solve: reported as changed
    bool frozen = false;
    int multiplicity = 1;
  };
  struct LinkEntry {
    std::uint32_t flow;
    std::uint32_t hop;
  };
  // Everything the solver keeps per link direction, its flow list included: one lookup per hop
  // instead of three (a list index, the list's header, its entries), and all-zero until a flow
  // crosses the link. The entries live in a malloc'd block (owned_lists_ names the links that
  // have one; the destructor frees them).
  struct LinkState {
    double remaining_Bps = 0.0;
    double weight = 0.0;  // sum of multiplicities of unfrozen flows
    LinkEntry* entries = nullptr;
    std::uint32_t size = 0;
    std::uint32_t capacity = 0;
    std::uint32_t stamp = 0;
    std::uint8_t dirty = 0;  // in dirty_links_
  };

  const Flow& flow_at(FlowHandle h) const;
  void check_link(LinkId link) const;
  void mark_dirty(LinkId link);
  void collect_component(LinkId seed);
  void fill_component();
  void freeze(std::uint32_t flow, double rate_Bps);

  // The flows on a link (a folded run on a 98,304-GPU fabric touches a few thousand of its
  // million link directions: per-link memory is only touched where used).
  std::span<LinkEntry> list_of(LinkId link) { return {link_state_[link].entries, link_state_[link].size}; }
  std::span<const LinkEntry> list_of(LinkId link) const { return {link_state_[link].entries, link_state_[link].size}; }
  void push_entry(LinkId link, LinkEntry e);

  BigVector<double> capacity_;
  ZeroedArray<LinkState> link_state_;
  std::vector<LinkId> owned_lists_;  // links whose entries block the solver allocated
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_flows_;
  std::size_t live_flows_ = 0;

  std::vector<LinkId> dirty_links_;
  std::vector<FlowHandle> changed_;
  std::uint32_t epoch_ = 0;

  // Scratch reused between solves (no allocation on the steady-state path).
  std::vector<std::uint32_t> comp_flows_;
  std::vector<LinkId> comp_links_;
  std::vector<LinkId> bfs_;
  std::vector<std::uint32_t> capped_;
  struct HeapItem {
    double share_Bps;  // the link's fair share when keyed; it only grows while filling
    LinkId link;
  };
  std::vector<HeapItem> heap_;

  std::uint64_t solves_ = 0;
  std::uint64_t flows_resolved_ = 0;
};

}  // namespace megasim
