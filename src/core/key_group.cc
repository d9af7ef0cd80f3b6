#include "weir/key_group.h"

#include <xxhash.h>

namespace weir {

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
