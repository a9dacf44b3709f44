// Reading config files and applying --set overrides; parse_job lives in parse_job.cpp.
#include "megasim/config/load.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/json_reader.hpp"
#include "config/sections.hpp"
#include "megasim/core/error.hpp"

namespace megasim {

namespace {

// Line and column of a byte offset, for parse-error messages people can act on.
std::string position_of(std::string_view text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

// Which catalog kind a dotted prefix names when it is a string; "" = files only.
std::string_view kind_of(const std::string& prefix) {
  if (prefix == "model") return "models";
  if (prefix == "cluster") return "clusters";
  if (prefix == "system") return "systems";
  if (prefix == "cluster.gpu") return "gpus";
  return "";
}

bool resolvable(const std::string& prefix) {
  return prefix == "model" || prefix == "cluster" || prefix == "system" || prefix == "parallel" ||
         prefix == "training" || prefix == "cluster.gpu";
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& json_path, const std::string& where) {
  // A key written twice in one object would leave one of its values silently unread (the parser
  // keeps the last): an error, named by the object's path.
  std::vector<std::set<std::string>> seen;  // keys per open object
  std::vector<std::string> path;            // the keys leading to the current value
  std::string pending_key;
  auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
        seen.emplace_back();
        path.push_back(pending_key);
        pending_key.clear();
        break;
      case E::array_start:
        path.push_back(pending_key);
        pending_key.clear();
        break;
      case E::object_end:
        seen.pop_back();
        path.pop_back();
        break;
      case E::array_end: path.pop_back(); break;
      case E::key: {
        pending_key = parsed.get<std::string>();
        if (!seen.empty() && !seen.back().insert(pending_key).second) {
          // A job file's keys are top-level names ("training.seq_length"); any other file's
          // value sits at json_path ("model.hidden_size").
          std::string at = json_path == "CONFIG" ? std::string() : json_path;
          for (const std::string& k : path)
            if (!k.empty()) at += (at.empty() ? "" : ".") + k;
          at += (at.empty() ? "" : ".") + pending_key;
          throw InputError(at, where + ": key written twice in one object (one value would be ignored)");
        }
        break;
      }
      case E::value: pending_key.clear(); break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), callback);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message repeats the byte offset; keep only its description after ": ".
    std::string what = e.what();
    const auto colon = what.rfind(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    throw InputError(json_path, where + ": not valid JSON at " + position_of(text, at) + ": " + what);
  }
}

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& json_path) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    throw InputError(json_path, "cannot read \"" + file.string() + "\": it is a directory");
  }
  // Only regular files: a FIFO or device (/dev/stdin) could block forever.
  if (std::filesystem::exists(file, ec) && !std::filesystem::is_regular_file(file, ec)) {
    throw InputError(json_path, "cannot read \"" + file.string() + "\": not a regular file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(json_path, "cannot read \"" + file.string() + "\": no such file or not readable");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw InputError(json_path, "cannot read \"" + file.string() + "\": read error");
  return parse_json_text(buf.str(), json_path, "\"" + file.string() + "\"");
}

void apply_override(nlohmann::json& config, std::string_view assignment, const Catalog& catalog,
                    const std::filesystem::path& base_dir) {
  const std::string text(assignment);
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("--set", "expected PATH=VALUE (e.g. cluster.num_gpus=4096), got \"" + text + "\"");
  }
  const std::string dotted = text.substr(0, eq);
  const std::string value_text = text.substr(eq + 1);
  std::vector<std::string> keys;
  for (std::size_t start = 0;;) {
    const auto dot = dotted.find('.', start);
    keys.push_back(dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (keys.back().empty()) {
      throw InputError("--set", "empty key in path \"" + dotted + "\"");
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  // JSON first ("4096", "true", "{...}"), else the raw text as a string ("megascale").
  nlohmann::json value = nlohmann::json::parse(value_text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = value_text;

  if (!config.is_object()) throw InputError("--set", "the config is not a JSON object");
  nlohmann::json* cur = &config;
  std::string prefix;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    prefix = join_path(prefix, keys[i]);
    nlohmann::json& child = (*cur)[keys[i]];
    if (child.is_null()) child = nlohmann::json::object();
    if (child.is_string() && resolvable(prefix)) {
      child = config_detail::resolve_section(child, kind_of(prefix), prefix, catalog, base_dir).value;
    }
    if (!child.is_object()) {
      throw InputError("--set", "cannot set \"" + dotted + "\": \"" + prefix + "\" is " +
                                    config_detail::describe(child) + ", not an object");
    }
    cur = &child;
  }
  (*cur)[keys.back()] = std::move(value);
}

std::filesystem::path resolve_job_config(const std::string& config, const Catalog& catalog) {
  std::filesystem::path p(config);
  if (std::filesystem::exists(p)) return p;
  const auto bundled = catalog.root() / (config + ".json");
  if (config.find('/') == std::string::npos && std::filesystem::exists(bundled)) return bundled;
  throw InputError("CONFIG", "cannot read \"" + config + "\": no such file or bundled job");
}

JobSpec load_job(const std::filesystem::path& file, const std::vector<std::string>& overrides,
                 const Catalog& catalog, WrittenPlan plan) {
  nlohmann::json config = read_json_file(file, "CONFIG");
  const auto base_dir = file.parent_path();
  for (const auto& o : overrides) apply_override(config, o, catalog, base_dir);
  if (config.is_object() && !config.contains("name")) config["name"] = file.stem().string();
  return parse_job(config, catalog, base_dir, plan);
}

JobSpec load_cluster_as_job(const std::string& cluster, const std::vector<std::string>& overrides,
                            const Catalog& catalog) {
  nlohmann::json job = {{"name", cluster},
                        {"model", "llama-3.1-8b"},
                        {"cluster", cluster},
                        {"training", {{"seq_length", 4096}, {"global_batch_size", 1}}}};
  for (const std::string& s : overrides) apply_override(job, s, catalog);
  return parse_job(job, catalog, std::filesystem::current_path(), WrittenPlan::Replaced);
}

}  // namespace megasim
