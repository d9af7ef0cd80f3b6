// The parameters of one execution of a SQL statement, as a JdbcStatementBuilder sets
// them from a record (Flink's JDBC PreparedStatement): 1-based, one setter per type.
// Values travel to the server as text and the server converts them to the columns'
// types, so setString(1, "42") fills an integer column as setInt(1, 42) does.
#pragma once

#include <charconv>
#include <cstdint>
#include <ctime>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "weir/error.h"

namespace weir {

class PreparedStatement {
 public:
  // A statement with `parameterCount` parameters ($1 … $n, or ? … ?).
  explicit PreparedStatement(int parameterCount = 0) { reset(parameterCount); }

  void setString(int index, std::string_view value) { slot(index).assign(value); }
  void setInt(int index, int32_t value) { setNumber(index, value); }
  void setLong(int index, int64_t value) { setNumber(index, value); }
  void setShort(int index, int16_t value) { setNumber(index, value); }
  void setDouble(int index, double value) { setNumber(index, value); }
  void setFloat(int index, float value) { setNumber(index, value); }
  void setBoolean(int index, bool value) { slot(index).assign(value ? "t" : "f"); }
  // A point in time, as milliseconds since the epoch, for a timestamp or timestamptz
  // column (sent as UTC: "2026-12-06 02:34:37.125+00").
  void setTimestamp(int index, int64_t epochMillis) {
    std::time_t seconds = static_cast<std::time_t>(epochMillis / 1000 - (epochMillis % 1000 < 0 ? 1 : 0));
    const int millis = static_cast<int>(epochMillis - static_cast<int64_t>(seconds) * 1000);
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char text[48];
    const size_t n = std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
    std::string& s = slot(index);
    s.assign(text, n);
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%03d+00", millis);
    s += fraction;
  }
  // SQL NULL.
  void setNull(int index) {
    slot(index).clear();
    state_[static_cast<size_t>(index - 1)] = kNull;
  }

  int parameterCount() const { return static_cast<int>(values_.size()); }
  // Parameter `index` (1-based): its text, or null for SQL NULL.
  const std::string* value(int index) const {
    const size_t i = static_cast<size_t>(index - 1);
    return state_[i] == kSet ? &values_[i] : nullptr;
  }
  // The first parameter not set since reset(), or 0 when every one is.
  int firstUnset() const {
    for (size_t i = 0; i < state_.size(); ++i)
      if (state_[i] == kUnset) return static_cast<int>(i) + 1;
    return 0;
  }
  // Every parameter unset again (keeps the strings' memory).
  void reset(int parameterCount) {
    values_.resize(static_cast<size_t>(parameterCount));
    state_.assign(static_cast<size_t>(parameterCount), kUnset);
  }

 private:
  static constexpr char kUnset = 0, kSet = 1, kNull = 2;

  std::string& slot(int index) {
    if (index < 1 || index > parameterCount())
      throw Error(ErrorCode::kInvalidArgument, "parameter index " + std::to_string(index) +
                                                   " is out of range: the statement has " +
                                                   std::to_string(parameterCount()) + " parameters");
    state_[static_cast<size_t>(index - 1)] = kSet;
    return values_[static_cast<size_t>(index - 1)];
  }
  template <class N>
  void setNumber(int index, N value) {
    char text[32];
    auto [end, ec] = std::to_chars(text, text + sizeof text, value);
    slot(index).assign(text, end);
  }

  std::vector<std::string> values_;
  std::vector<char> state_;
};

// Sets a statement's parameters from a record (Flink's JdbcStatementBuilder):
//   [](PreparedStatement& ps, const Count& c) { ps.setString(1, c.word); ps.setLong(2, c.n); }
template <class T>
using JdbcStatementBuilder = std::function<void(PreparedStatement&, const T&)>;

}  // namespace weir
