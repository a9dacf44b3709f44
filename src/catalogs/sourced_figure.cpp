#include "catalogs/sourced_figure.hpp"

#include <cmath>
#include <cstdio>

#include "megasim/config/strict_keys.hpp"
#include "megasim/core/error.hpp"

namespace megasim::catalogs_detail {

double sourced_figure(const nlohmann::json& obj, const std::string& path, const char* key, double lo, double hi) {
  const std::string p = join_path(path, key);
  if (!obj.is_object() || !obj.contains(key)) throw InputError(p, "required field is missing");
  const auto& f = obj.at(key);
  if (!f.is_object() || !f.contains("value") || !f.contains("source"))
    throw InputError(p, "must be an object {\"value\": number, \"source\": string}");
  require_known_keys(f, p, {"value", "source"});
  if (!f.at("source").is_string() || f.at("source").get<std::string>().empty())
    throw InputError(join_path(p, "source"), "must be a non-empty string");
  if (!f.at("value").is_number()) throw InputError(join_path(p, "value"), "must be a number");
  const double v = f.at("value").get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    char rule[160];
    if (std::isinf(hi)) {
      std::snprintf(rule, sizeof rule, "must be a finite number >= %.6g, got %.6g", lo, v);
    } else {
      std::snprintf(rule, sizeof rule, "must be between %.6g and %.6g, got %.6g", lo, hi, v);
    }
    throw InputError(join_path(p, "value"), rule);
  }
  return v;
}

}  // namespace megasim::catalogs_detail
