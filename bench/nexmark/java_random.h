// java.util.Random, as the Nexmark generator draws from it (generator.cc).
#pragma once

#include <cstdint>
#include <limits>

namespace weir::nexmark {

// java.util.Random: the reference draws every field from one, seeded with the event id,
// so the same linear congruential generator gives the same distributions (and, for
// seed 0, the same events as Beam's generator).
class JavaRandom {
 public:
  explicit JavaRandom(int64_t seed) : state_((static_cast<uint64_t>(seed) ^ kMultiplier) & kMask) {}
  int32_t nextInt() { return next(32); }
  int32_t nextInt(int32_t bound) {
    if ((bound & -bound) == bound) return static_cast<int32_t>((static_cast<int64_t>(bound) * next(31)) >> 31);
    while (true) {
      int32_t bits = next(31);
      int32_t value = bits % bound;
      if (accepted(bits, value, bound)) return value;
    }
  }
  int64_t nextLong() {
    uint64_t high = static_cast<uint64_t>(static_cast<int64_t>(next(32))) << 32;
    return static_cast<int64_t>(high + static_cast<uint64_t>(static_cast<int64_t>(next(32))));
  }
  double nextDouble() {
    int64_t high = static_cast<int64_t>(next(26)) << 27;
    return static_cast<double>(high + next(27)) * 0x1.0p-53;
  }
  // The reference's LongGenerator.nextLong(random, n): uniform in [0, n).
  int64_t nextLong(int64_t n) {
    if (n < std::numeric_limits<int32_t>::max()) return nextInt(static_cast<int32_t>(n));
    int64_t r = nextLong() % n;
    return r < 0 ? -r : r;
  }
  // The reference's letter: `special` when nextInt(13) is 0, else 'a' + nextInt(26).
  // Both states are computed from this one, so the usual case (a letter, two draws)
  // waits on one multiplication instead of two in a row.
  char nextLetter(char special) {
    const uint64_t first = step(state_), second = (state_ * kMultiplier2 + kIncrement2) & kMask;
    const int32_t bits13 = bitsOf(first, 31), value13 = bits13 % 13;
    const int32_t bits26 = bitsOf(second, 31), value26 = bits26 % 26;
    if (accepted(bits13, value13, 13) && value13 != 0 && accepted(bits26, value26, 26)) [[likely]] {
      state_ = second;
      return static_cast<char>('a' + value26);
    }
    return nextInt(13) == 0 ? special : static_cast<char>('a' + nextInt(26));  // (a rejected draw: the loop)
  }

 private:
  static constexpr uint64_t kMultiplier = 0x5DEECE66DULL, kIncrement = 0xBULL;
  static constexpr uint64_t kMask = (1ULL << 48) - 1;
  // Two steps at once: s -> M·(M·s + c) + c.
  static constexpr uint64_t kMultiplier2 = (kMultiplier * kMultiplier) & kMask;
  static constexpr uint64_t kIncrement2 = ((kMultiplier + 1) * kIncrement) & kMask;
  static uint64_t step(uint64_t state) { return (state * kMultiplier + kIncrement) & kMask; }
  static int32_t bitsOf(uint64_t state, int bits) {
    return static_cast<int32_t>(static_cast<uint32_t>(state >> (48 - bits)));
  }
  // java.util.Random.nextInt(bound)'s test that `bits` did not fall in the last,
  // partial run of `bound` values.
  static bool accepted(int32_t bits, int32_t value, int32_t bound) {
    return static_cast<int32_t>(static_cast<uint32_t>(bits) - static_cast<uint32_t>(value) +
                                static_cast<uint32_t>(bound - 1)) >= 0;
  }
  int32_t next(int bits) {
    state_ = step(state_);
    return bitsOf(state_, bits);
  }
  uint64_t state_;
};

}  // namespace weir::nexmark
