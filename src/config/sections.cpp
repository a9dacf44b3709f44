#include "config/sections.hpp"

#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"

namespace megasim::config_detail {

namespace {

// A chain of "base" entries longer than this is almost surely a cycle.
constexpr int kMaxBaseDepth = 8;

std::filesystem::path absolute_from(const std::filesystem::path& base_dir, const std::string& s) {
  std::filesystem::path p(s);
  if (p.is_relative()) p = base_dir / p;
  return p.lexically_normal();
}

// Path-valued strings inside a file are relative to that file; rewrite them before the
// value leaves the file's context.
void absolutize_nested(nlohmann::json& obj, const std::filesystem::path& dir) {
  if (!obj.is_object()) return;
  for (const char* key : {"gpu", "base"}) {
    auto it = obj.find(key);
    if (it != obj.end() && it->is_string() && looks_like_path(it->get<std::string>())) {
      *it = absolute_from(dir, it->get<std::string>()).string();
    }
  }
}

Resolved resolve(const nlohmann::json& v, std::string_view kind, const std::string& path,
                 const Catalog& catalog, const std::filesystem::path& base_dir, int depth) {
  if (depth > kMaxBaseDepth) {
    throw InputError(join_path(path, "base"), "\"base\" chain is deeper than " +
                                                  std::to_string(kMaxBaseDepth) + " (a cycle?)");
  }
  Resolved out;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (looks_like_path(s)) {
      const auto file = absolute_from(base_dir, s);
      out.value = read_json_file(file, path);
      out.name = file.stem().string();
      absolutize_nested(out.value, file.parent_path());
    } else if (kind.empty()) {
      throw InputError(path, "a string here must be a path to a JSON file (containing '/' or "
                             "ending in \".json\"), got \"" + s + "\"");
    } else if (kind == "systems") {
      out.value = nlohmann::json{{"preset", s}};
      out.name = s;
      return out;
    } else {
      out.value = catalog.entry(kind, s, path);
      out.name = s;
    }
  } else {
    out.value = v;
  }
  // "base" extends another entry of the same kind.
  if (out.value.is_object() && out.value.contains("base")) {
    const nlohmann::json base_ref = out.value.at("base");
    if (!base_ref.is_string()) {
      throw InputError(join_path(path, "base"), "expected a catalog name or file path string");
    }
    Resolved base = resolve(base_ref, kind, join_path(path, "base"), catalog, base_dir, depth + 1);
    if (!base.value.is_object()) {
      throw InputError(join_path(path, "base"), "the base entry is not a JSON object");
    }
    out.value.erase("base");
    deep_merge(base.value, out.value);
    out.value = std::move(base.value);
    if (out.name.empty()) out.name = base.name;
  }
  return out;
}

}  // namespace

bool looks_like_path(std::string_view s) {
  return s.find('/') != std::string_view::npos ||
         (s.size() >= 5 && s.substr(s.size() - 5) == ".json");
}

Resolved resolve_section(const nlohmann::json& v, std::string_view kind, const std::string& path,
                         const Catalog& catalog, const std::filesystem::path& base_dir) {
  return resolve(v, kind, path, catalog, base_dir, 0);
}

void deep_merge(nlohmann::json& base, const nlohmann::json& overlay) {
  if (!base.is_object() || !overlay.is_object()) {
    base = overlay;
    return;
  }
  for (const auto& [k, val] : overlay.items()) {
    auto it = base.find(k);
    if (it != base.end() && it->is_object() && val.is_object()) {
      deep_merge(*it, val);
    } else {
      base[k] = val;
    }
  }
}

}  // namespace megasim::config_detail
