#include "megasim/net/maxmin_solver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#include "megasim/core/slot_pool.hpp"
#include "megasim/core/units.hpp"

namespace megasim {

namespace {

// Min-heap on (share, link): the link id breaks ties so the freezing order, and hence the
// floating-point rounding of every rate, is deterministic.
struct HeapLater {
  template <class Item>
  bool operator()(const Item& a, const Item& b) const {
    return a.share_Bps != b.share_Bps ? a.share_Bps > b.share_Bps : a.link > b.link;
  }
};

// Weights are sums of integer multiplicities; anything below one half is zero.
constexpr double kZeroWeight = 0.5;

}  // namespace

MaxMinSolver::MaxMinSolver(std::span<const double> link_capacity_Bps)
    : capacity_(link_capacity_Bps.begin(), link_capacity_Bps.end()),
      link_state_(capacity_.size()) {
  for (std::size_t i = 0; i < capacity_.size(); ++i) {
    if (!(capacity_[i] >= 0.0)) {
      throw std::invalid_argument("MaxMinSolver: capacity of link " + std::to_string(i) +
                                  " must be >= 0 and not NaN");
    }
  }
}

MaxMinSolver::~MaxMinSolver() {
  for (const LinkId link : owned_lists_) std::free(link_state_[link].entries);
}

void MaxMinSolver::check_link(LinkId link) const {
  if (link >= capacity_.size()) {
    throw std::invalid_argument("MaxMinSolver: link id " + std::to_string(link) +
                                " out of range (" + std::to_string(capacity_.size()) +
                                " links)");
  }
}

const MaxMinSolver::Flow& MaxMinSolver::flow_at(FlowHandle h) const {
  if (!valid(h)) throw std::invalid_argument("MaxMinSolver: stale or invalid flow handle");
  return flows_[h.slot];
}

bool MaxMinSolver::valid(FlowHandle h) const {
  return h.slot < flows_.size() && flows_[h.slot].live && flows_[h.slot].gen == h.gen;
}

double MaxMinSolver::rate_Bps(FlowHandle h) const { return flow_at(h).rate_Bps; }
double MaxMinSolver::cap_Bps(FlowHandle h) const { return flow_at(h).cap_Bps; }
int MaxMinSolver::multiplicity(FlowHandle h) const { return flow_at(h).multiplicity; }
LinkPath MaxMinSolver::path(FlowHandle h) const {
  LinkPath out;
  for (const Hops::Hop& hop : flow_at(h).hops) out.push_back(hop.link);
  return out;
}

double MaxMinSolver::link_capacity_Bps(LinkId link) const {
  check_link(link);
  return capacity_[link];
}

std::size_t MaxMinSolver::flows_on_link(LinkId link) const {
  check_link(link);
  return link_state_[link].size;
}

double MaxMinSolver::link_load_Bps(LinkId link) const {
  check_link(link);
  double load = 0.0;
  for (const LinkEntry& e : list_of(link)) {
    load += flows_[e.flow].rate_Bps * flows_[e.flow].weight;
  }
  return load;
}

void MaxMinSolver::push_entry(LinkId link, LinkEntry e) {
  LinkState& s = link_state_[link];
  if (s.size == s.capacity) {
    const std::uint32_t grown = s.capacity == 0 ? 4 : 2 * s.capacity;
    auto* block = static_cast<LinkEntry*>(std::realloc(s.entries, grown * sizeof(LinkEntry)));
    if (block == nullptr) throw std::bad_alloc();
    if (s.entries == nullptr) owned_lists_.push_back(link);
    s.entries = block;
    s.capacity = grown;
  }
  s.entries[s.size++] = e;
}

void MaxMinSolver::mark_dirty(LinkId link) {
  if (link_state_[link].dirty == 0) {
    link_state_[link].dirty = 1;
    dirty_links_.push_back(link);
  }
}

FlowHandle MaxMinSolver::add_flow(const LinkPath& path, double cap_Bps, int multiplicity) {
  if (multiplicity < 1) throw std::invalid_argument("MaxMinSolver: multiplicity must be >= 1");
  if (!(cap_Bps > 0.0)) throw std::invalid_argument("MaxMinSolver: rate cap must be > 0");
  for (LinkId link : path) check_link(link);

  const std::uint32_t slot = acquire_slot(flows_, free_flows_);
  Flow& f = flows_[slot];
  f.hops.assign(path);
  f.cap_Bps = cap_Bps;
  f.multiplicity = multiplicity;
  f.weight = static_cast<double>(multiplicity);
  f.live = true;
  f.frozen = false;
  f.fresh = !path.empty();
  // With no link to share, the flow runs at its own cap at once.
  f.rate_Bps = path.empty() ? cap_Bps : 0.0;
  for (std::size_t hop = 0; hop < path.size(); ++hop) {
    f.hops[hop].pos = link_state_[path[hop]].size;
    push_entry(path[hop], LinkEntry{slot, static_cast<std::uint32_t>(hop)});
    mark_dirty(path[hop]);
  }
  ++live_flows_;
  return FlowHandle{slot, f.gen};
}

void MaxMinSolver::remove_flow(FlowHandle h) {
  if (!valid(h)) throw std::invalid_argument("MaxMinSolver: remove of stale flow handle");
  Flow& f = flows_[h.slot];
  for (const Hops::Hop& hop : f.hops) {
    LinkState& s = link_state_[hop.link];
    const LinkEntry moved = s.entries[s.size - 1];
    s.entries[hop.pos] = moved;
    flows_[moved.flow].hops[moved.hop].pos = hop.pos;
    --s.size;
    mark_dirty(hop.link);
  }
  f.hops.clear();
  f.live = false;
  f.rate_Bps = 0.0;
  if (++f.gen == 0) f.gen = 1;
  free_flows_.push_back(h.slot);
  --live_flows_;
}

void MaxMinSolver::collect_component(LinkId seed) {
  if (link_state_[seed].stamp == epoch_) return;
  link_state_[seed].stamp = epoch_;
  bfs_.clear();
  bfs_.push_back(seed);
  while (!bfs_.empty()) {
    const LinkId link = bfs_.back();
    bfs_.pop_back();
    comp_links_.push_back(link);
    for (const LinkEntry& e : list_of(link)) {
      Flow& f = flows_[e.flow];
      if (f.stamp == epoch_) continue;
      f.stamp = epoch_;
      comp_flows_.push_back(e.flow);
      for (const Hops::Hop& hop : f.hops) {
        if (link_state_[hop.link].stamp != epoch_) {
          link_state_[hop.link].stamp = epoch_;
          bfs_.push_back(hop.link);
        }
      }
    }
  }
}

void MaxMinSolver::solve() {
  changed_.clear();
  if (dirty_links_.empty()) return;
  if (++epoch_ == 0) {  // stamps wrapped: clear them so no stale stamp matches
    for (auto& s : link_state_) s.stamp = 0;
    for (auto& f : flows_) f.stamp = 0;
    epoch_ = 1;
  }
  comp_flows_.clear();
  comp_links_.clear();
  // Dirty components are independent, so filling their union at once gives the same rates.
  for (LinkId link : dirty_links_) {
    link_state_[link].dirty = 0;
    collect_component(link);
  }
  dirty_links_.clear();
  fill_component();
  std::sort(changed_.begin(), changed_.end(),
            [](const FlowHandle& a, const FlowHandle& b) { return a.slot < b.slot; });
  ++solves_;
  flows_resolved_ += comp_flows_.size();
}

void MaxMinSolver::freeze(std::uint32_t slot, double rate_Bps) {
  Flow& f = flows_[slot];
  f.frozen = true;
  // The links' heap keys are not touched: freezing a flow at the current minimum share (or
  // below it, at its cap) never lowers another link's share, so fill_component re-keys a
  // link lazily when it reaches the top with a key that has grown stale.
  for (const Hops::Hop& hop : f.hops) {
    LinkState& s = link_state_[hop.link];
    s.remaining_Bps -= rate_Bps * f.weight;
    s.weight -= f.weight;
  }
  if (f.fresh || !nearly_equal(f.rate_Bps, rate_Bps)) {
    f.fresh = false;
    f.rate_Bps = rate_Bps;
    changed_.push_back(FlowHandle{slot, f.gen});
  }
}

void MaxMinSolver::fill_component() {
  for (LinkId link : comp_links_) {
    LinkState& s = link_state_[link];
    s.remaining_Bps = capacity_[link];
    s.weight = 0.0;
  }
  for (std::uint32_t slot : comp_flows_) {
    Flow& f = flows_[slot];
    f.frozen = false;
    f.bound_Bps = f.cap_Bps;
    for (const Hops::Hop& hop : f.hops) link_state_[hop.link].weight += f.weight;
  }
  // Links shared by several flows go on the heap; a link with one flow (a NIC, a host port, the
  // last hop to one GPU: most of a component's links) becomes that flow's bound. Measured on
  // the 530B / 5,120-GPU plan's runs (docs/benchmarks.md). The rates are the same; only the
  // order of equal shares can differ (a bound is frozen before a link of equal share), which
  // may move a rate in its last bit. An infinite link stays on the heap: its flow must still be
  // frozen (at an infinite rate) when nothing else bounds it.
  heap_.clear();
  for (LinkId link : comp_links_) {
    const auto& entries = list_of(link);
    if (entries.size() == 1 && std::isfinite(capacity_[link])) {
      Flow& f = flows_[entries.front().flow];
      f.bound_Bps = std::min(f.bound_Bps, capacity_[link] / f.weight);
      continue;
    }
    const LinkState& s = link_state_[link];
    if (s.weight > kZeroWeight) heap_.push_back(HeapItem{s.remaining_Bps / s.weight, link});
  }
  std::make_heap(heap_.begin(), heap_.end(), HeapLater{});
  capped_.clear();
  for (std::uint32_t slot : comp_flows_)
    if (std::isfinite(flows_[slot].bound_Bps)) capped_.push_back(slot);
  std::sort(capped_.begin(), capped_.end(), [this](std::uint32_t a, std::uint32_t b) {
    const double ca = flows_[a].bound_Bps;
    const double cb = flows_[b].bound_Bps;
    return ca != cb ? ca < cb : a < b;
  });

  std::size_t next_cap = 0;
  while (true) {
    // Settle the top: drop links left without unfrozen flows and re-key links whose share
    // grew since they were keyed; each link is in the heap at most once.
    while (!heap_.empty()) {
      HeapItem& top = heap_.front();
      const LinkState& s = link_state_[top.link];
      if (s.weight > kZeroWeight) {
        const double share_Bps = std::max(0.0, s.remaining_Bps) / s.weight;
        if (share_Bps <= top.share_Bps) {  // current, up to rounding: a smaller root key
          top.share_Bps = share_Bps;       // keeps the heap valid
          break;
        }
        const LinkId link = top.link;
        std::pop_heap(heap_.begin(), heap_.end(), HeapLater{});
        heap_.back() = HeapItem{share_Bps, link};
        std::push_heap(heap_.begin(), heap_.end(), HeapLater{});
        continue;
      }
      std::pop_heap(heap_.begin(), heap_.end(), HeapLater{});
      heap_.pop_back();
    }
    while (next_cap < capped_.size() && flows_[capped_[next_cap]].frozen) ++next_cap;
    const bool have_link = !heap_.empty();
    const bool have_cap = next_cap < capped_.size();
    if (!have_link && !have_cap) break;

    if (have_cap && (!have_link || flows_[capped_[next_cap]].bound_Bps <= heap_.front().share_Bps)) {
      // The flow's own bound binds before any shared link saturates: it keeps its bound.
      const std::uint32_t slot = capped_[next_cap++];
      freeze(slot, flows_[slot].bound_Bps);
      continue;
    }
    // The link with the smallest fair share saturates: every unfrozen flow on it gets that
    // share, which is the largest rate on the link (the max-min bottleneck condition).
    const LinkId link = heap_.front().link;
    const double share_Bps = heap_.front().share_Bps;
    std::pop_heap(heap_.begin(), heap_.end(), HeapLater{});
    heap_.pop_back();
    for (const LinkEntry& e : list_of(link)) {
      if (!flows_[e.flow].frozen) freeze(e.flow, share_Bps);
    }
  }
}

}  // namespace megasim
