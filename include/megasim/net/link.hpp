#pragma once
// Identifiers shared by the fabric (net/topo), routing (net/route) and the flow model
// (net/solver). A LinkId names one *direction* of a physical link: every full-duplex cable
// or NVLink port is two LinkIds, each with its own capacity constraint.
#include <cstdint>
#include <limits>
#include <vector>

namespace megasim {

using LinkId = std::uint32_t;
inline constexpr LinkId kNoLink = std::numeric_limits<LinkId>::max();

// A route through the fabric: the link directions a flow crosses, in order.
using LinkPath = std::vector<LinkId>;

}  // namespace megasim
