// How a file source cuts a file into records and decodes each (Flink's StreamFormat):
// TextLineInputFormat for lines of text, LineInputFormat for lines decoded by a
// DeserializationSchema. JSON Lines and CSV are in json_format.h and csv_format.h.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "weir/serialization_schema.h"

namespace weir {

template <class T>
class StreamFormat {
 public:
  using ProducedType = T;

  // Decodes the records of one file, in order; each file gets a new one (a CSV header
  // belongs to its file).
  class Decoder {
   public:
    virtual ~Decoder() = default;
    // Decodes one record (its bytes, without the line end) into `out`. Returns false for
    // a record that is no data (a header, a blank line). Throws weir::SerializationError
    // with the reason for a malformed record (the source's bad-record policy applies), or
    // another weir::Error for a file it cannot read at all (a header that does not match).
    virtual bool decode(std::string_view record, T& out) = 0;
  };

  virtual ~StreamFormat() = default;
  virtual std::unique_ptr<Decoder> createDecoder() const = 0;
  // A record is a line ('\n' or "\r\n" ends it). When this is a character (CSV's '"'), a
  // line end within a quoted field is part of the record instead: a field is quoted when
  // it starts with the quote (at the record's start or after fieldSeparator()), and a
  // doubled quote inside it is a quote. 0: none.
  virtual char quoteChar() const { return 0; }
  virtual char fieldSeparator() const { return 0; }
  // Whether each file starts with a header its decoder must see first, also when a
  // restored reader goes on from the middle of the file.
  virtual bool hasHeader() const { return false; }
};

// Each line as a string, empty lines included (Flink's TextLineInputFormat).
class TextLineInputFormat final : public StreamFormat<std::string> {
 public:
  std::unique_ptr<Decoder> createDecoder() const override { return std::make_unique<LineDecoder>(); }

 private:
  struct LineDecoder final : Decoder {
    bool decode(std::string_view record, std::string& out) override {
      out.assign(record);
      return true;
    }
  };
};

// Each line decoded by a copy of `Schema`, a DeserializationSchema (a format of one
// message per line); empty lines are skipped.
template <class Schema>
class LineInputFormat final : public StreamFormat<typename Schema::ProducedType> {
 public:
  using T = typename Schema::ProducedType;
  using Decoder = typename StreamFormat<T>::Decoder;
  explicit LineInputFormat(Schema schema = Schema()) : schema_(std::move(schema)) {}
  std::unique_ptr<Decoder> createDecoder() const override { return std::make_unique<SchemaDecoder>(schema_); }

 private:
  struct SchemaDecoder final : Decoder {
    explicit SchemaDecoder(Schema s) : schema(std::move(s)) {}
    bool decode(std::string_view record, T& out) override {
      if (record.find_first_not_of(" \t\r") == std::string_view::npos) return false;
      schema.deserialize(record, out);
      return true;
    }
    Schema schema;
  };
  Schema schema_;
};

}  // namespace weir
