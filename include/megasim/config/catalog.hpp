#pragma once
// Catalogs of named JSON entries under one directory: configs/<kind>/<name>.json.
//
// Usage:
//   const Catalog cat = Catalog::open(default_catalog_dir(argv[0]));
//   nlohmann::json gpu = cat.entry("gpus", "a100-sxm4-80gb", "cluster.gpu");
//   std::vector<std::string> all = cat.names("models");   // sorted
// An unknown name throws InputError(json_path, "unknown gpu \"x\"; valid: a, b, c").
// Entries are read from disk on every call (no cache, no shared state), so one Catalog may be
// used from several threads. Files whose name starts with '_' hold shared defaults: entry()
// reads them but names() does not list them.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace megasim {

class Catalog {
 public:
  // Kinds with a directory under the catalog root.
  static constexpr std::string_view kKinds[] = {"gpus", "clusters", "models", "systems", "hw", "nccl"};

  // Throws InputError("catalog", ...) when `configs_dir` is not a directory.
  static Catalog open(std::filesystem::path configs_dir);

  // The parsed JSON of configs/<kind>/<name>.json. `json_path` names the config field that
  // asked for it (used in the error when the name is unknown or the file is broken).
  // An unknown `kind` is a programming error (std::invalid_argument).
  nlohmann::json entry(std::string_view kind, std::string_view name, const std::string& json_path) const;

  // Sorted entry names of one kind (file stems, '_' files excluded); empty when none.
  std::vector<std::string> names(std::string_view kind) const;

  // The entry's "description" string, "" when it has none (what `megasim list` prints).
  std::string description(std::string_view kind, std::string_view name) const;

  // True when configs/<kind>/<name>.json exists.
  bool contains(std::string_view kind, std::string_view name) const;

  std::filesystem::path root() const { return root_; }

 private:
  explicit Catalog(std::filesystem::path root) : root_(std::move(root)) {}
  std::filesystem::path root_;
};

// Where the bundled configs live: $MEGASIM_CATALOG_DIR if set; else, next to the binary,
// <exe dir>/../share/megasim/configs (an installed prefix), <exe dir>/../configs or
// <exe dir>/configs when one exists; else the installed catalogs of the prefix megasim was
// built for (<prefix>/share/megasim/configs) when installed; else the source tree's configs/.
// argv0 may be null (a library caller): then the binary's neighbourhood is not searched.
std::filesystem::path default_catalog_dir(const char* argv0);

}  // namespace megasim
