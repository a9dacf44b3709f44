#include "megasim/core/version.hpp"
#include "megasim/calib/regress.hpp"

#include <cmath>
#include <cstdio>

#include "megasim/core/error.hpp"

namespace megasim {

namespace {

const nlohmann::json& require(const nlohmann::json& obj, const std::string& key,
                              const std::string& path) {
  if (!obj.is_object() || !obj.contains(key)) {
    throw InputError(join_path(path, key), "required field is missing");
  }
  return obj.at(key);
}

double require_number(const nlohmann::json& obj, const std::string& key, const std::string& path) {
  const auto& v = require(obj, key, path);
  if (!v.is_number()) throw InputError(join_path(path, key), "must be a number");
  return v.get<double>();
}

}  // namespace

RegressResult run_regress(const nlohmann::json& baseline, const RegressRunner& run,
                          double tolerance_override) {
  if (!baseline.is_object()) throw InputError("baseline", "must be a JSON object");
  RegressResult result;
  result.tolerance_points = tolerance_override >= 0
                                ? tolerance_override
                                : (baseline.contains("tolerance_points")
                                       ? require_number(baseline, "tolerance_points", "")
                                       : 0.5);
  if (!(result.tolerance_points >= 0)) {
    throw InputError("tolerance_points", "must be >= 0");
  }
  const auto& entries = require(baseline, "entries", "");
  if (!entries.is_array()) throw InputError("entries", "must be an array");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string path = "entries[" + std::to_string(i) + "]";
    const auto& e = entries[i];
    const auto& config = require(e, "config", path);
    if (!config.is_string()) throw InputError(path + ".config", "must be a string");
    std::vector<std::string> sets;
    if (e.contains("set")) {
      if (!e["set"].is_array()) throw InputError(path + ".set", "must be an array of \"PATH=VALUE\" strings");
      for (const auto& s : e["set"]) {
        if (!s.is_string()) throw InputError(path + ".set", "must be an array of \"PATH=VALUE\" strings");
        sets.push_back(s.get<std::string>());
      }
    }
    std::string engine = "analytic";
    if (e.contains("engine")) {
      if (!e["engine"].is_string()) throw InputError(path + ".engine", "must be \"des\" or \"analytic\"");
      engine = e["engine"].get<std::string>();
    }
    RegressRow row;
    row.name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>()
                                                           : config.get<std::string>();
    row.baseline_mfu = require_number(e, "mfu", path);
    row.baseline_step_time_s = e.contains("step_time_s") && e["step_time_s"].is_number()
                                   ? e["step_time_s"].get<double>()
                                   : 0.0;
    const StepReport r = run(config.get<std::string>(), sets, engine);
    row.predicted_mfu = r.mfu;
    row.predicted_step_time_s = r.step_time_s;
    row.delta_points = 100.0 * (row.predicted_mfu - row.baseline_mfu);
    // A tiny epsilon keeps a prediction exactly at the tolerance from flapping.
    row.drift = std::fabs(row.delta_points) > result.tolerance_points + 1e-9;
    result.any_drift = result.any_drift || row.drift;
    result.rows.push_back(row);
  }
  return result;
}

nlohmann::json updated_baseline(const nlohmann::json& baseline, const RegressResult& result) {
  nlohmann::json out = baseline;
  out["schema_version"] = kSchemaVersion;
  out["tolerance_points"] = result.tolerance_points;
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    out["entries"][i]["mfu"] = result.rows[i].predicted_mfu;
    out["entries"][i]["step_time_s"] = result.rows[i].predicted_step_time_s;
  }
  return out;
}

void print_regress(const RegressResult& r, std::ostream& out) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-40s %10s %10s %9s  %s\n", "job", "baseline", "predicted",
                "delta", "status");
  out << buf;
  for (const auto& row : r.rows) {
    std::snprintf(buf, sizeof buf, "%-40s %9.2f%% %9.2f%% %+8.2fpt  %s\n", row.name.c_str(),
                  100 * row.baseline_mfu, 100 * row.predicted_mfu, row.delta_points,
                  row.drift ? "DRIFT" : "ok");
    out << buf;
  }
  std::snprintf(buf, sizeof buf, "tolerance %.2f MFU points: %s\n", r.tolerance_points,
                r.any_drift ? "predictions drifted" : "no drift");
  out << buf;
}

nlohmann::json to_json(const RegressResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows) {
    rows.push_back({{"name", row.name},
                    {"baseline_mfu", row.baseline_mfu},
                    {"predicted_mfu", row.predicted_mfu},
                    {"baseline_step_time_s", row.baseline_step_time_s},
                    {"predicted_step_time_s", row.predicted_step_time_s},
                    {"delta_points", row.delta_points},
                    {"drift", row.drift}});
  }
  return {{"rows", rows}, {"tolerance_points", r.tolerance_points}, {"any_drift", r.any_drift}};
}

}  // namespace megasim
