// How a KafkaSink turns a record of the job into a Kafka record (Flink's
// KafkaRecordSerializationSchema): a schema of one's own that fills in everything, or
// one built from a topic (or a topic per record), value and key SerializationSchemas and
// headers:
//
//   auto schema = KafkaRecordSerializationSchema<Count>::builder()
//                     .setTopic("counts")
//                     .setKeySerializationSchema(WordOf())
//                     .setValueSerializationSchema(JsonSerializationSchema<Count>())
//                     .build();
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/error.h"
#include "weir/serialization_schema.h"

namespace weir {

// One record for Kafka (Flink's ProducerRecord).
struct ProducerRecord {
  static constexpr int32_t kAnyPartition = -1;
  std::string topic;
  // kAnyPartition: the producer's partitioner decides: by the key's murmur2 hash, as the
  // Java client does (a keyless record goes to any partition).
  int32_t partition = kAnyPartition;
  std::optional<std::string> key;    // none: a null key
  std::optional<std::string> value;  // none: a tombstone
  int64_t timestamp = 0;             // ms since the epoch; 0: when it is produced
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

// Where the record goes to.
struct KafkaSinkContext {
  int subtaskIndex = 0;  // of the sink's parallel instance writing the record
  int parallelism = 1;
};

template <class T>
class KafkaRecordSerializationSchema {
 public:
  virtual ~KafkaRecordSerializationSchema() = default;
  // The Kafka record for `element`. Throwing fails the job, naming the sink. Each
  // subtask uses its own copy, so a schema may keep buffers.
  virtual ProducerRecord serialize(const T& element, const KafkaSinkContext& context) = 0;

  class Builder;
  static Builder builder();
};

namespace detail {

// What KafkaRecordSerializationSchema<T>::Builder builds.
template <class T>
class BuiltKafkaRecordSerializationSchema final : public KafkaRecordSerializationSchema<T> {
 public:
  std::function<std::string(const T&)> topic;
  std::function<std::string(const T&)> value;
  std::function<std::string(const T&)> key;  // null: no key
  std::function<std::vector<std::pair<std::string, std::optional<std::string>>>(const T&)> headers;

  ProducerRecord serialize(const T& element, const KafkaSinkContext&) override {
    ProducerRecord record;
    record.topic = topic(element);
    record.value = value(element);
    if (key) record.key = key(element);
    if (headers) record.headers = headers(element);
    return record;
  }
};

// A copy of `schema` behind a function, as the builder keeps each part (the function is
// called by one subtask at a time: each sink subtask has its own copy of the builder's
// product).
template <class T, class Schema>
std::function<std::string(const T&)> serializeWith(Schema schema) {
  static_assert(std::is_base_of_v<SerializationSchema<T>, Schema>, "a SerializationSchema<T> is needed here");
  return [schema = std::move(schema)](const T& element) mutable { return schema.serialize(element); };
}

}  // namespace detail

template <class T>
class KafkaRecordSerializationSchema<T>::Builder {
 public:
  // Every record goes to `topic`.
  Builder& setTopic(std::string topic) {
    built_.topic = [topic = std::move(topic)](const T&) { return topic; };
    return *this;
  }
  // Each record goes to the topic `selector` names for it (Flink's TopicSelector).
  Builder& setTopicSelector(std::function<std::string(const T&)> selector) {
    built_.topic = std::move(selector);
    return *this;
  }
  // The record's value, from a SerializationSchema<T>. Required.
  template <class Schema>
  Builder& setValueSerializationSchema(Schema schema) {
    built_.value = detail::serializeWith<T>(std::move(schema));
    return *this;
  }
  // The record's key, from a SerializationSchema<T>; without one the key is null.
  template <class Schema>
  Builder& setKeySerializationSchema(Schema schema) {
    built_.key = detail::serializeWith<T>(std::move(schema));
    return *this;
  }
  // Headers for each record (Flink's HeaderProvider).
  Builder& setHeaderProvider(
      std::function<std::vector<std::pair<std::string, std::optional<std::string>>>(const T&)> provider) {
    built_.headers = std::move(provider);
    return *this;
  }
  // Throws weir::Error (kInvalidArgument) when the topic or the value schema is missing.
  detail::BuiltKafkaRecordSerializationSchema<T> build() const {
    if (!built_.topic)
      throw Error(ErrorCode::kInvalidArgument, "kafka record serialization schema: setTopic(...) or setTopicSelector(...) is required");
    if (!built_.value)
      throw Error(ErrorCode::kInvalidArgument, "kafka record serialization schema: setValueSerializationSchema(...) is required");
    return built_;
  }

 private:
  detail::BuiltKafkaRecordSerializationSchema<T> built_;
};

template <class T>
typename KafkaRecordSerializationSchema<T>::Builder KafkaRecordSerializationSchema<T>::builder() {
  return Builder();
}

}  // namespace weir
