#pragma once
// `megasim topology --json`: the fabric's switches per tier, links by kind, bisection bandwidth
// and oversubscription as one versioned JSON object (the text form is net's
// print_topology_summary).
#include <string>

#include "megasim/net/topology_summary.hpp"

namespace megasim {

std::string topology_summary_json(const TopologySummary& summary);  // indented by 2

}  // namespace megasim
