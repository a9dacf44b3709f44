#include "megasim/net/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "megasim/core/slot_pool.hpp"

namespace megasim {

namespace {

// Below this a flow has delivered everything (B3: treat remaining < 1e-6 bytes as done).
constexpr double kDoneBytes = 1e-6;

double elapsed_s(SimTime from, SimTime to) { return (to - from).seconds(); }

}  // namespace

FlowNetwork::FlowNetwork(Engine& engine, std::span<const double> link_capacity_Bps)
    : engine_(engine),
      solver_(link_capacity_Bps),
      link_bytes_(solver_.num_links()),
      link_busy_ps_(solver_.num_links()),
      link_busy_since_ps_(solver_.num_links()),
      link_active_(solver_.num_links()) {}

FlowNetwork::NetFlow* FlowNetwork::lookup(FlowId id) {
  const auto slot = static_cast<std::uint32_t>(id & 0xffffffffULL);
  const auto gen = static_cast<std::uint32_t>(id >> 32);
  if (slot >= flows_.size() || !flows_[slot].live || flows_[slot].gen != gen) return nullptr;
  return &flows_[slot];
}

const FlowNetwork::NetFlow* FlowNetwork::lookup(FlowId id) const {
  return const_cast<FlowNetwork*>(this)->lookup(id);  // NOLINT: same lookup, read-only use
}

bool FlowNetwork::is_active(FlowId id) const { return lookup(id) != nullptr; }

double FlowNetwork::flow_rate_Bps(FlowId id) const {
  const NetFlow* f = lookup(id);
  return f == nullptr ? 0.0 : f->rate_Bps;
}

double FlowNetwork::flow_remaining_bytes(FlowId id) const {
  const NetFlow* f = lookup(id);
  if (f == nullptr) return 0.0;
  if (!f->transferring || f->rate_Bps <= 0.0) return f->remaining_bytes;
  const double moved = f->rate_Bps * elapsed_s(f->last_update, engine_.now());
  return std::max(0.0, f->remaining_bytes - moved);
}

FlowId FlowNetwork::start_flow(FlowRequest request) {
  if (!(request.bytes >= 0.0) || !std::isfinite(request.bytes)) {
    throw std::invalid_argument("FlowNetwork: bytes must be finite and >= 0");
  }
  if (!(request.latency_s >= 0.0) || !std::isfinite(request.latency_s)) {
    throw std::invalid_argument("FlowNetwork: latency_s must be finite and >= 0");
  }
  if (request.multiplicity < 1) throw std::invalid_argument("FlowNetwork: multiplicity < 1");
  if (!(request.rate_cap_Bps > 0.0)) throw std::invalid_argument("FlowNetwork: rate cap <= 0");
  for (LinkId link : request.shared_path != nullptr ? *request.shared_path : request.path) {
    if (link >= link_bytes_.size()) {
      throw std::invalid_argument("FlowNetwork: link id " + std::to_string(link) +
                                  " out of range");
    }
  }

  const std::uint32_t slot = acquire_slot(flows_, free_slots_);
  NetFlow& f = flows_[slot];
  const std::string name =
      request.name.empty() ? "flow " + std::to_string(started_) : request.name;
  f.req = std::move(request);
  f.req.name.clear();
  f.live = true;
  f.transferring = false;
  f.remaining_bytes = f.req.bytes;
  f.rate_Bps = 0.0;
  f.last_update = engine_.now();
  f.task = engine_.begin_task(name);
  ++active_;
  ++started_;
  const FlowId id = pack(slot, f.gen);

  const SimTime latency = SimTime::from_seconds(f.req.latency_s);
  if (latency == SimTime()) {
    activate(slot);
  } else {
    activate_after_latency(slot, engine_.now() + latency);
  }
  return id;
}

void FlowNetwork::activate_after_latency(std::uint32_t slot, SimTime at) {
  if (open_batch_ps_ == at.ps() && engine_.events_scheduled() == open_batch_seq_) {
    activations_[open_batch_].push_back(slot);
    return;
  }
  const std::uint32_t batch = acquire_slot(activations_, free_activations_);
  activations_[batch].push_back(slot);
  engine_.schedule_at(at, [this, batch] { run_activation(batch); });
  open_batch_ps_ = at.ps();
  open_batch_seq_ = engine_.events_scheduled();
  open_batch_ = batch;
}

void FlowNetwork::run_activation(std::uint32_t batch) {
  if (open_batch_ == batch) open_batch_ps_ = -1;  // it no longer takes flows
  std::vector<std::uint32_t> slots;
  slots.swap(activations_[batch]);
  for (const std::uint32_t slot : slots) activate(slot);
  slots.clear();
  activations_[batch].swap(slots);  // keep the capacity for the batch's next use
  free_activations_.push_back(batch);
}

void FlowNetwork::activate(std::uint32_t slot) {
  NetFlow& f = flows_[slot];
  f.last_update = engine_.now();
  const LinkPath& path = f.path();
  const bool local = path.empty();
  if (f.remaining_bytes < kDoneBytes || (local && std::isinf(f.req.rate_cap_Bps))) {
    // Nothing to transfer: complete in a separate event so on_complete never runs inside
    // the caller's start_flow().
    f.remaining_bytes = 0.0;
    f.event = engine_.schedule_after(SimTime(), [this, slot] {
      flows_[slot].event = kNoEvent;
      finish(slot);
    });
    return;
  }
  f.transferring = true;
  if (local) {
    f.rate_Bps = f.req.rate_cap_Bps;
    schedule_completion(slot);
    return;
  }
  f.handle = solver_.add_flow(path, f.req.rate_cap_Bps, f.req.multiplicity);
  if (solver_to_net_.size() <= f.handle.slot) solver_to_net_.resize(f.handle.slot + 1);
  solver_to_net_[f.handle.slot] = slot;
  const std::int64_t now_ps = engine_.now().ps();
  for (LinkId link : path) {
    if (link_active_[link]++ == 0) link_busy_since_ps_[link] = now_ps;
  }
  request_resolve();
}

void FlowNetwork::advance(NetFlow& f) {
  const SimTime now = engine_.now();
  if (now > f.last_update && f.rate_Bps > 0.0) {
    const double moved =
        std::min(f.remaining_bytes, f.rate_Bps * elapsed_s(f.last_update, now));
    f.remaining_bytes -= moved;
  }
  f.last_update = now;
}

void FlowNetwork::schedule_completion(std::uint32_t slot) {
  NetFlow& f = flows_[slot];
  if (f.event != kNoEvent) engine_.cancel(f.event);
  f.event = kNoEvent;
  if (!(f.rate_Bps > 0.0)) return;  // stalled: stays open, reported as unfinished
  const double delay_ps = transfer_ps(f.remaining_bytes, f.rate_Bps);
  const double room_ps = static_cast<double>(SimTime::max().ps() - engine_.now().ps());
  if (!(delay_ps < room_ps)) return;  // beyond the end of time: equivalent to stalled
  f.event = engine_.schedule_after(SimTime::from_ps(static_cast<std::int64_t>(delay_ps)),
                                   [this, slot] { on_completion_event(slot); });
}

double FlowNetwork::transfer_ps(double bytes, double rate_Bps) {
  const double exact_ps = bytes / rate_Bps * 1e12;  // e.g. S/C = 2e11 ps exactly
  return std::ceil(exact_ps - exact_ps * 4e-16);
}

void FlowNetwork::on_completion_event(std::uint32_t slot) {
  NetFlow& f = flows_[slot];
  f.event = kNoEvent;
  const double moved = f.rate_Bps * elapsed_s(f.last_update, engine_.now());
  const double left = f.remaining_bytes - moved;
  // Up to two picoseconds' worth of bytes may be left by rounding; more means the rate was
  // changed without rescheduling, which would be a bug: be safe and keep going.
  if (left > kDoneBytes && left > f.rate_Bps * 2e-12) {
    advance(f);
    schedule_completion(slot);
    return;
  }
  f.remaining_bytes = 0.0;
  f.last_update = engine_.now();
  finish(slot);
}

void FlowNetwork::finish(std::uint32_t slot) {
  NetFlow& f = flows_[slot];
  if (f.transferring && !f.path().empty()) {
    solver_.remove_flow(f.handle);
    const std::int64_t now_ps = engine_.now().ps();
    // A link's bytes are credited when the flow completes (all of them: it delivered its
    // request), not on every rate change: that loop over the path ran once per re-solve.
    const double on_links = f.req.bytes * static_cast<double>(f.req.multiplicity);
    for (LinkId link : f.path()) {
      link_bytes_[link] += on_links;
      if (--link_active_[link] == 0) link_busy_ps_[link] += now_ps - link_busy_since_ps_[link];
    }
    request_resolve();
  }
  engine_.end_task(f.task);
  std::function<void()> on_complete = std::move(f.req.on_complete);
  f.req = FlowRequest();
  f.live = false;
  f.transferring = false;
  f.rate_Bps = 0.0;
  if (++f.gen == 0) f.gen = 1;
  free_slots_.push_back(slot);
  --active_;
  ++completed_;
  if (on_complete) on_complete();  // last: it may start flows and grow flows_
}

void FlowNetwork::request_resolve() {
  if (resolve_pending_) return;
  resolve_pending_ = true;
  // One re-solve per timestamp: it runs after the events already queued for now, so flows
  // that finish or start together are solved together.
  engine_.schedule_after(SimTime(), [this] { resolve(); });
}

void FlowNetwork::resolve() {
  resolve_pending_ = false;
  solver_.solve();
  for (const FlowHandle& h : solver_.changed_flows()) {
    const std::uint32_t slot = solver_to_net_[h.slot];
    NetFlow& f = flows_[slot];
    advance(f);  // at the old rate, up to now
    f.rate_Bps = solver_.rate_Bps(h);
    schedule_completion(slot);
  }
}

double FlowNetwork::link_bytes(LinkId link) const {
  if (link >= link_bytes_.size()) throw std::invalid_argument("FlowNetwork: bad link id");
  fold_link_loads();
  return link_bytes_[link];
}

std::size_t FlowNetwork::register_link_loads(std::vector<LinkLoad> loads) {
  for (const LinkLoad& l : loads) {
    for (const LinkId link : l.links)
      if (link >= link_bytes_.size()) throw std::invalid_argument("FlowNetwork: bad link id");
    if (!(l.bytes >= 0) || !(l.busy_s >= 0) || !std::isfinite(l.bytes) || !std::isfinite(l.busy_s))
      throw std::invalid_argument("FlowNetwork: a link load must be finite and >= 0");
  }
  load_sets_.push_back({std::move(loads), 0.0});
  return load_sets_.size() - 1;
}

void FlowNetwork::add_link_loads(std::size_t set, double weight) {
  if (set >= load_sets_.size()) throw std::invalid_argument("FlowNetwork: unknown link-load set");
  if (!(weight >= 0) || !std::isfinite(weight))
    throw std::invalid_argument("FlowNetwork: link-load weight must be finite and >= 0");
  LoadSet& ls = load_sets_[set];
  if (ls.weight == 0 && weight > 0) pending_sets_.push_back(set);
  ls.weight += weight;
}

void FlowNetwork::fold_link_loads() const {
  for (const std::size_t i : pending_sets_) {
    LoadSet& ls = load_sets_[i];
    for (const LinkLoad& l : ls.loads) {
      const double bytes = l.bytes * ls.weight;
      const std::int64_t busy_ps = SimTime::from_seconds(l.busy_s * ls.weight).ps();
      for (const LinkId link : l.links) {
        link_bytes_[link] += bytes;
        link_busy_ps_[link] += busy_ps;
      }
    }
    ls.weight = 0;
  }
  pending_sets_.clear();
}

double FlowNetwork::link_busy_s(LinkId link) const {
  if (link >= link_bytes_.size()) throw std::invalid_argument("FlowNetwork: bad link id");
  fold_link_loads();
  std::int64_t busy = link_busy_ps_[link];
  if (link_active_[link] > 0) busy += engine_.now().ps() - link_busy_since_ps_[link];
  return SimTime::from_ps(busy).seconds();
}

std::vector<std::pair<LinkId, double>> FlowNetwork::busiest_links(std::size_t k) const {
  // One pass with a heap of the k best so far (its front the worst of them): a 100,000-GPU step
  // loads hundreds of thousands of links, and copying them all to sort was most of this.
  // Links that carried the same whole number of bytes tie and list by id: equal loads summed in
  // another order (a scaled collective's) differ in their last bits, and must not reorder (up to
  // rounding: two sums an ulp either side of x.5 bytes still split).
  const auto more = [](const std::pair<LinkId, double>& a, const std::pair<LinkId, double>& b) {
    const double x = std::round(a.second);
    const double y = std::round(b.second);
    return x != y ? x > y : a.first < b.first;
  };
  std::vector<std::pair<LinkId, double>> best;
  if (k == 0) return best;
  fold_link_loads();
  best.reserve(k + 1);
  for (std::size_t i = 0; i < link_bytes_.size(); ++i) {
    if (!(link_bytes_[i] > 0.0)) continue;
    const std::pair<LinkId, double> cand{static_cast<LinkId>(i), link_bytes_[i]};
    if (best.size() == k) {
      if (!more(cand, best.front())) continue;
      std::pop_heap(best.begin(), best.end(), more);
      best.back() = cand;
    } else {
      best.push_back(cand);
    }
    std::push_heap(best.begin(), best.end(), more);
  }
  std::sort_heap(best.begin(), best.end(), more);
  return best;
}

}  // namespace megasim
