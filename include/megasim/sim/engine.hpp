#pragma once
// The discrete-event engine (DESIGN.md B1 `sim`): an integer-picosecond clock and an event
// queue ordered by (time, insertion sequence), so events at equal times run in the order they
// were scheduled and a run is deterministic. No globals: many engines may live in a process
// (one per planner thread); an Engine itself is not thread-safe.
//
// Hot path: the queue is a 4-ary heap of 24-byte entries (half the levels of a binary heap,
// and a node's children share a cache line or two: pops were a tenth of a planner run);
// callbacks live in a slot vector
// with generation counters, so cancel() is O(1) (lazy deletion: the stale heap entry is
// skipped when it surfaces) and slots are reused without allocation.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "megasim/core/units.hpp"
#include "megasim/sim/task_tracker.hpp"

namespace megasim {

// Identifies a scheduled event: (slot, generation) packed into 64 bits; never 0.
using EventId = std::uint64_t;
inline constexpr EventId kNoEvent = 0;

class Engine {
 public:
  using Callback = std::function<void()>;

  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Scheduling in the past (t < now()) or with a negative delay is a programming error
  // (std::logic_error): it would let time run backwards.
  EventId schedule_at(SimTime t, Callback cb);
  EventId schedule_after(SimTime delay, Callback cb);
  // True when the event was pending and is now cancelled; false when it already ran, was
  // already cancelled, or the id is kNoEvent.
  bool cancel(EventId id);
  bool is_pending(EventId id) const;

  SimTime now() const { return now_; }
  // Runs until the queue is empty.
  void run();
  // Runs every event with time <= t, then advances the clock to t (if later than now()).
  // Returns whether events remain.
  bool run_until(SimTime t);
  std::uint64_t events_processed() const { return processed_; }
  // Events scheduled so far (the next event's sequence number): unchanged between two calls
  // means nothing was scheduled between them.
  std::uint64_t events_scheduled() const { return next_seq_; }
  std::size_t pending_events() const { return live_; }

  // Task tracking for the deadlock report.
  TaskId begin_task(std::string name) { return tasks_.begin(std::move(name)); }
  void end_task(TaskId id) { tasks_.end(id); }
  bool task_open(TaskId id) const { return tasks_.is_open(id); }
  std::size_t open_tasks() const { return tasks_.open_count(); }
  std::vector<std::string> unfinished_tasks() const { return tasks_.unfinished(); }
  // Throws DeadlockError naming the first 20 unfinished tasks and their count.
  void require_all_finished() const { tasks_.require_all_finished(20); }

 private:
  struct HeapEntry {
    std::int64_t time_ps;
    std::uint64_t seq;
    std::uint32_t slot;
    std::uint32_t gen;
  };
  struct Slot {
    Callback cb;
    std::uint32_t gen = 1;
    bool live = false;
  };
  // Min-heap order on (time, seq) expressed as "a comes after b".
  static bool later(const HeapEntry& a, const HeapEntry& b) {
    return a.time_ps != b.time_ps ? a.time_ps > b.time_ps : a.seq > b.seq;
  }
  static EventId pack(std::uint32_t slot, std::uint32_t gen) {
    return (static_cast<std::uint64_t>(gen) << 32) | slot;
  }
  void release_slot(std::uint32_t slot);
  // The 4-ary min-heap on later(): push, pop of the front, and heapify after a bulk erase.
  void heap_push(const HeapEntry& e);
  HeapEntry heap_pop();
  void heap_sift_down(std::size_t i);
  void heap_make();
  // Pops stale entries; returns false when no live event remains.
  bool skip_stale();
  void run_top();

  std::vector<HeapEntry> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  SimTime now_;
  std::uint64_t next_seq_ = 0;
  std::uint64_t processed_ = 0;
  std::size_t live_ = 0;
  TaskTracker tasks_;
};

}  // namespace megasim
