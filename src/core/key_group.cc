#include "weir/key_group.h"

#include <xxhash.h>

namespace weir {

namespace {
uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
}  // namespace

int32_t murmurHash(int32_t code) {
  uint32_t h = static_cast<uint32_t>(code);
  h *= 0xcc9e2d51u;
  h = rotl(h, 15);
  h *= 0x1b873593u;
  h = rotl(h, 13);
  h = h * 5 + 0xe6546b64u;
  h ^= 4u;  // length of the input in bytes
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  auto s = static_cast<int32_t>(h);
  if (s >= 0) return s;
  if (s != INT32_MIN) return -s;
  return 0;
}

KeyGroupRange computeKeyGroupRangeForOperatorIndex(int maxParallelism, int parallelism,
                                                   int operatorIndex) {
  // Smallest g with g * p / m == i is ceil(i * m / p).
  auto m = static_cast<int64_t>(maxParallelism);
  auto p = static_cast<int64_t>(parallelism);
  int start = static_cast<int>((operatorIndex * m + p - 1) / p);
  int end = static_cast<int>(((operatorIndex + 1) * m + p - 1) / p) - 1;
  return {start, end};
}

int32_t hashBytes(const void* data, size_t size) {
  uint64_t h = XXH3_64bits(data, size);
  return static_cast<int32_t>(static_cast<uint32_t>(h ^ (h >> 32)));
}

}  // namespace weir
