// Deterministic mutation fuzzing of the config parser: whatever a user writes, parsing either
// succeeds or throws InputError; never another exception, a crash or (under the sanitizers)
// undefined behaviour.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <vector>

#include "config/test_util.hpp"
#include "megasim/core/rng.hpp"

namespace megasim {
namespace {

using nlohmann::json;

// Values that have broken parsers before: zero, negatives, huge, fractional, wrong types,
// unit strings with typos, overflowing units, catalog names and paths that do not exist.
std::vector<json> nasty_values() {
  return {0, -1, 1, 3, 7, 8, 64, 2147483647, 2147483648LL, -2147483649LL, INT64_MAX, UINT64_MAX, 1e308, -1e308,
          0.5, 1e-320, "", "NaN", "nan", "inf", "-1GB", "200Gbs", "1e400TB", "80GiB", "1.5us", "312TFLOPS",
          "0Gbps", "-5us", true, false, nullptr, json::array(), json::object(), json::array({1, "x"}),
          "missing.json", "../../nonexistent/x.json", "/", "a100-sxm4-80gb", "megascale", "gpt3-175b",
          json{{"value", "200Gbps"}, {"source", "s"}}, json{{"value", nullptr}}, json{{"base", "megascale-a100-clos"}},
          json{{"base", 3}}};
}

// All JSON pointers into `j` (objects and arrays, recursively).
void collect(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) collect(v, at / k, out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) collect(j[i], at / i, out);
  }
}

json mutate(json j, Rng& rng, const std::vector<json>& pool) {
  const int edits = 1 + static_cast<int>(rng.below(3));
  for (int e = 0; e < edits; ++e) {
    std::vector<json::json_pointer> ptrs;
    collect(j, json::json_pointer(), ptrs);
    const auto& p = ptrs[rng.below(ptrs.size())];
    if (p.empty()) continue;
    json& target = j[p];
    switch (rng.below(5)) {
      case 0:  // delete the key
        j[p.parent_pointer()].is_object() ? static_cast<void>(j[p.parent_pointer()].erase(p.back()))
                                          : static_cast<void>(target = nullptr);
        break;
      case 1:  // swap type: number <-> string
        if (target.is_number()) {
          target = target.dump();
        } else if (target.is_string()) {
          target = static_cast<std::int64_t>(rng.below(200)) - 50;
        } else {
          target = pool[rng.below(pool.size())];
        }
        break;
      case 2:  // small random integer, often 0 or negative
        target = static_cast<std::int64_t>(rng.below(140)) - 10;
        break;
      case 3:  // add an unexpected key next to it
        if (j[p.parent_pointer()].is_object()) j[p.parent_pointer()]["x" + std::to_string(rng.below(3))] = 1;
        break;
      default:
        target = pool[rng.below(pool.size())];
    }
  }
  return j;
}

void expect_only_input_errors(const std::function<void()>& fn, const std::string& what) {
  try {
    fn();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "non-InputError exception " << e.what() << " for " << what;
  }
}

TEST(ConfigFuzz, MutatedConfigsThrowOnlyInputError) {
  const auto cat = test::catalog();
  std::vector<json> seeds{test::small_job(), read_json_file(cat.root() / "megascale-175b-12288.json", "seed"),
                          read_json_file(test::data_dir() / "llama-3.1-8b-job.json", "seed")};
  auto hf = test::small_job();
  hf["model"] = read_json_file(test::data_dir() / "hf-gpt-neox-20b-config.json", "seed");
  seeds.push_back(hf);
  const auto pool = nasty_values();
  Rng rng(20240229);
  int accepted = 0;
  for (int i = 0; i < 1500; ++i) {
    const json mutated = mutate(seeds[rng.below(seeds.size())], rng, pool);
    expect_only_input_errors([&] {
      parse_job(mutated, cat, test::data_dir());
      ++accepted;
    }, mutated.dump());
  }
  // The mutations must leave some configs valid, or the test only exercises the first check.
  EXPECT_GT(accepted, 50);
  EXPECT_LT(accepted, 1400);
  std::printf("accepted %d of 1500 mutated configs\n", accepted);
}

