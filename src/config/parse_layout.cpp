// Megatron-Core's pipeline_model_parallel_layout (PipelineParallelLayerLayout.from_str): the
// model's parts written stage by stage, "E" the embedding, "t" a transformer layer, "m" a
// multi-token-prediction module, "L" the loss, "|" between virtual stages, "X*N" and "(...)*N"
// repetitions; e.g. DeepSeek-V3's "Et|(tt|)*30mL". Virtual stage i is model chunk i / PP of
// pipeline stage i % PP.
#include <string>

#include "config/json_reader.hpp"
#include "config/parse_parts.hpp"

namespace megasim::config_detail {

namespace {

constexpr std::size_t kMaxExpanded = 1 << 20;  // no real layout comes near; stops "(t)*999999999"

// Expands "X*N" and "(...)*N" (nested) into plain text.
std::string expand(const std::string& s, std::size_t& i, const std::string& path, int depth) {
  std::string out;
  while (i < s.size() && s[i] != ')') {
    std::string unit;
    if (s[i] == '(') {
      if (depth >= 16) throw InputError(path, "parentheses nest deeper than 16 in \"" + s + "\"");
      ++i;
      unit = expand(s, i, path, depth + 1);
      if (i >= s.size() || s[i] != ')') throw InputError(path, "unbalanced parentheses in \"" + s + "\"");
      ++i;
    } else {
      unit = std::string(1, s[i++]);
    }
    std::size_t repeat = 1;
    if (i < s.size() && s[i] == '*') {
      ++i;
      const std::size_t start = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
      if (i == start || i - start > 7) throw InputError(path, "'*' must be followed by a repeat count in \"" + s + "\"");
      repeat = std::stoul(s.substr(start, i - start));
    }
    for (std::size_t k = 0; k < repeat; ++k) {
      out += unit;
      if (out.size() > kMaxExpanded) throw InputError(path, "expands to more than " + std::to_string(kMaxExpanded) + " symbols");
    }
  }
  if (depth == 0 && i < s.size()) throw InputError(path, "unbalanced parentheses in \"" + s + "\"");
  return out;
}

}  // namespace

std::vector<int> parse_pipeline_layout(const std::string& text, const std::string& path, std::int64_t layers,
                                       std::int64_t mtp_layers, int pp, int& vpp) {
  std::size_t i = 0;
  const std::string flat = expand(text, i, path, 0);
  std::vector<std::string> stages(1);
  for (const char ch : flat) {
    if (ch == '|') {
      stages.emplace_back();
    } else if (ch == 'E' || ch == 't' || ch == 'm' || ch == 'L') {
      stages.back() += ch;
    } else if (ch != ' ') {
      throw InputError(path, std::string("unknown symbol '") + ch + "' (E embedding, t layer, m MTP, L loss, |, *N, ( ))");
    }
  }
  const auto n = static_cast<std::int64_t>(stages.size());
  if (n % pp != 0) {
    throw InputError(path, std::to_string(n) + " virtual stages do not divide into PP " + std::to_string(pp) + " pipeline stages");
  }
  if (vpp > 1 && n != static_cast<std::int64_t>(pp) * vpp) {
    throw InputError(path, std::to_string(n) + " virtual stages but PP x VPP = " + std::to_string(pp * vpp));
  }
  vpp = static_cast<int>(n / pp);
  std::vector<int> per_stage;
  std::int64_t t = 0, m = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    int count = 0;
    for (std::size_t k = 0; k < stages[s].size(); ++k) {
      const char ch = stages[s][k];
      if (ch == 't') ++count;
      const bool first = s == 0 && k == 0, last = s + 1 == stages.size() && k + 1 == stages[s].size();
      if (ch == 'E' && !first) throw InputError(path, "the embedding 'E' must open the first stage");
      if (ch == 'L' && !last) throw InputError(path, "the loss 'L' must close the last stage");
      if (ch == 'm') {
        if (s + 1 != stages.size()) throw InputError(path, "MTP modules 'm' must be in the last stage (Megatron-Core)");
        ++m;
      }
    }
    t += count;
    per_stage.push_back(count);
  }
  if (flat.find('E') == std::string::npos || flat.find('L') == std::string::npos) {
    throw InputError(path, "must place the embedding 'E' and the loss 'L'");
  }
  if (t != layers) {
    throw InputError(path, "places " + std::to_string(t) + " transformer layers 't' but the model has " + std::to_string(layers));
  }
  if (m != mtp_layers) {
    throw InputError(path, "places " + std::to_string(m) + " MTP modules 'm' but the model has " + std::to_string(mtp_layers) +
                               " (num_nextn_predict_layers)");
  }
  return per_stage;
}

}  // namespace megasim::config_detail
