// CSV for records (RFC 4180): CsvSchema, the options; CsvSerializationSchema and
// CsvDeserializationSchema between a WEIR_STRUCT and one CSV record; CsvReaderFormat, a
// file of CSV records for FileSource, with or without a header.
//
// A record's fields are the struct's fields: by position (in declaration order), or,
// with a header, by name. A field may be quoted ("a, b"), a quote inside one is doubled
// (""), and a quoted field may hold separators and line ends. A column converts to
// std::string as it is, to numbers and bool ("true" / "false") exactly (the whole text,
// nothing more), and to std::optional as empty -> nullopt. Blank lines are skipped.
#pragma once

#include <charconv>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "weir/error.h"
#include "weir/serialization_schema.h"
#include "weir/serializer.h"
#include "weir/stream_format.h"

namespace weir {

// The options of a CSV format (named after Jackson's CsvSchema, which Flink uses).
class CsvSchema {
 public:
  // Each file's first record names the columns; they are matched to the struct's fields
  // by name, in any order. A header without a column for a field that is not optional,
  // or with a column no field has, fails the job naming the file and the columns.
  // Default: no header, columns by position.
  CsvSchema& withHeader() {
    header_ = true;
    return *this;
  }
  // Accept and drop header columns no field has. Default: they are an error.
  CsvSchema& withIgnoreUnknownColumns() {
    ignoreUnknown_ = true;
    return *this;
  }
  // Default ','. Throws weir::Error (kInvalidArgument) for '\n', '\r' or the quote char.
  CsvSchema& withColumnSeparator(char separator);
  // Default '"'. Throws weir::Error (kInvalidArgument) for '\n', '\r' or the separator.
  CsvSchema& withQuoteChar(char quote);

  bool header() const { return header_; }
  bool ignoreUnknownColumns() const { return ignoreUnknown_; }
  char separator() const { return separator_; }
  char quote() const { return quote_; }

 private:
  bool header_ = false;
  bool ignoreUnknown_ = false;
  char separator_ = ',';
  char quote_ = '"';
};

namespace detail::csv {

// Splits one record into its fields, unquoted, into fields[0..n) (reusing the strings
// there) and returns n. Throws SerializationError for an unterminated quoted field or
// a quote in the middle of an unquoted one.
size_t split(std::string_view record, const CsvSchema& schema, std::vector<std::string>& fields);
// Appends `field`, quoted when it holds the separator, the quote or a line end.
void appendField(std::string_view field, const CsvSchema& schema, std::string& out);
[[noreturn]] void badColumn(size_t column, std::string_view name, std::string_view text, const char* expected);

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

// A column's text as a field; throws SerializationError naming the column.
template <class T>
void convert(std::string_view text, T& out, size_t column, std::string_view name) {
  if constexpr (IsOptional<T>::value) {
    if (text.empty()) {
      out.reset();
    } else {
      convert(text, out.emplace(), column, name);
    }
  } else if constexpr (std::is_same_v<T, std::string>) {
    out.assign(text);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true") out = true;
    else if (text == "false") out = false;
    else badColumn(column, name, text, "true or false");
  } else if constexpr (std::is_arithmetic_v<T>) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
      badColumn(column, name, text, std::is_integral_v<T> ? "an integer that fits" : "a number");
  } else {
    static_assert(sizeof(T) == 0, "weir CSV: a field must be a string, number, bool or optional of one");
  }
}

template <class T>
void format(const T& value, const CsvSchema& schema, std::string& out) {
  if constexpr (IsOptional<T>::value) {
    if (value) format(*value, schema, out);
  } else if constexpr (std::is_same_v<T, std::string>) {
    appendField(value, schema, out);
  } else if constexpr (std::is_same_v<T, bool>) {
    out += value ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    char digits[32];
    out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
  } else {
    static_assert(sizeof(T) == 0, "weir CSV: a field must be a string, number, bool or optional of one");
  }
}

// The fields of T, in order, their names and whether each may be missing.
template <WeirStruct T>
std::vector<std::pair<std::string, bool>> fieldsOf() {
  std::vector<std::pair<std::string, bool>> out;
  T probe{};
  forEachField(probe, [&](std::string_view name, const auto& field) {
    out.emplace_back(std::string(name), IsOptional<std::remove_cvref_t<decltype(field)>>::value);
  });
  return out;
}

// For each field of a struct, its column in a record, from a header (or by position).
// Throws weir::Error (kInvalidArgument) for a header that does not fit the struct.
std::vector<size_t> columnsFromHeader(const std::vector<std::string>& header, size_t columns,
                                      const std::vector<std::pair<std::string, bool>>& fields, const CsvSchema& schema);
inline constexpr size_t kNoColumn = static_cast<size_t>(-1);

// Decodes records of T: by position, or by the columns a header named.
template <WeirStruct T>
class RecordDecoder {
 public:
  explicit RecordDecoder(CsvSchema schema) : schema_(schema), fields_(fieldsOf<T>()) {
    for (size_t i = 0; i < fields_.size(); ++i) columnOf_.push_back(i);
    columns_ = fields_.size();
  }
  // The header record: which column holds which field.
  void readHeader(std::string_view record) {
    if (record.starts_with("\xEF\xBB\xBF")) record.remove_prefix(3);  // a UTF-8 byte order mark
    size_t n = split(record, schema_, scratch_);
    columnOf_ = columnsFromHeader(scratch_, n, fields_, schema_);
    columns_ = n;
  }
  void decode(std::string_view record, T& out) {
    size_t n = split(record, schema_, scratch_);
    if (n != columns_)
      throw SerializationError("CSV record has " + std::to_string(n) + " columns, expected " + std::to_string(columns_));
    size_t i = 0;
    forEachField(out, [&](std::string_view name, auto& field) {
      size_t column = columnOf_[i++];
      if (column == kNoColumn) {  // an optional field the header has no column for
        if constexpr (IsOptional<std::remove_cvref_t<decltype(field)>>::value) field.reset();
        return;
      }
      convert(scratch_[column], field, column, name);
    });
  }

