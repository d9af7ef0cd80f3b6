#include "weir/csv_format.h"

#include <algorithm>
#include <set>

namespace weir {

namespace {

Error invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, "CSV format: " + message); }

std::string printable(char c) {
  if (c == '\t') return "'\\t'";
  return std::string("'") + c + "'";
}

}  // namespace

CsvSchema& CsvSchema::withColumnSeparator(char separator) {
  if (separator == '\n' || separator == '\r' || separator == quote_)
    throw invalid("the column separator cannot be a line end or the quote char " + printable(quote_));
  separator_ = separator;
  return *this;
}

CsvSchema& CsvSchema::withQuoteChar(char quote) {
  if (quote == '\n' || quote == '\r' || quote == separator_)
    throw invalid("the quote char cannot be a line end or the column separator " + printable(separator_));
  quote_ = quote;
  return *this;
}

namespace detail::csv {

size_t split(std::string_view record, const CsvSchema& schema, std::vector<std::string>& fields) {
  const char sep = schema.separator(), quote = schema.quote();
  size_t n = 0, i = 0;
  const size_t len = record.size();
  while (true) {
    if (fields.size() <= n) fields.emplace_back();
    std::string& field = fields[n++];
    field.clear();
    if (i < len && record[i] == quote) {
      ++i;
      while (true) {
        size_t q = record.find(quote, i);
        if (q == std::string_view::npos)
          throw SerializationError("CSV column " + std::to_string(n) + ": a quoted field is not closed");
        field.append(record, i, q - i);
        if (q + 1 < len && record[q + 1] == quote) {
          field += quote;
          i = q + 2;
          continue;
        }
        i = q + 1;
        break;
      }
      if (i == len) return n;
      if (record[i] != sep)
        throw SerializationError("CSV column " + std::to_string(n) + ": '" + std::string(1, record[i]) +
                                 "' after the closing quote (a quote inside a field is doubled)");
      ++i;
      continue;
    }
    size_t end = record.find(sep, i);
    std::string_view raw = record.substr(i, end == std::string_view::npos ? len - i : end - i);
    if (raw.find(quote) != std::string_view::npos)
      throw SerializationError("CSV column " + std::to_string(n) + ": a quote inside an unquoted field");
    field.assign(raw);
    if (end == std::string_view::npos) return n;
    i = end + 1;
  }
}

void appendField(std::string_view field, const CsvSchema& schema, std::string& out) {
  const char quote = schema.quote();
  const char special[] = {schema.separator(), quote, '\n', '\r', '\0'};
  if (field.find_first_of(std::string_view(special, 4)) == std::string_view::npos) {
    out += field;
    return;
  }
  out += quote;
  for (char c : field) {
    if (c == quote) out += quote;
    out += c;
  }
  out += quote;
}

void badColumn(size_t column, std::string_view name, std::string_view text, const char* expected) {
  constexpr size_t kShown = 64;
  std::string shown;
  for (char c : text.substr(0, kShown)) shown += c == '\n' ? "\\n" : c == '\r' ? "\\r" : std::string(1, c);
  if (text.size() > kShown) shown += "...";
  throw SerializationError("CSV column " + std::to_string(column + 1) + " ('" + std::string(name) + "'): '" + shown +
                           "' is not " + expected);
}

std::vector<size_t> columnsFromHeader(const std::vector<std::string>& header, size_t columns,
                                      const std::vector<std::pair<std::string, bool>>& fields, const CsvSchema& schema) {
  std::vector<size_t> columnOf(fields.size(), kNoColumn);
  std::vector<std::string> unknown, missing;
  std::set<std::string> seen;
  for (size_t c = 0; c < columns; ++c) {
    if (!seen.insert(header[c]).second) throw invalid("the header names column '" + header[c] + "' twice");
    auto it = std::find_if(fields.begin(), fields.end(), [&](const auto& f) { return f.first == header[c]; });
    if (it == fields.end()) unknown.push_back(header[c]);
    else columnOf[static_cast<size_t>(it - fields.begin())] = c;
  }
  for (size_t f = 0; f < fields.size(); ++f)
    if (columnOf[f] == kNoColumn && !fields[f].second) missing.push_back(fields[f].first);
  auto list = [](const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
    return out;
  };
  if (!missing.empty())
    throw invalid("the header has no column for field " + list(missing) + " of the struct");
  if (!unknown.empty() && !schema.ignoreUnknownColumns())
    throw invalid("the header has column " + list(unknown) +
                  " that no field of the struct has (CsvSchema::withIgnoreUnknownColumns accepts them)");
  return columnOf;
}

}  // namespace detail::csv

}  // namespace weir
