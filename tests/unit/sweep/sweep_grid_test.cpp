#include <gtest/gtest.h>

#include "megasim/core/error.hpp"
#include "megasim/sweep/sweep_grid.hpp"

namespace megasim {
namespace {

using Values = std::vector<std::string>;

TEST(SweepGrid, ListsAndRanges) {
  EXPECT_EQ(parse_vary("system.preset=megatron-lm,megascale").values, (Values{"megatron-lm", "megascale"}));
  // 256 * 2^k <= 12288: 256, 512, 1024, 2048, 4096, 8192 (16384 is past the end).
  EXPECT_EQ(parse_vary("cluster.num_gpus=256:12288:x2").values,
            (Values{"256", "512", "1024", "2048", "4096", "8192"}));
  EXPECT_EQ(parse_vary("training.micro_batch_size=1:4:+1").values, (Values{"1", "2", "3", "4"}));
  // Decimal range computed from the index: 0.1 + 2*0.1 lands on 0.3 within the tolerance.
  EXPECT_EQ(parse_vary("x.y=0.1:0.3:+0.1").values, (Values{"0.1", "0.2", "0.3"}));
  EXPECT_EQ(parse_vary("x.y=1:1:x2").values, (Values{"1"}));
  // Not a range: a value with one colon stays one listed value.
  EXPECT_EQ(parse_vary("a=b:c").values, (Values{"b:c"}));
}

TEST(SweepGrid, InvalidVarySpecsNameTheFlag) {
  for (const char* bad : {"no-equals", "=1,2", "a..b=1", "a=", "a=1,,2", "a=1:10:x1", "a=10:1:+1",
                          "a=p:q:+1", "a=1:10:*2", "a=0:10:x2", "a=1:10:+0", "a=1:10:+", "a=1.5:2:x0.5"}) {
    try {
      parse_vary(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(e.path(), "--vary") << bad;
    }
  }
  const std::vector<VarySpec> twice = {parse_vary("a=1,2"), parse_vary("a=3")};
  EXPECT_THROW(grid_size(twice), InputError);
  const std::vector<VarySpec> huge = {parse_vary("a=1:1000:+1"), parse_vary("b=1:1000:+1"),
                                      parse_vary("c=1:2:+1")};
  EXPECT_THROW(grid_size(huge), InputError);
}

TEST(SweepGrid, RowMajorPointsAndShards) {
  const std::vector<VarySpec> v = {parse_vary("a=1,2"), parse_vary("b=x,y,z")};
  ASSERT_EQ(grid_size(v), 6u);
  EXPECT_EQ(grid_assignments(v, 0), (Values{"a=1", "b=x"}));
  EXPECT_EQ(grid_assignments(v, 2), (Values{"a=1", "b=z"}));
  EXPECT_EQ(grid_assignments(v, 4), (Values{"a=2", "b=y"}));
  EXPECT_EQ(shard_points(6, parse_shard("1/4")), (std::vector<std::size_t>{1, 5}));
  EXPECT_EQ(shard_points(2, parse_shard("3/4")), (std::vector<std::size_t>{}));
  for (const char* bad : {"4/4", "1", "a/2", "1/0", "-1/2", "1/2/3"}) {
    EXPECT_THROW(parse_shard(bad), InputError) << bad;
  }
}

}  // namespace
}  // namespace megasim
