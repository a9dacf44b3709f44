#include "suite_file.hpp"

#include <fstream>
#include <set>

#include "megasim/config/strict_keys.hpp"
#include "megasim/core/error.hpp"

namespace megasim::calib_detail {

namespace {

std::string at_index(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

const nlohmann::json& require(const nlohmann::json& obj, const std::string& path, const char* key) {
  if (!obj.contains(key) || obj.at(key).is_null()) throw InputError(path + "." + key, "required field is missing");
  return obj.at(key);
}

std::string require_string(const nlohmann::json& obj, const std::string& path, const char* key) {
  const auto& v = require(obj, path, key);
  if (!v.is_string()) throw InputError(path + "." + key, "must be a string");
  return v.get<std::string>();
}

CheckKind check_kind(const std::string& name, const std::string& path) {
  if (name == "worst_error_points") return CheckKind::WorstErrorPoints;
  if (name == "worst_error_pct") return CheckKind::WorstErrorPct;
  if (name == "mean_error_pct") return CheckKind::MeanErrorPct;
  throw InputError(path, "unknown value \"" + name + "\"; valid: worst_error_points, worst_error_pct, mean_error_pct");
}

std::vector<SuiteCheck> read_checks(const nlohmann::json& suite, const std::string& path) {
  std::vector<SuiteCheck> out;
  if (!suite.contains("checks")) return out;
  const auto& checks = suite.at("checks");
  const std::string cpath = path + ".checks";
  if (!checks.is_array()) throw InputError(cpath, "must be an array of checks");
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const auto& c = checks[i];
    const std::string p = at_index(cpath, i);
    if (!c.is_object()) throw InputError(p, "must be an object");
    require_known_keys(c, p, {"key", "kind", "bar", "detail"});
    SuiteCheck k;
    k.key = require_string(c, p, "key");
    k.kind = check_kind(require_string(c, p, "kind"), p + ".kind");
    const auto& bar = require(c, p, "bar");
    if (!bar.is_number() || bar.get<double>() < 0) throw InputError(p + ".bar", "must be a number >= 0");
    k.bar = bar.get<double>();
    k.detail = require_string(c, p, "detail");
    if (k.detail.find("{error}") == std::string::npos) throw InputError(p + ".detail", "must contain {error}");
    out.push_back(std::move(k));
  }
  return out;
}

// Documentation keys (title, source, notes, a row's note or method) are allowed and not read.
void check_suite_keys(const nlohmann::json& suite, const std::string& path) {
  require_known_keys(suite, path, {"suite", "title", "source", "notes", "base", "rows", "runs_like", "set",
                                   "cumulative", "checks"});
  const auto& rows = require(suite, path, "rows");
  if (!rows.is_array()) throw InputError(path + ".rows", "must be an array of rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string p = at_index(path + ".rows", i);
    if (!rows[i].is_object()) throw InputError(p, "must be an object");
    require_known_keys(rows[i], p, {"name", "set", "published", "like", "gpus", "store", "ordered", "note", "method",
                                    "published_tflops_per_gpu"});
  }
}

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file.string(), "cannot read validation suite");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file.string(), std::string("not valid JSON: ") + e.what());
  }
}

std::vector<SuiteFile> load_suites(const std::filesystem::path& dir) {
  const auto index_path = dir / "suites.json";
  const nlohmann::json index = read_json_file(index_path);
  const std::string ipath = index_path.filename().string();
  if (!index.is_object()) throw InputError(ipath, "must be an object with \"suites\"");
  require_known_keys(index, ipath, {"description", "suites"});
  const auto& files = require(index, ipath, "suites");
  if (!files.is_array()) throw InputError(ipath + ".suites", "must be an array of file names");
  std::vector<SuiteFile> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!files[i].is_string()) throw InputError(at_index(ipath + ".suites", i), "must be a file name");
    SuiteFile s;
    s.path = dir / files[i].get<std::string>();
    s.data = read_json_file(s.path);
    const std::string path = s.path.filename().string();
    if (!s.data.is_object()) throw InputError(path, "must be an object");
    check_suite_keys(s.data, path);
    s.id = require_string(s.data, path, "suite");
    if (!ids.insert(s.id).second) throw InputError(path + ".suite", "\"" + s.id + "\" is used by another suite");
    s.checks = read_checks(s.data, path);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace megasim::calib_detail
