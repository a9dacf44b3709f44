#include "megasim/sim/engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "megasim/core/slot_pool.hpp"

namespace megasim {

EventId Engine::schedule_at(SimTime t, Callback cb) {
  if (t < now_) {
    throw std::logic_error("Engine::schedule_at: time " + std::to_string(t.ps()) +
                           " ps is before now " + std::to_string(now_.ps()) + " ps");
  }
  const std::uint32_t slot = acquire_slot(slots_, free_slots_);
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.live = true;
  heap_push(HeapEntry{t.ps(), next_seq_++, slot, s.gen});
  ++live_;
  return pack(slot, s.gen);
}

EventId Engine::schedule_after(SimTime delay, Callback cb) {
  if (delay < SimTime()) throw std::logic_error("Engine::schedule_after: negative delay");
  return schedule_at(now_ + delay, std::move(cb));
}

bool Engine::is_pending(EventId id) const {
  const auto slot = static_cast<std::uint32_t>(id & 0xffffffffULL);
  const auto gen = static_cast<std::uint32_t>(id >> 32);
  return id != kNoEvent && slot < slots_.size() && slots_[slot].live && slots_[slot].gen == gen;
}

bool Engine::cancel(EventId id) {
  if (!is_pending(id)) return false;
  const auto slot = static_cast<std::uint32_t>(id & 0xffffffffULL);
  slots_[slot].cb = nullptr;
  release_slot(slot);
  // A cancelled event's heap entry stays until it reaches the top. The flow network cancels
  // and reschedules a completion whenever a flow's rate changes, so without this the heap
  // grows to several times the live events and every push and pop pays for the dead ones.
  // Dropping them keeps the (time, seq) order, so the run is unchanged.
  if (heap_.size() > 2 * live_ + 4096) {
    heap_.erase(std::remove_if(heap_.begin(), heap_.end(),
                               [this](const HeapEntry& e) {
                                 const Slot& st = slots_[e.slot];
                                 return !st.live || st.gen != e.gen;
                               }),
                heap_.end());
    heap_make();
  }
  return true;
}

namespace {
constexpr std::size_t kArity = 4;
}  // namespace

void Engine::heap_push(const HeapEntry& e) {
  // Sift the new entry's hole up while its parent comes after it.
  std::size_t i = heap_.size();
  heap_.push_back(e);
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!later(heap_[parent], e)) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = e;
}

void Engine::heap_sift_down(std::size_t i) {
  const std::size_t n = heap_.size();
  const HeapEntry e = heap_[i];
  for (;;) {
    const std::size_t first = i * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t end = std::min(first + kArity, n);
    for (std::size_t c = first + 1; c < end; ++c)
      if (later(heap_[best], heap_[c])) best = c;
    if (!later(e, heap_[best])) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = e;
}

Engine::HeapEntry Engine::heap_pop() {
  const HeapEntry top = heap_.front();
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) heap_sift_down(0);
  return top;
}

void Engine::heap_make() {
  for (std::size_t i = heap_.size() / kArity + 1; i-- > 0;)
    if (i < heap_.size()) heap_sift_down(i);
}

void Engine::release_slot(std::uint32_t slot) {
  Slot& s = slots_[slot];
  s.live = false;
  // Bumping the generation invalidates both the EventId and the heap entry; skip 0 so that a
  // packed id is never kNoEvent.
  if (++s.gen == 0) s.gen = 1;
  free_slots_.push_back(slot);
  --live_;
}

bool Engine::skip_stale() {
  while (!heap_.empty()) {
    const HeapEntry& top = heap_.front();
    const Slot& s = slots_[top.slot];
    if (s.live && s.gen == top.gen) return true;
    heap_pop();
  }
  return false;
}

void Engine::run_top() {
  const HeapEntry entry = heap_pop();
  now_ = SimTime::from_ps(entry.time_ps);
  // Move the callback out before running it: it may schedule events that reuse or grow the
  // slot vector.
  Callback cb = std::move(slots_[entry.slot].cb);
  slots_[entry.slot].cb = nullptr;
  release_slot(entry.slot);
  ++processed_;
  cb();
}

void Engine::run() {
  while (skip_stale()) run_top();
}

bool Engine::run_until(SimTime t) {
  while (skip_stale() && heap_.front().time_ps <= t.ps()) run_top();
  // run_until(SimTime::max()) is run(): leave the clock at the last event.
  if (t > now_ && t != SimTime::max()) now_ = t;
  return live_ > 0;
}

}  // namespace megasim
