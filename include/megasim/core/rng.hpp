#pragma once
// Seeded randomness and stable hashing. Seeds are passed explicitly, never global
// (DESIGN.md B2 rule 5), and hashes do not depend on the platform or std::hash.
#include <cstdint>
#include <initializer_list>

namespace megasim {

// SplitMix64 finaliser: a bijective 64-bit mixer with good avalanche.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Order-dependent hash of a list of integers (e.g. src, dst, queue pair, switch salt).
constexpr std::uint64_t stable_hash(std::initializer_list<std::uint64_t> values) {
  std::uint64_t h = 0x6a09e667f3bcc909ULL;
  for (std::uint64_t v : values) h = mix64(h ^ mix64(v));
  return h;
}

// Small deterministic generator (SplitMix64 stream). Not thread-safe: one per worker.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next_u64() {
    state_ += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n); n > 0.
  std::uint64_t below(std::uint64_t n) { return next_u64() % n; }

 private:
  std::uint64_t state_;
};

}  // namespace megasim
