#pragma once
// `explain`: what a planner checks by hand before simulating: parameters, FLOPs per token,
// parallel degrees, layers per stage and chunk, memory by component, and where each rank runs
// (rank -> GPU -> node -> ToR set).
#include <cstdint>
#include <ostream>

#include "megasim/config/specs.hpp"
#include "megasim/model/memory.hpp"

namespace megasim {

// `buffers` are the hardware profile's (exec's buffer_sizes); `max_rows` caps the placement table.
void write_job_explanation(const JobSpec& job, const BufferSizes& buffers, std::int64_t max_rows, std::ostream& out);

}  // namespace megasim
