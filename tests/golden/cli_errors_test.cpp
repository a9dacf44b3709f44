// Bad input at the command line: exit code 2 and exactly one line on stderr naming the field
// (or flag) and the rule. Config-level error classes are covered in tests/unit/config; these check
// that the CLI maps them correctly and never crashes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "golden_support.hpp"

namespace megasim {
namespace {

using testing::run;
using testing::source_path;

void expect_one_line_error(const testing::CliRun& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliErrors, MissingConfigFile) {
  expect_one_line_error(run({"simulate", "/nonexistent/job.json"}), "CONFIG");
}

TEST(CliErrors, UnknownFlag) {
  const auto r = run({"simulate", "megascale-175b-12288", "--bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
}

TEST(CliErrors, BadEngineName) {
  expect_one_line_error(run({"simulate", "megascale-175b-12288", "--engine", "warp"}), "--engine");
}

TEST(CliErrors, BadOverrideNamesField) {
  expect_one_line_error(
      run({"simulate", "megascale-175b-12288", "--set", "parallel.tensor_model_parallel_size=0"}),
      "parallel.tensor_model_parallel_size");
}

TEST(CliErrors, IndivisibleGpuCountNamesField) {
  expect_one_line_error(run({"simulate", "megascale-175b-12288", "--set", "cluster.num_gpus=1000"}),
                        "cluster.num_gpus");
}

TEST(CliErrors, MalformedUnitNamesField) {
  expect_one_line_error(
      run({"simulate", "megascale-175b-12288", "--set", "cluster.network.nic_bandwidth=200Gbs"}),
      "nic_bandwidth");
}

// Bad MoE inputs (issue 26): EP not dividing the experts, top-k above the experts, the expert
// grid not tiling the GPUs; each exits 2 naming the field.
TEST(CliErrors, BadMoeInputsNameTheField) {
  const std::string job = source_path("configs/bench/deepseek-v3-1024-h100.json");
  expect_one_line_error(run({"simulate", job, "--engine", "analytic", "--set", "parallel.expert_model_parallel_size=48"}),
                        "parallel.expert_model_parallel_size");
  expect_one_line_error(run({"simulate", job, "--engine", "analytic", "--set", "model.num_experts_per_tok=300"}),
                        "model.num_experts_per_tok");
  expect_one_line_error(run({"simulate", job, "--engine", "analytic", "--set", "parallel.expert_model_parallel_size=256"}),
                        "ETP*EP*PP");
}

// Megatron-Core's rules for the merged 1F1B all-to-all overlap (TransformerConfig asserts).
TEST(CliErrors, MergedOneFOneBRulesNameTheField) {
  const std::string job = source_path("configs/bench/deepseek-v3-1024-h100.json");
  for (const char* bad : {"system.moe_token_dispatcher_type=allgather", "system.moe_shared_expert_overlap=true"}) {
    expect_one_line_error(run({"simulate", job, "--engine", "analytic", "--set", bad}),
                          "system.overlap_moe_expert_parallel_comm");
  }
  const auto r = run({"simulate", "llama-3.1-70b-1024-h100", "--engine", "analytic", "--set", "model=qwen3-30b-a3b",
                      "--set", "cluster.num_gpus=16", "--set", "parallel.tensor_model_parallel_size=1", "--set",
                      "parallel.pipeline_model_parallel_size=2", "--set", "parallel.virtual_pipeline_model_parallel_size=1",
                      "--set", "parallel.expert_model_parallel_size=8", "--set", "training.global_batch_size=64",
                      "--set", "system.overlap_moe_expert_parallel_comm=true"});
  expect_one_line_error(r, "system.overlap_moe_expert_parallel_comm");
  EXPECT_NE(r.err.find("interleaved"), std::string::npos) << r.err;
}

TEST(CliErrors, UnknownListKind) { expect_one_line_error(run({"list", "toasters"}), "KIND"); }

TEST(CliErrors, UnknownValidationSuite) {
  const auto r = run({"validate", "--suite", "table9"});
  expect_one_line_error(r, "--suite");
  EXPECT_NE(r.err.find("korthikanti2022_layer"), std::string::npos) << r.err;  // lists the suites
}

TEST(CliErrors, UnknownTpOverlapScopeNamesField) {
  expect_one_line_error(run({"simulate", "megascale-175b-12288", "--set", "system.tp_overlap_scope=attention"}),
                        "system.tp_overlap_scope");
}

TEST(CliErrors, ValidateBadOverrideNamesField) {
  expect_one_line_error(run({"validate", "--suite", "table3", "--engine", "analytic", "--set",
                             "training.micro_batch_size=abc"}),
                        "training.micro_batch_size");
}

TEST(CliErrors, NonBooleanSystemSwitchNamesField) {
  expect_one_line_error(run({"simulate", "megascale-175b-12288", "--set", "system.tp_async_backward=3"}),
                        "system.tp_async_backward");
}

TEST(CliErrors, HelpAndVersionSucceed) {
  EXPECT_EQ(run({"--help"}).code, 0);
  EXPECT_EQ(run({"simulate", "--help"}).code, 0);
  const auto v = run({"--version"});
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("megasim"), std::string::npos);
}


// Every catalog is read strictly: a misspelled key in any file under configs/ (GPU, cluster,
// network defaults, model, system preset, hardware profile, host figures, NCCL model,
// reliability, validation index and suite, bundled job) exits 2 with one line naming the key.
class CatalogTypo : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(CatalogTypo, ExitsTwoNamingTheKey) {
  const auto [file, parent] = GetParam();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("megasim-catalog-typo-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(source_path("configs"), dir, fs::copy_options::recursive);
  nlohmann::json j;
  std::ifstream(dir / file) >> j;
  j[nlohmann::json::json_pointer(parent)]["misspelt_typo_key"] = 1;
  std::ofstream(dir / file) << j.dump(1);
  ::setenv("MEGASIM_CATALOG_DIR", dir.c_str(), 1);
  const std::string f = file;
  const auto r = f.rfind("validation/", 0) == 0
                     ? run({"validate", "--suite", "comm_init"})
                     : run({"simulate", "llama-3.1-70b-1024-h100", "--engine", "analytic", "--json"});
  ::unsetenv("MEGASIM_CATALOG_DIR");
  fs::remove_all(dir);
  expect_one_line_error(r, "misspelt_typo_key");
}

INSTANTIATE_TEST_SUITE_P(
    EveryCatalog, CatalogTypo,
    ::testing::Values(std::make_tuple("gpus/h100-sxm5-80gb.json", ""),
                      std::make_tuple("clusters/dgx-h100-ndr-clos.json", ""),
                      std::make_tuple("clusters/_network-defaults.json", ""),
                      std::make_tuple("models/llama-3.1-70b.json", ""),
                      std::make_tuple("systems/megatron-core.json", ""),
                      std::make_tuple("hw/hopper.json", ""), std::make_tuple("hw/hopper.json", "/gemm"),
                      std::make_tuple("hw/hopper.json", "/attention/flash_v2_forward"),
                      std::make_tuple("hw/host.json", ""), std::make_tuple("nccl/nccl-2.21.json", ""),
                      std::make_tuple("reliability/default.json", ""),
                      std::make_tuple("reliability/default.json", "/recovery"),
                      std::make_tuple("validation/suites.json", ""),
                      std::make_tuple("validation/megascale-comm-init.json", ""),
                      std::make_tuple("llama-3.1-70b-1024-h100.json", "")),
    [](const ::testing::TestParamInfo<CatalogTypo::ParamType>& p) {
      std::string name = std::string(std::get<0>(p.param)) + std::get<1>(p.param);
      for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return name;
    });

}  // namespace
}  // namespace megasim
