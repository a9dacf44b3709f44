#pragma once
// Helpers for golden CLI tests: run the CLI in-process, compare JSON with a float tolerance,
// and refresh the stored outputs with MEGASIM_UPDATE_GOLDEN=1.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_cli.hpp"

namespace megasim::testing {

struct CliRun {
  int code = 0;
  std::string out;
  std::string err;
};

inline CliRun run(std::vector<std::string> args) {
  args.insert(args.begin(), "megasim");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliRun r;
  r.code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

// validate exits 0 when every acceptance check passed and 3 when one printed FAIL (DESIGN.md
// A1), so CI can gate on it; the JSON's summary.all_pass says which.
inline void expect_validate_exit(const CliRun& r) {
  ASSERT_TRUE(r.code == 0 || r.code == 3) << r.code << " " << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(r.code, j["summary"]["all_pass"].get<bool>() ? 0 : 3);
}

inline std::string source_path(const std::string& rel) { return std::string(MEGASIM_SOURCE_DIR) + "/" + rel; }

// Recursively compares two JSON values; numbers within rel_tol (relative) or 1e-12 absolute.
inline bool json_close(const nlohmann::json& a, const nlohmann::json& b, double rel_tol,
                       const std::string& path, std::string& why) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    if (std::fabs(x - y) <= rel_tol * std::max(std::fabs(x), std::fabs(y)) + 1e-12) return true;
    why = path + ": " + a.dump() + " vs " + b.dump();
    return false;
  }
  if (a.type() != b.type()) {
    why = path + ": type differs (" + a.dump() + " vs " + b.dump() + ")";
    return false;
  }
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) {
        why = path + "." + it.key() + ": missing in expected";
        return false;
      }
      if (!json_close(it.value(), b.at(it.key()), rel_tol, path + "." + it.key(), why)) return false;
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) {
        why = path + "." + it.key() + ": missing in actual";
        return false;
      }
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) {
      why = path + ": array sizes differ";
      return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!json_close(a[i], b[i], rel_tol, path + "[" + std::to_string(i) + "]", why)) return false;
    }
    return true;
  }
  if (a != b) {
    why = path + ": " + a.dump() + " vs " + b.dump();
    return false;
  }
  return true;
}

// Compares `actual` with tests/golden/expected/<name>; rewrites it when MEGASIM_UPDATE_GOLDEN=1.
inline ::testing::AssertionResult matches_golden(const std::string& name, const nlohmann::json& actual,
                                                 double rel_tol = 1e-6) {
  const std::string file = source_path("tests/golden/expected/" + name);
  const char* update = std::getenv("MEGASIM_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(file) << actual.dump(2) << "\n";
    return ::testing::AssertionSuccess() << "updated " << file;
  }
  std::ifstream in(file);
  if (!in) return ::testing::AssertionFailure() << "no golden file " << file << " (run with MEGASIM_UPDATE_GOLDEN=1)";
  const auto expected = nlohmann::json::parse(in);
  std::string why;
  if (json_close(actual, expected, rel_tol, name, why)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "golden mismatch at " << why;
}

}  // namespace megasim::testing
