// The bytes a batch of records takes outside a channel: the in-flight records an
// unaligned checkpoint persists, and the frames of a batch job's blocking exchanges.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "weir/serializer.h"

namespace weir::detail {

// Appends `records` (with one timestamp each, or none) to `out`: a varint record count,
// a byte saying whether timestamps follow, then per record its timestamp (8 bytes, when
// stamped) and its serialized value.
template <Serializable T>
void writeRecords(const std::vector<T>& records, const std::vector<int64_t>& timestamps, DataOutput& out) {
  out.writeVarint(records.size());
  out.write(!timestamps.empty());
  for (size_t i = 0; i < records.size(); ++i) {
    if (!timestamps.empty()) out.write(timestamps[i]);
    Serializer<T>::serialize(records[i], out);
  }
}

// Reads one batch that writeRecords wrote into `records` and `timestamps` (cleared
// first), keeping only the records for which keep(&record) holds when `keep` is given.
// Throws SerializationError for bytes that are not such a batch.
template <Serializable T>
void readRecords(DataInput& in, std::vector<T>& records, std::vector<int64_t>& timestamps,
                 const std::function<bool(const void*)>& keep = {}) {
  records.clear();
  timestamps.clear();
  const size_t count = in.readLength("records in a batch", minEncodedSize<T>());
  const bool stamped = in.read<bool>();
  records.reserve(count);
  if (stamped) timestamps.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const int64_t timestamp = stamped ? in.read<int64_t>() : 0;
    T record = Serializer<T>::deserialize(in);
    if (keep && !keep(&record)) continue;
    if (stamped) timestamps.push_back(timestamp);
    records.push_back(std::move(record));
  }
}

}  // namespace weir::detail
