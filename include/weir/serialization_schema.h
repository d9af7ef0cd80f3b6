// How a connector turns records into messages and back (Flink's SerializationSchema and
// DeserializationSchema), and SimpleStringSchema, which takes a message as its text.
#pragma once

#include <string>
#include <string_view>

namespace weir {

// Turns a record into the bytes of one message (a Kafka value, a line without its end).
// Each subtask uses its own copy, so a schema may keep buffers.
template <class T>
class SerializationSchema {
 public:
  virtual ~SerializationSchema() = default;
  virtual std::string serialize(const T& element) = 0;
};

// Turns the bytes of one message back into a record. Each subtask uses its own copy.
template <class T>
class DeserializationSchema {
 public:
  using ProducedType = T;
  virtual ~DeserializationSchema() = default;
  // Decodes `message` into `out`. A message that is not a valid T throws
  // weir::SerializationError with the reason (the source adds where it was): the
  // source's bad-record policy (bad_record.h) decides what happens to it.
  virtual void deserialize(std::string_view message, T& out) = 0;
};

// The message is the string, byte for byte (Flink's SimpleStringSchema, UTF-8 or not).
class SimpleStringSchema final : public SerializationSchema<std::string>, public DeserializationSchema<std::string> {
 public:
  std::string serialize(const std::string& element) override { return element; }
  void deserialize(std::string_view message, std::string& out) override { out.assign(message); }
};

}  // namespace weir
