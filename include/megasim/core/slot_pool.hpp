#pragma once
// Pooled slots in a vector: reuse a freed index if one is waiting, else append a new
// default-constructed element. The engine's events, its task tracker, the flow network's flows
// and activation batches and the max-min solver's flows all keep their items this way, so an
// index stays valid for an item's life and freed storage is reused instead of reallocated.
#include <cstdint>
#include <vector>

namespace megasim {

template <class Items>
std::uint32_t acquire_slot(Items& items, std::vector<std::uint32_t>& free_slots) {
  if (!free_slots.empty()) {
    const std::uint32_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  }
  items.emplace_back();
  return static_cast<std::uint32_t>(items.size() - 1);
}

}  // namespace megasim
