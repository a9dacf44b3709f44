#pragma once
// The validation suites as files (configs/validation/): the index that lists them in the order
// `validate` runs and prints them, and each suite read strictly, with its own id and the
// acceptance bars it is held to. A key validate does not understand is an InputError naming
// its JSON path, never ignored. Private to the calib module.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace megasim::calib_detail {

// A suite-level acceptance check: one number computed over the suite's cases against a bar.
enum class CheckKind {
  WorstErrorPoints,  // largest |predicted - published| in points (MFU/HFU suites)
  WorstErrorPct,     // largest |error| in percent
  MeanErrorPct,      // mean |error| in percent
};

struct SuiteCheck {
  std::string key;     // summary key, e.g. "nvidia_dgxc_h100_step_time"
  CheckKind kind = CheckKind::WorstErrorPct;
  double bar = 0;      // passes when the number is <= bar
  std::string detail;  // summary line; "{error}" becomes the number with two decimals
};

struct SuiteFile {
  std::string id;                 // "suite": what --suite takes
  std::filesystem::path path;     // the file
  nlohmann::json data;            // the whole file, its keys checked
  std::vector<SuiteCheck> checks;
};

// Reads `dir`/suites.json ({"suites": ["file.json", ...]}) and every suite it lists, in order.
std::vector<SuiteFile> load_suites(const std::filesystem::path& dir);

// Reads one JSON file; InputError(path, ...) when it is missing or not JSON.
nlohmann::json read_json_file(const std::filesystem::path& file);

}  // namespace megasim::calib_detail