// Mixture of Experts: the families' Hugging Face spellings, the expert grid and the pipeline
// layout, mutated.
TEST(ConfigFuzz, MutatedMoeConfigsThrowOnlyInputError) {
  const auto cat = test::catalog();
  std::vector<json> seeds;
  for (const char* hf : {"deepseek-v3", "mixtral-8x7b", "qwen2-moe-57b-a14b", "gpt-oss-120b"}) {
    auto j = test::small_job();
    j["model"] = read_json_file(test::data_dir() / "hf" / (std::string(hf) + "-config.json"), "seed");
    j["cluster"] = {{"base", "dgx-h100-ndr-clos"}, {"num_gpus", 64}};
    j["parallel"] = {{"tensor_model_parallel_size", 1}, {"pipeline_model_parallel_size", 1},
                     {"expert_model_parallel_size", 8}};
    j["training"]["moe_router_force_load_balancing"] = true;
    j["training"]["moe_router_dtype"] = "fp32";
    j["system"] = {{"fused_kernels", false}, {"moe_token_dispatcher_type", "flex"}};
    seeds.push_back(j);
  }
  auto layout = seeds.front();
  layout["cluster"]["num_gpus"] = 1024;
  layout["training"]["global_batch_size"] = 1024;
  layout["parallel"] = {{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 8},
                        {"expert_model_parallel_size", 64}, {"pipeline_model_parallel_layout", "Et|(tt|)*30mL"}};
  seeds.push_back(layout);
  const auto pool = nasty_values();
  Rng rng(26);
  int accepted = 0;
  for (int i = 0; i < 800; ++i) {
    const json mutated = mutate(seeds[rng.below(seeds.size())], rng, pool);
    expect_only_input_errors([&] {
      parse_job(mutated, cat, test::data_dir());
      ++accepted;
    }, mutated.dump());
  }
  EXPECT_GT(accepted, 20);
  // Random layout strings: parse or InputError, never a crash or a runaway expansion.
  const std::string alphabet = "Etm L|()*0123456789x";
  for (int i = 0; i < 600; ++i) {
    std::string text;
    for (std::uint64_t n = 1 + rng.below(24); n > 0; --n) text += alphabet[rng.below(alphabet.size())];
    json j = layout;
    j["parallel"]["pipeline_model_parallel_layout"] = text;
    expect_only_input_errors([&] { parse_job(j, cat, test::data_dir()); }, text);
  }
}

TEST(ConfigFuzz, RandomOverridesThrowOnlyInputError) {
  const auto cat = test::catalog();
  const auto pool = nasty_values();
  const std::vector<std::string> paths{"model", "model.hidden_size", "cluster", "cluster.num_gpus", "cluster.gpu",
                                       "cluster.gpu.memory", "cluster.network.nic_bandwidth", "system.preset",
                                       "system", "parallel", "training.seq_length", "x.y.z", "model.base", ""};
  Rng rng(7);
  for (int i = 0; i < 400; ++i) {
    json j = test::small_job();
    const std::string a = paths[rng.below(paths.size())] + "=" + pool[rng.below(pool.size())].dump();
    expect_only_input_errors([&] {
      apply_override(j, a, cat, test::data_dir());
      parse_job(j, cat, test::data_dir());
    }, a);
  }
}

TEST(ConfigFuzz, TruncatedJsonTextIsInputError) {
  const auto cat = test::catalog();
  const std::string text = read_json_file(cat.root() / "megascale-175b-12288.json", "x").dump(2);
  Rng rng(11);
  int parse_errors = 0;
  for (int i = 0; i < 400; ++i) {
    const std::size_t cut = rng.below(text.size());
    expect_only_input_errors([&] {
      const json j = parse_json_text(std::string_view(text).substr(0, cut), "", "job.json");
      parse_job(j, cat, test::data_dir());
    }, "cut at " + std::to_string(cut));
    try {
      parse_json_text(std::string_view(text).substr(0, cut), "", "job.json");
    } catch (const InputError& e) {
      ++parse_errors;
      EXPECT_NE(e.rule().find("not valid JSON at line"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(parse_errors, 390);  // a strict prefix of an object is never valid JSON (except "")
}

}  // namespace
}  // namespace megasim
