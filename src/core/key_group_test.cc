#include "weir/key_group.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace weir {
namespace {

// murmur3_32 of a 4-byte little-endian block with seed 0, written out from the
// reference algorithm (Appleby's MurmurHash3_x86_32) independently of key_group.cc.
uint32_t referenceMurmurBits(int32_t code) {
  auto rotl = [](uint32_t x, int r) { return (x << r) | (x >> (32 - r)); };
  uint32_t k = static_cast<uint32_t>(code);
  k *= 0xcc9e2d51u;
  k = rotl(k, 15);
  k *= 0x1b873593u;
  uint32_t h = 0 ^ k;
  h = rotl(h, 13);
  h = h * 5 + 0xe6546b64u;
  h ^= 4u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}
// Made non-negative as Flink's MathUtils.murmurHash does.
int32_t referenceMurmur(int32_t code) {
  auto s = static_cast<int32_t>(referenceMurmurBits(code));
  return s >= 0 ? s : (s == INT32_MIN ? 0 : -s);
}

TEST(KeyGroup, MurmurHashIsMurmur3OfTheCodeMadeNonNegative) {
  for (int32_t code : {0, 1, -1, 42, 123456789, INT32_MIN, INT32_MAX}) {
    EXPECT_EQ(murmurHash(code), referenceMurmur(code)) << code;
    EXPECT_GE(murmurHash(code), 0);
  }
  // Published murmur3_32 vector: bytes 00 00 00 00, seed 0 -> 0x2362F9DE.
  EXPECT_EQ(murmurHash(0), 0x2362F9DE);
  // A sweep over both signs of the hash.
  for (int64_t code = INT32_MIN; code <= INT32_MAX; code += 65537)
    ASSERT_EQ(murmurHash(static_cast<int32_t>(code)), referenceMurmur(static_cast<int32_t>(code))) << code;
}

// Each step of murmur3_32 is a bijection on 32 bits, so exactly one code hashes to
// INT32_MIN, which has no negation: Flink maps it to 0. The code is found by running the
// steps backwards.
TEST(KeyGroup, MurmurHashMapsTheCodeThatHashesToInt32MinToZero) {
  auto inverse = [](uint32_t odd) {  // odd⁻¹ mod 2^32 by Newton's iteration
    uint32_t x = odd;
    for (int i = 0; i < 5; ++i) x *= 2 - odd * x;
    return x;
  };
  auto rotr = [](uint32_t x, int r) { return (x >> r) | (x << (32 - r)); };
  uint32_t h = 0x80000000u;
  h ^= h >> 16;
  h *= inverse(0xc2b2ae35u);
  h ^= (h >> 13) ^ (h >> 26);
  h *= inverse(0x85ebca6bu);
  h ^= h >> 16;
  h ^= 4u;
  h = rotr((h - 0xe6546b64u) * inverse(5), 13);
  const auto code = static_cast<int32_t>(rotr(h * inverse(0x1b873593u), 15) * inverse(0xcc9e2d51u));
  ASSERT_EQ(referenceMurmurBits(code), 0x80000000u);
  EXPECT_EQ(murmurHash(code), 0);
}

TEST(KeyGroup, EveryKeyGroupBelongsToTheRangeOfTheSubtaskThatOwnsIt) {
  for (int maxParallelism : {1, 7, 128, 1000, 32768}) {
    for (int parallelism : {1, 2, 3, 4, 7, 128}) {
      if (parallelism > maxParallelism) continue;
      int covered = 0;
      for (int subtask = 0; subtask < parallelism; ++subtask) {
        auto range = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtask);
        EXPECT_EQ(range.start, covered) << maxParallelism << "/" << parallelism << "/" << subtask;
        covered += range.size();
        for (int g = range.start; g <= range.end; ++g)
          ASSERT_EQ(computeOperatorIndexForKeyGroup(maxParallelism, parallelism, g), subtask);
      }
      EXPECT_EQ(covered, maxParallelism);
    }
  }
}

