// Key groups: the unit in which keyed state is partitioned, snapshotted and rescaled.
//
// A key belongs to key group murmur3_32(KeyHash(key)) % maxParallelism, and key group g
// runs on subtask g * parallelism / maxParallelism (DESIGN.md, "Keys and key groups").
// Both functions are stable across processes and builds: never std::hash.
#pragma once

#include <absl/hash/hash.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/error.h"
#include "weir/serializer.h"

namespace weir {

// Default and largest maxParallelism (Flink: 128 by default, 2^15 at most).
inline constexpr int kDefaultMaxParallelism = 128;
inline constexpr int kUpperBoundMaxParallelism = 32768;

// Flink's default max parallelism for an operator of parallelism `p` when none is set:
// min(max(roundUpToPowerOfTwo(p + p / 2), 128), 32768).
inline int defaultMaxParallelism(int p) {
  int64_t wanted = static_cast<int64_t>(p) + p / 2, power = 1;
  while (power < wanted) power *= 2;
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(power, kDefaultMaxParallelism), kUpperBoundMaxParallelism));
}

// A contiguous, inclusive range of key groups [start, end]; empty when end < start.
struct KeyGroupRange {
  int start = 0;
  int end = -1;

  // Flink's KeyGroupRange.of: throws weir::Error unless 0 <= start <= end.
  static KeyGroupRange of(int startKeyGroup, int endKeyGroup) {
    if (startKeyGroup < 0 || endKeyGroup < startKeyGroup)
      throw Error(ErrorCode::kInvalidArgument, "KeyGroupRange.of(" + std::to_string(startKeyGroup) + ", " +
                                                   std::to_string(endKeyGroup) + "): need 0 <= start <= end");
    return {startKeyGroup, endKeyGroup};
  }
  // Flink's EMPTY_KEY_GROUP_RANGE.
  static KeyGroupRange empty() { return {}; }
  int getStartKeyGroup() const { return start; }
  int getEndKeyGroup() const { return end; }
  int getNumberOfKeyGroups() const { return size(); }
  bool contains(int keyGroup) const { return keyGroup >= start && keyGroup <= end; }
  int size() const { return end < start ? 0 : end - start + 1; }
  // The key groups in both; empty() when none.
  KeyGroupRange getIntersection(const KeyGroupRange& other) const {
    const int from = std::max(start, other.start), to = std::min(end, other.end);
    return from <= to ? KeyGroupRange{from, to} : empty();
  }
  // The key groups in order: for (int keyGroup : range.keyGroups()). (Flink's range is
  // itself Iterable; here `end` is the last key group, so iteration has its own name.)
  struct KeyGroups {
    struct Iterator {
      int keyGroup;
      int operator*() const { return keyGroup; }
      Iterator& operator++() {
        ++keyGroup;
        return *this;
      }
      bool operator==(const Iterator&) const = default;
    };
    int from, to;  // [from, to)
    Iterator begin() const { return {from}; }
    Iterator end() const { return {to}; }
  };
  KeyGroups keyGroups() const { return {start, start + size()}; }
  bool operator==(const KeyGroupRange&) const = default;
};

// Flink's MathUtils.murmurHash: one murmur3_32 round over a 32-bit code, made non-negative.
// Inline: every keyed record pays it once or twice.
inline int32_t murmurHash(int32_t code) {
  uint32_t h = static_cast<uint32_t>(code);
  h *= 0xcc9e2d51u;
  h = std::rotl(h, 15);
  h *= 0x1b873593u;
  h = std::rotl(h, 13);
  h = h * 5 + 0xe6546b64u;
  h ^= 4u;  // length of the input in bytes
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  // Made non-negative as Flink does (−s, and 0 for INT32_MIN) without a branch: the
  // sign is a coin toss, and keyBy's partitioning mispredicted it every other record.
  const uint32_t sign = h >> 31 ? UINT32_MAX : 0;
  const auto magnitude = static_cast<int32_t>((h ^ sign) - sign);  // INT32_MIN stays INT32_MIN
  return magnitude & ~(magnitude >> 31);
}

// Key group of a key's 32-bit hash.
inline int assignToKeyGroup(int32_t keyHash, int maxParallelism) {
  return murmurHash(keyHash) % maxParallelism;
}

// Subtask that owns a key group.
inline int computeOperatorIndexForKeyGroup(int maxParallelism, int parallelism, int keyGroup) {
  return static_cast<int>(static_cast<int64_t>(keyGroup) * parallelism / maxParallelism);
}

