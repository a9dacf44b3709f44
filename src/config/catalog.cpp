#include "megasim/config/catalog.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <system_error>

#include "config/json_reader.hpp"
#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"

#ifndef MEGASIM_DEFAULT_CATALOG_DIR
#define MEGASIM_DEFAULT_CATALOG_DIR "configs"
#endif

namespace megasim {

namespace {

void check_kind(std::string_view kind) {
  for (const auto k : Catalog::kKinds) {
    if (k == kind) return;
  }
  throw std::invalid_argument("unknown catalog kind \"" + std::string(kind) + "\"");
}

// Singular noun for messages: `unknown gpu "x"`.
std::string noun(std::string_view kind) {
  if (kind == "gpus") return "gpu";
  if (kind == "clusters") return "cluster";
  if (kind == "models") return "model";
  if (kind == "systems") return "system preset";
  if (kind == "hw") return "hardware profile";
  return "nccl table";
}

// Names are plain file stems; anything that could walk out of the catalog is simply unknown.
bool plain_name(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  return name.find('/') == std::string_view::npos && name.find('\\') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

bool dir_exists(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_directory(p, ec);
}

}  // namespace

Catalog Catalog::open(std::filesystem::path configs_dir) {
  if (!dir_exists(configs_dir)) {
    throw InputError("catalog", "catalog directory \"" + configs_dir.string() +
                                    "\" does not exist (set MEGASIM_CATALOG_DIR)");
  }
  return Catalog(std::move(configs_dir));
}

std::string Catalog::description(std::string_view kind, std::string_view name) const {
  const nlohmann::json e = entry(kind, name, std::string(kind));
  return e.is_object() && e.contains("description") && e["description"].is_string() ? e["description"].get<std::string>()
                                                                                   : std::string();
}

bool Catalog::contains(std::string_view kind, std::string_view name) const {
  check_kind(kind);
  if (!plain_name(name)) return false;
  std::error_code ec;
  return std::filesystem::is_regular_file(root_ / std::string(kind) / (std::string(name) + ".json"), ec);
}

nlohmann::json Catalog::entry(std::string_view kind, std::string_view name,
                              const std::string& json_path) const {
  check_kind(kind);
  if (!contains(kind, name)) {
    const auto valid = names(kind);
    throw InputError(json_path, "unknown " + noun(kind) + " \"" + std::string(name) + "\"; valid: " +
                                    (valid.empty() ? std::string("(none)") : config_detail::join(valid, ", ")));
  }
  return read_json_file(root_ / std::string(kind) / (std::string(name) + ".json"), json_path);
}

std::vector<std::string> Catalog::names(std::string_view kind) const {
  check_kind(kind);
  std::vector<std::string> out;
  std::error_code ec;
  const auto dir = root_ / std::string(kind);
  if (!dir_exists(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != ".json") continue;
    std::string stem = e.path().stem().string();
    if (!stem.empty() && stem.front() != '_') out.push_back(std::move(stem));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::filesystem::path default_catalog_dir(const char* argv0) {
  if (const char* env = std::getenv("MEGASIM_CATALOG_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  if (argv0 != nullptr && *argv0 != '\0') {
    std::error_code ec;
    const auto exe_dir = std::filesystem::weakly_canonical(argv0, ec).parent_path();
    if (!ec) {
      for (const auto& candidate : {exe_dir / ".." / "share" / "megasim" / "configs", exe_dir / ".." / "configs",
                                    exe_dir / "configs"}) {
        if (dir_exists(candidate / "gpus")) return candidate.lexically_normal();
      }
    }
  }
  if (dir_exists(std::filesystem::path(MEGASIM_INSTALLED_CATALOG_DIR) / "gpus")) return MEGASIM_INSTALLED_CATALOG_DIR;
  return MEGASIM_DEFAULT_CATALOG_DIR;
}

}  // namespace megasim
