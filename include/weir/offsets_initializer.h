// Where a KafkaSource starts reading each partition, and where a bounded one stops
// (Flink's OffsetsInitializer): each partition's offset is decided once, when its split
// is first read, and from then on the checkpoint holds it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace weir {

// Where a partition without a committed offset starts (committedOffsets).
enum class OffsetResetStrategy { EARLIEST, LATEST, NONE };

class OffsetsInitializer {
 public:
  enum class Kind { kEarliest, kLatest, kTimestamp, kCommitted, kOffsets };
  using PartitionOffsets = std::map<std::pair<std::string, int32_t>, int64_t>;  // (topic, partition) → offset

  // The first record each partition holds now.
  static OffsetsInitializer earliest() { return OffsetsInitializer(Kind::kEarliest); }
  // The end of each partition now: only records produced after it.
  static OffsetsInitializer latest() { return OffsetsInitializer(Kind::kLatest); }
  // The first record whose timestamp is at or after `millis` (the end when none is).
  static OffsetsInitializer timestamp(int64_t millis) {
    OffsetsInitializer o(Kind::kTimestamp);
    o.timestamp_ = millis;
    return o;
  }
  // The consumer group's committed offsets (setGroupId); a partition without one
  // starts as `reset` says, and NONE makes that an error.
  static OffsetsInitializer committedOffsets(OffsetResetStrategy reset = OffsetResetStrategy::NONE) {
    OffsetsInitializer o(Kind::kCommitted);
    o.reset_ = reset;
    return o;
  }
  // Given offsets; a partition not listed starts as `reset` says (NONE: an error).
  static OffsetsInitializer offsets(PartitionOffsets offsets, OffsetResetStrategy reset = OffsetResetStrategy::EARLIEST) {
    OffsetsInitializer o(Kind::kOffsets);
    o.offsets_ = std::move(offsets);
    o.reset_ = reset;
    return o;
  }

  Kind kind() const { return kind_; }
  int64_t timestampMillis() const { return timestamp_; }
  OffsetResetStrategy resetStrategy() const { return reset_; }
  const PartitionOffsets& partitionOffsets() const { return offsets_; }

 private:
  explicit OffsetsInitializer(Kind kind) : kind_(kind) {}
  Kind kind_;
  int64_t timestamp_ = 0;
  OffsetResetStrategy reset_ = OffsetResetStrategy::NONE;
  PartitionOffsets offsets_;
};

}  // namespace weir