// The subtask that owns a key hash's key group, for one maxParallelism and parallelism,
// without the two integer divisions of assignToKeyGroup and
// computeOperatorIndexForKeyGroup: the remainder by a multiply and a shift (Lemire's,
// exact for every 32-bit value), the subtask from a table of the key groups. keyBy's
// partitioning pays this per record; the divisions were half of its time.
class KeyGroupRouter {
 public:
  KeyGroupRouter(int maxParallelism, int parallelism)
      : divisor_(static_cast<uint32_t>(maxParallelism)), inverse_(UINT64_MAX / divisor_ + 1),
        owner_(static_cast<size_t>(maxParallelism)) {
    for (int g = 0; g < maxParallelism; ++g)
      owner_[static_cast<size_t>(g)] =
          static_cast<uint16_t>(computeOperatorIndexForKeyGroup(maxParallelism, parallelism, g));
  }
  // assignToKeyGroup(keyHash, maxParallelism).
  int keyGroup(int32_t keyHash) const {
    const auto h = static_cast<uint32_t>(murmurHash(keyHash));
    return static_cast<int>((static_cast<unsigned __int128>(inverse_ * h) * divisor_) >> 64);
  }
  // computeOperatorIndexForKeyGroup(maxParallelism, parallelism, keyGroup(keyHash)).
  int operatorIndex(int32_t keyHash) const { return owner_[static_cast<size_t>(keyGroup(keyHash))]; }

 private:
  uint32_t divisor_;
  uint64_t inverse_;            // 2^64 / divisor_, rounded up (0 for a divisor of 1)
  std::vector<uint16_t> owner_;  // by key group; parallelism is at most 2^15
};

// Key groups owned by one subtask: the inverse of computeOperatorIndexForKeyGroup.
KeyGroupRange computeKeyGroupRangeForOperatorIndex(int maxParallelism, int parallelism,
                                                   int operatorIndex);

// Hash of bytes, stable across builds and machines (XXH3, folded to 32 bits).
int32_t hashBytes(const void* data, size_t size);

// The 32-bit hash of a key, stable across processes. Specialize for your own key type,
// or declare it with WEIR_STRUCT: its fields are hashed in order.
template <class K, class = void>
struct KeyHash;

template <class K>
struct KeyHash<K, std::enable_if_t<std::is_integral_v<K>>> {
  int32_t operator()(K v) const {
    if constexpr (sizeof(K) <= 4) {
      return static_cast<int32_t>(v);
    } else {
      auto u = static_cast<uint64_t>(v);
      return static_cast<int32_t>(static_cast<uint32_t>(u ^ (u >> 32)));
    }
  }
};

template <class K>
struct KeyHash<K, std::enable_if_t<std::is_floating_point_v<K>>> {
  int32_t operator()(K v) const {
    if (v == 0) v = 0;  // -0.0 and 0.0 are the same key
    if constexpr (sizeof(K) == 4) {
      return std::bit_cast<int32_t>(v);
    } else {
      auto u = std::bit_cast<uint64_t>(v);
      return static_cast<int32_t>(static_cast<uint32_t>(u ^ (u >> 32)));
    }
  }
};

template <>
struct KeyHash<std::string> {
  int32_t operator()(const std::string& s) const { return hashBytes(s.data(), s.size()); }
};

namespace detail {
inline int32_t combineHash(int32_t seed, int32_t h) {
  return static_cast<int32_t>(31u * static_cast<uint32_t>(seed) + static_cast<uint32_t>(h));
}
}  // namespace detail

template <class A, class B>
struct KeyHash<std::pair<A, B>> {
  int32_t operator()(const std::pair<A, B>& p) const {
    return detail::combineHash(KeyHash<A>{}(p.first), KeyHash<B>{}(p.second));
  }
};

template <class... Ts>
struct KeyHash<std::tuple<Ts...>> {
  int32_t operator()(const std::tuple<Ts...>& t) const {
    int32_t h = 1;
    std::apply([&](const auto&... v) { ((h = detail::combineHash(h, KeyHash<std::decay_t<decltype(v)>>{}(v))), ...); }, t);
    return h;
  }
};

template <class T>
struct KeyHash<std::vector<T>> {
  int32_t operator()(const std::vector<T>& v) const {
    int32_t h = 1;
    for (const auto& e : v) h = detail::combineHash(h, KeyHash<T>{}(e));
    return h;
  }
};

template <class T>
struct KeyHash<std::optional<T>> {
  int32_t operator()(const std::optional<T>& v) const { return v ? KeyHash<T>{}(*v) : 0; }
};

template <class S>
struct KeyHash<S, std::enable_if_t<detail::WeirStruct<S>>> {
  int32_t operator()(const S& s) const {
    int32_t h = 1;
    detail::forEachField(s, [&](auto, const auto& v) {
      h = detail::combineHash(h, KeyHash<std::decay_t<decltype(v)>>{}(v));
    });
    return h;
  }
};

// A key type weir can partition by: it has a KeyHash and can be compared for equality.
template <class K>
concept HashableKey = requires(const K& k) {
  { KeyHash<K>{}(k) } -> std::convertible_to<int32_t>;
  { k == k } -> std::convertible_to<bool>;
};

// The hash of the hash maps inside operators (never of key groups: it may differ between
// processes). Numbers and strings take Abseil's hash, a multiply and a fold for a
// number, which costs a third of murmur's rounds over KeyHash; other keys murmur.
template <class K>
struct KeyHasher {
  size_t operator()(const K& k) const noexcept {
    if constexpr (std::is_arithmetic_v<K> || std::is_same_v<K, std::string>) return absl::Hash<K>{}(k);
    else return static_cast<uint32_t>(murmurHash(KeyHash<K>{}(k)));
  }
};

}  // namespace weir