 private:
  CsvSchema schema_;
  std::vector<std::pair<std::string, bool>> fields_;
  std::vector<size_t> columnOf_;
  size_t columns_ = 0;
  std::vector<std::string> scratch_;
};

}  // namespace detail::csv

// A struct as one CSV record, its fields in declaration order, without a line end.
template <detail::WeirStruct T>
class CsvSerializationSchema final : public SerializationSchema<T> {
 public:
  explicit CsvSerializationSchema(CsvSchema schema = CsvSchema()) : schema_(schema) {}
  std::string serialize(const T& element) override {
    std::string out;
    bool first = true;
    detail::forEachField(element, [&](std::string_view, const auto& field) {
      if (!first) out += schema_.separator();
      first = false;
      detail::csv::format(field, schema_, out);
    });
    return out;
  }
  // The header line of T: its field names, in order.
  std::string header() const {
    std::string out;
    for (const auto& [name, optional] : detail::csv::fieldsOf<T>()) {
      if (!out.empty()) out += schema_.separator();
      detail::csv::appendField(name, schema_, out);
    }
    return out;
  }

 private:
  CsvSchema schema_;
};

// One CSV record as a struct, its columns by position (a message has no header).
template <detail::WeirStruct T>
class CsvDeserializationSchema final : public DeserializationSchema<T> {
 public:
  explicit CsvDeserializationSchema(CsvSchema schema = CsvSchema()) : decoder_(schema) {}
  void deserialize(std::string_view message, T& out) override { decoder_.decode(message, out); }

 private:
  detail::csv::RecordDecoder<T> decoder_;
};

// A file of CSV records for FileSource (Flink's CsvReaderFormat):
//   FileSource<Trade>::forRecordStreamFormat(CsvReaderFormat<Trade>::forStruct(CsvSchema().withHeader()), path)
template <detail::WeirStruct T>
class CsvReaderFormat final : public StreamFormat<T> {
 public:
  using Decoder = typename StreamFormat<T>::Decoder;
  static CsvReaderFormat forStruct(CsvSchema schema = CsvSchema()) { return CsvReaderFormat(schema); }

  std::unique_ptr<Decoder> createDecoder() const override { return std::make_unique<FileDecoder>(schema_); }
  char quoteChar() const override { return schema_.quote(); }
  char fieldSeparator() const override { return schema_.separator(); }
  bool hasHeader() const override { return schema_.header(); }

 private:
  explicit CsvReaderFormat(CsvSchema schema) : schema_(schema) {}

  struct FileDecoder final : Decoder {
    explicit FileDecoder(CsvSchema s) : schema(s), records(s), awaitingHeader(s.header()) {}
    bool decode(std::string_view record, T& out) override {
      if (record.find_first_not_of(" \t\r") == std::string_view::npos) return false;
      if (awaitingHeader) {
        // A file whose header cannot be read cannot be read at all, whatever the policy.
        try {
          records.readHeader(record);
        } catch (const SerializationError& e) {
          throw Error(ErrorCode::kInvalidArgument, std::string("CSV format: the header is not a CSV record: ") + e.what());
        }
        awaitingHeader = false;
        return false;
      }
      records.decode(record, out);
      return true;
    }
    CsvSchema schema;
    detail::csv::RecordDecoder<T> records;
    bool awaitingHeader;
  };
  CsvSchema schema_;
};

}  // namespace weir
