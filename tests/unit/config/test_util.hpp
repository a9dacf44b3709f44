#pragma once
// Shared helpers for the config tests: the source tree's catalog, a small valid job to mutate,
// and an assertion that a statement throws InputError with a given JSON path and rule text.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "megasim/config/catalog.hpp"
#include "megasim/config/load.hpp"
#include "megasim/core/error.hpp"

namespace megasim::test {

inline std::filesystem::path source_dir() { return MEGASIM_SOURCE_DIR; }
inline std::filesystem::path data_dir() { return source_dir() / "tests" / "data"; }
inline Catalog catalog() { return Catalog::open(source_dir() / "configs"); }

// 16 A100s in 2 nodes, TP 2 x PP 2 -> DP 4; 32 sequences -> 8 micro-batches per pipeline.
inline nlohmann::json small_job() {
  return nlohmann::json::parse(R"({
    "name": "small",
    "model": {"hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 16, "vocab_size": 32000},
    "cluster": {"gpu": "a100-sxm4-80gb", "num_gpus": 16, "gpus_per_node": 8,
                "network": {"nic_bandwidth": "200Gbps"}},
    "parallel": {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2},
    "training": {"seq_length": 2048, "global_batch_size": 32, "micro_batch_size": 1}
  })");
}

inline JobSpec parse(const nlohmann::json& j) { return parse_job(j, catalog(), data_dir()); }

}  // namespace megasim::test

// Fails unless `stmt` throws InputError whose path equals `want_path` and whose rule contains
// `want_rule`; the message must be one line.
#define EXPECT_INPUT_ERROR(stmt, want_path, want_rule)                                           \
  do {                                                                                           \
    try {                                                                                        \
      stmt;                                                                                      \
      ADD_FAILURE() << "expected InputError(" << (want_path) << ")";                             \
    } catch (const megasim::InputError& e_) {                                                    \
      EXPECT_EQ(e_.path(), std::string(want_path)) << e_.what();                                 \
      EXPECT_NE(e_.rule().find(want_rule), std::string::npos) << e_.what();                     \
      EXPECT_EQ(std::string(e_.what()).find('\n'), std::string::npos) << e_.what();              \
    }                                                                                            \
  } while (0)
