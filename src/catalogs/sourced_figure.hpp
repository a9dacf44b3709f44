#pragma once
// A catalog figure {"value": number, "source": "non-empty text"} (private to catalogs): no
// figure enters the model without its provenance. The hardware-profile and host readers share it.
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

namespace megasim::catalogs_detail {

// obj[key]'s value. InputError naming path.key when it is missing, not such an object, has
// other keys, has no source, or lies outside [lo, hi] (hi = +inf: no upper bound; a value must
// be finite either way).
double sourced_figure(const nlohmann::json& obj, const std::string& path, const char* key, double lo,
                      double hi = std::numeric_limits<double>::infinity());

}  // namespace megasim::catalogs_detail
