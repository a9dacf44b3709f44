#pragma once
// Error types. Libraries throw; only the CLI's main() turns them into exit codes:
//   InputError    -> exit 2 (bad config, flag or file), one line "PATH: RULE"
//   anything else -> exit 1 (internal error)
#include <stdexcept>
#include <string>

namespace megasim {

// Invalid user input. `path` is the JSON path of the offending field (e.g.
// "cluster.network.nic_bandwidth") or a flag name ("--gpus"); `rule` says what was broken.
class InputError : public std::runtime_error {
 public:
  InputError(std::string path, std::string rule);
  const std::string& path() const noexcept { return path_; }
  const std::string& rule() const noexcept { return rule_; }

 private:
  std::string path_;
  std::string rule_;
};

// Joins a JSON path and a key: join_path("cluster", "num_gpus") == "cluster.num_gpus";
// join_path("", "model") == "model".
std::string join_path(const std::string& parent, const std::string& key);

}  // namespace megasim