// The router's multiply-shift and table give what the two divisions give, for every
// kind of maxParallelism (1, odd, a power of two, the largest) and of key hash.
TEST(KeyGroup, TheRouterAgreesWithTheDivisions) {
  std::vector<int32_t> hashes = {0, 1, -1, 2, INT32_MAX, INT32_MIN, INT32_MIN + 1, 127, 128, -128};
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    hashes.push_back(static_cast<int32_t>(x >> 32));
  }
  for (int maxParallelism : {1, 2, 3, 7, 100, 128, 1000, 4096, 32767, 32768}) {
    for (int parallelism : {1, 2, 3, 5, 64, 32768}) {
      if (parallelism > maxParallelism) continue;
      KeyGroupRouter router(maxParallelism, parallelism);
      for (int32_t h : hashes) {
        const int keyGroup = assignToKeyGroup(h, maxParallelism);
        ASSERT_EQ(router.keyGroup(h), keyGroup) << "hash " << h << ", maxParallelism " << maxParallelism;
        ASSERT_EQ(router.operatorIndex(h), computeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroup))
            << "hash " << h << ", maxParallelism " << maxParallelism << ", parallelism " << parallelism;
      }
    }
  }
}

TEST(KeyGroup, KeysSpreadEvenlyOverKeyGroups) {
  std::map<int, int> perGroup;
  for (int64_t key = 0; key < 128000; ++key) perGroup[assignToKeyGroup(KeyHash<int64_t>{}(key), 128)]++;
  ASSERT_EQ(perGroup.size(), 128u);
  for (auto& [g, n] : perGroup) {
    EXPECT_GT(n, 800) << g;
    EXPECT_LT(n, 1200) << g;
  }
}

TEST(KeyGroup, KeyHashesAreStableAndFollowJavaForIntegers) {
  EXPECT_EQ(KeyHash<int>{}(17), 17);
  EXPECT_EQ(KeyHash<int64_t>{}(int64_t{1} << 32), 1);  // Long.hashCode: (int)(v ^ (v >>> 32))
  EXPECT_EQ(KeyHash<int64_t>{}(-1), 0);
  EXPECT_EQ(KeyHash<double>{}(0.0), KeyHash<double>{}(-0.0));
  EXPECT_EQ(KeyHash<std::string>{}("user-1"), KeyHash<std::string>{}(std::string("user-1")));
  EXPECT_NE(KeyHash<std::string>{}("user-1"), KeyHash<std::string>{}("user-2"));
  EXPECT_EQ(KeyHash<std::string>{}(""), hashBytes("", 0));
  auto pairHash = KeyHash<std::pair<int, int>>{}({3, 4});
  EXPECT_EQ(pairHash, 31 * 3 + 4);
}

// Flink's KeyGroupRange: of() validates, getIntersection, iteration in order.
TEST(KeyGroup, KeyGroupRangeValidatesIntersectsAndIterates) {
  KeyGroupRange r = KeyGroupRange::of(2, 5);
  EXPECT_EQ(r.getStartKeyGroup(), 2);
  EXPECT_EQ(r.getEndKeyGroup(), 5);
  EXPECT_EQ(r.getNumberOfKeyGroups(), 4);
  std::vector<int> seen;
  for (int keyGroup : r.keyGroups()) seen.push_back(keyGroup);
  EXPECT_EQ(seen, (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(r.getIntersection(KeyGroupRange::of(4, 9)), KeyGroupRange::of(4, 5));
  EXPECT_EQ(KeyGroupRange::of(4, 9).getIntersection(r), KeyGroupRange::of(4, 5));
  EXPECT_EQ(r.getIntersection(KeyGroupRange::of(6, 9)), KeyGroupRange::empty());
  EXPECT_EQ(KeyGroupRange::empty().getNumberOfKeyGroups(), 0);
  int none = 0;
  for (int keyGroup : KeyGroupRange::empty().keyGroups()) none += keyGroup + 1;
  EXPECT_EQ(none, 0);
  EXPECT_TRUE(r.contains(5));
  EXPECT_FALSE(r.contains(6));
  EXPECT_THROW(KeyGroupRange::of(-1, 3), Error);
  EXPECT_THROW(KeyGroupRange::of(5, 4), Error);
  // Every subtask's range, intersected with every other's, is empty: they partition.
  for (int p : {1, 3, 7}) {
    int total = 0;
    for (int i = 0; i < p; ++i) {
      KeyGroupRange mine = computeKeyGroupRangeForOperatorIndex(128, p, i);
      total += mine.getNumberOfKeyGroups();
      for (int j = 0; j < p; ++j)
        if (j != i) EXPECT_EQ(mine.getIntersection(computeKeyGroupRangeForOperatorIndex(128, p, j)).size(), 0);
    }
    EXPECT_EQ(total, 128);
  }
}

}  // namespace
}  // namespace weir
