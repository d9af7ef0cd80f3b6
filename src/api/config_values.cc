#include "api/config_values.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <utility>

namespace weir::api {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "<whole number><spaces><unit>", the number maybe negative: {number, unit in lower case}.
std::pair<int64_t, std::string> numberAndUnit(std::string_view text, const char* what) {
  std::string_view s = trim(text);
  size_t digits = s.empty() || s[0] != '-' ? 0 : 1;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + digits, value);
  if (ec == std::errc::result_out_of_range) throw std::invalid_argument("'" + std::string(text) + "' is out of range");
  if (ec != std::errc() || end != s.data() + digits) throw std::invalid_argument("'" + std::string(text) + "' is not " + what);
  return {value, lower(trim(s.substr(digits)))};
}

}  // namespace

std::chrono::milliseconds parseDuration(std::string_view text) {
  static const char* kWhat = "a duration (a whole number and a unit: 500 ms, 10 s, 2 min, 1 h; a bare number is ms)";
  auto [value, unit] = numberAndUnit(text, kWhat);
  // Flink's TimeUtils units; below a millisecond rounds down.
  static const std::vector<std::pair<std::vector<std::string>, double>> kUnits{
      {{"ns", "nano", "nanos", "nanosecond", "nanoseconds"}, 1e-6},
      {{"us", "µs", "micro", "micros", "microsecond", "microseconds"}, 1e-3},
      {{"", "ms", "milli", "millis", "millisecond", "milliseconds"}, 1},
      {{"s", "sec", "secs", "second", "seconds"}, 1e3},
      {{"m", "min", "mins", "minute", "minutes"}, 60e3},
      {{"h", "hour", "hours"}, 3600e3},
      {{"d", "day", "days"}, 86400e3},
  };
  for (const auto& [names, millis] : kUnits) {
    if (std::find(names.begin(), names.end(), unit) == names.end()) continue;
    const double ms = static_cast<double>(value) * millis;
    if (std::fabs(ms) > 9e15) throw std::invalid_argument("'" + std::string(text) + "' is out of range");
    return std::chrono::milliseconds(static_cast<int64_t>(ms));
  }
  throw std::invalid_argument("'" + std::string(text) + "' is not " + kWhat);
}

int64_t parseMemorySize(std::string_view text) {
  static const char* kWhat = "a memory size (a whole number and a unit: 64 mb, 1 gb, 512 kb; a bare number is bytes)";
  auto [value, unit] = numberAndUnit(text, kWhat);
  if (value < 0) throw std::invalid_argument("'" + std::string(text) + "' is not " + kWhat);
  static const std::vector<std::pair<std::vector<std::string>, int>> kUnits{
      {{"", "b", "bytes"}, 0},
      {{"k", "kb", "kibibytes"}, 10},
      {{"m", "mb", "mebibytes"}, 20},
      {{"g", "gb", "gibibytes"}, 30},
      {{"t", "tb", "tebibytes"}, 40},
  };
  for (const auto& [names, shift] : kUnits) {
    if (std::find(names.begin(), names.end(), unit) == names.end()) continue;
    if (value > (std::numeric_limits<int64_t>::max() >> shift))
      throw std::invalid_argument("'" + std::string(text) + "' is out of range");
    return value << shift;
  }
  throw std::invalid_argument("'" + std::string(text) + "' is not " + kWhat);
}

int64_t parseWholeNumber(std::string_view text, int64_t min, int64_t max) {
  std::string_view s = trim(text);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == s.data() + s.size() && (value < min || value > max)))
    throw std::invalid_argument("must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got '" +
                                std::string(text) + "'");
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    throw std::invalid_argument("'" + std::string(text) + "' is not a whole number");
  return value;
}

double parseDecimal(std::string_view text) {
  std::string s(trim(text));
  char* end = nullptr;
  const double value = s.empty() ? 0 : std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value))
    throw std::invalid_argument("'" + std::string(text) + "' is not a number");
  return value;
}

bool parseBoolean(std::string_view text) {
  const std::string s = lower(trim(text));
  if (s == "true") return true;
  if (s == "false") return false;
  throw std::invalid_argument("'" + std::string(text) + "' is not true or false");
}

std::string parseEnum(std::string_view text, const std::vector<std::string>& names) {
  std::string s(trim(text));
  for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& name : names)
    if (name == s) return name;
  std::string all;
  for (const auto& name : names) all += (all.empty() ? "" : ", ") + name;
  throw std::invalid_argument("'" + std::string(text) + "' is not one of " + all);
}

}  // namespace weir::api
