// MegaScale's chunked TP overlap (section 3.2, Fig. 3c), derived by hand.
#include <gtest/gtest.h>

#include "../../src/exec/tp_overlap.hpp"

namespace megasim {
namespace {

TEST(TpOverlap, OffExposesAllCommunication) {
  PassTimes t;
  t.overlap_gemm_s = 4.0;
  t.overlap_comm_s = 1.0;
  t.other_comm_s = 0.5;
  EXPECT_DOUBLE_EQ(apply_tp_overlap(t, {false, 4, 0.0}).exposed_s, 1.5);
}

TEST(TpOverlap, ShortCommHidesButItsFirstChunk) {
  // comm 1 < gemm 4, k = 4 chunks: only the first comm chunk (0.25) is exposed; the rest
  // (0.75) overlaps GEMM chunks and slows them by 10%: 0.075.
  PassTimes t;
  t.overlap_gemm_s = 4.0;
  t.overlap_comm_s = 1.0;
  EXPECT_NEAR(apply_tp_overlap(t, {true, 4, 0.1}).exposed_s, 0.25 + 0.075, 1e-12);
}

TEST(TpOverlap, LongCommStaysPartlyExposed) {
  // comm 4 > gemm 2, k = 2: timeline c1(2) | max(c2, g1)=2 | g2(1) = 5; exposed = 5 - 2 = 3.
  PassTimes t;
  t.overlap_gemm_s = 2.0;
  t.overlap_comm_s = 4.0;
  EXPECT_NEAR(apply_tp_overlap(t, {true, 2, 0.0}).exposed_s, 3.0, 1e-12);
}

}  // namespace
}  // namespace megasim
