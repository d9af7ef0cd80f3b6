// How a KafkaSource turns a Kafka record into records of the job (Flink's
// KafkaRecordDeserializationSchema): a schema that sees the whole record, or
// valueOnly(...) over a DeserializationSchema of the value's bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/error.h"
#include "weir/functions.h"
#include "weir/serialization_schema.h"

namespace weir {

// One Kafka record as the source read it (Flink's ConsumerRecord). Its views are valid
// only during the call that receives it.
struct ConsumerRecord {
  std::string_view topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = 0;  // ms since the epoch: the producer's (CreateTime) or the broker's (LogAppendTime)
  std::optional<std::string_view> key;    // none: a null key
  std::optional<std::string_view> value;  // none: a tombstone
  std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
};

template <class T>
class KafkaRecordDeserializationSchema {
 public:
  using ProducedType = T;
  virtual ~KafkaRecordDeserializationSchema() = default;
  // Emits what `record` holds (none, one or more records). A record that cannot be
  // read throws weir::SerializationError with the reason: the source's bad-record
  // policy decides what happens to it. Each subtask uses its own copy.
  virtual void deserialize(const ConsumerRecord& record, Collector<T>& out) = 0;

  // The record's value through `schema` (a DeserializationSchema<T>); a tombstone (no
  // value) is a bad record.
  template <class Schema>
  static auto valueOnly(Schema schema);
};

namespace detail {

template <class T, class Schema>
class ValueOnlyDeserializationSchema final : public KafkaRecordDeserializationSchema<T> {
 public:
  explicit ValueOnlyDeserializationSchema(Schema schema) : schema_(std::move(schema)) {}
  void deserialize(const ConsumerRecord& record, Collector<T>& out) override {
    if (!record.value) throw SerializationError("the record has no value (a tombstone)");
    T value{};
    schema_.deserialize(*record.value, value);
    out.collect(std::move(value));
  }

 private:
  Schema schema_;
};

}  // namespace detail

template <class T>
template <class Schema>
auto KafkaRecordDeserializationSchema<T>::valueOnly(Schema schema) {
  static_assert(std::is_base_of_v<DeserializationSchema<T>, Schema>,
                "valueOnly(schema): schema must derive from DeserializationSchema<T>");
  return detail::ValueOnlyDeserializationSchema<T, Schema>(std::move(schema));
}

}  // namespace weir
