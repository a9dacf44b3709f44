#pragma once
// What-if grids for `megasim sweep`: --vary specs, their cartesian product, and shards.
//
//   --vary PATH=V1,V2,...    listed values (each a --set value: JSON, else a string)
//   --vary PATH=A:B:xF       geometric: A, A*F, A*F^2, ... while <= B  (A > 0, F > 1)
//   --vary PATH=A:B:+S       arithmetic: A, A+S, ... while <= B         (S > 0)
// Ranges whose A, B and F/S are all integers produce integers; otherwise decimals (%.12g).
// Points are numbered row-major: the first --vary changes slowest.
#include <cstddef>
#include <string>
#include <vector>

namespace megasim {

struct VarySpec {
  std::string path;                 // dotted config path, as for --set
  std::vector<std::string> values;  // value texts, in order
};

// Throws InputError("--vary", ...) naming the problem (missing '=', empty path or value,
// malformed range, non-numeric bounds, F <= 1, S <= 0, A > B, too many values).
VarySpec parse_vary(const std::string& text);

// Also rejects the same PATH varied twice (InputError("--vary")) and grids over 1,000,000 points.
std::size_t grid_size(const std::vector<VarySpec>& vary);

// The "PATH=VALUE" assignments of point `index` (0 <= index < grid_size).
std::vector<std::string> grid_assignments(const std::vector<VarySpec>& vary, std::size_t index);

// --shard I/N: the I-th (0-based) of N disjoint slices; point p belongs to shard p % N.
struct ShardSpec {
  std::size_t index = 0;
  std::size_t count = 1;
};
ShardSpec parse_shard(const std::string& text);  // InputError("--shard") when malformed or I >= N
std::vector<std::size_t> shard_points(std::size_t total, const ShardSpec& shard);

}  // namespace megasim
