// How a RedisStreamSource turns a stream entry into records of the job: a schema that
// sees the whole entry, valueOnly(field, ...) over a DeserializationSchema of one
// field's bytes, or of(function) over a function of the entry.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/error.h"
#include "weir/functions.h"
#include "weir/serialization_schema.h"

namespace weir {

// One entry of a Redis stream as the source read it (XREAD's reply).
struct RedisStreamEntry {
  std::string stream;  // the stream's key
  std::string id;      // "<ms>-<seq>"
  std::vector<std::pair<std::string, std::string>> fields;  // in the order XADD gave them

  // The value of the first field named `name`, or null when there is none.
  const std::string* field(std::string_view name) const {
    for (const auto& [key, value] : fields)
      if (key == name) return &value;
    return nullptr;
  }
};

template <class T>
class RedisStreamDeserializationSchema {
 public:
  using ProducedType = T;
  virtual ~RedisStreamDeserializationSchema() = default;
  // Emits what `entry` holds (none, one or more records). An entry that cannot be read
  // throws weir::SerializationError with the reason: the source's bad-record policy
  // decides what happens to it. Each subtask uses its own copy.
  virtual void deserialize(const RedisStreamEntry& entry, Collector<T>& out) = 0;

  // The value of field `field` through `schema` (a DeserializationSchema<T>); an entry
  // without that field is a bad record.
  template <class Schema>
  static auto valueOnly(std::string field, Schema schema);

  // `f(entry)` returning a T, or `f(entry, out)` emitting any number of records. What
  // `f` throws (a std::exception but a weir::Error other than SerializationError) makes
  // the entry a bad record with the exception's message as the reason.
  template <class F>
  static auto of(F f);
};

namespace detail {

template <class T, class Schema>
class RedisValueOnlyDeserializationSchema final : public RedisStreamDeserializationSchema<T> {
 public:
  RedisValueOnlyDeserializationSchema(std::string field, Schema schema)
      : field_(std::move(field)), schema_(std::move(schema)) {}
  void deserialize(const RedisStreamEntry& entry, Collector<T>& out) override {
    const std::string* value = entry.field(field_);
    if (value == nullptr) throw SerializationError("the entry has no field '" + field_ + "'");
    T record{};
    schema_.deserialize(*value, record);
    out.collect(std::move(record));
  }

 private:
  std::string field_;
  Schema schema_;
};

template <class T, class F>
class RedisFunctionDeserializationSchema final : public RedisStreamDeserializationSchema<T> {
 public:
  explicit RedisFunctionDeserializationSchema(F f) : f_(std::move(f)) {}
  void deserialize(const RedisStreamEntry& entry, Collector<T>& out) override {
    try {
      if constexpr (std::is_invocable_v<F&, const RedisStreamEntry&, Collector<T>&>) f_(entry, out);
      else out.collect(f_(entry));
    } catch (const SerializationError&) {
      throw;
    } catch (const Error&) {
      throw;  // weir's own failures (a cancelled job, a state error) are not bad records
    } catch (const std::exception& e) {
      throw SerializationError(e.what());
    }
  }

 private:
  F f_;
};

}  // namespace detail

template <class T>
template <class Schema>
auto RedisStreamDeserializationSchema<T>::valueOnly(std::string field, Schema schema) {
  static_assert(std::is_base_of_v<DeserializationSchema<T>, Schema>,
                "valueOnly(field, schema): schema must derive from DeserializationSchema<T>");
  return detail::RedisValueOnlyDeserializationSchema<T, Schema>(std::move(field), std::move(schema));
}

template <class T>
template <class F>
auto RedisStreamDeserializationSchema<T>::of(F f) {
  static_assert(std::is_invocable_v<F&, const RedisStreamEntry&, Collector<T>&> ||
                    std::is_invocable_r_v<T, F&, const RedisStreamEntry&>,
                "of(f): f must be T(const RedisStreamEntry&) or void(const RedisStreamEntry&, Collector<T>&)");
  return detail::RedisFunctionDeserializationSchema<T, F>(std::move(f));
}

}  // namespace weir
