// Human-readable display of record values, for print sinks, logs and error messages:
// numbers, strings, containers "[a, b]", maps "{k=v}", optionals "null", pairs and tuples
// "(a, b)", WEIR_STRUCT types "Type{field=value}", and any type with an operator<<.
#pragma once

#include <charconv>
#include <cstddef>
#include <iterator>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "weir/serializer.h"

namespace weir {

namespace detail {

template <class T, template <class...> class Template>
inline constexpr bool kIsSpecializationOf = false;
template <template <class...> class Template, class... Args>
inline constexpr bool kIsSpecializationOf<Template<Args...>, Template> = true;

template <class T>
inline constexpr bool kAlwaysFalse = false;

template <class T>
concept StringLike = std::is_convertible_v<const T&, std::string_view>;

template <class T>
concept Streamable = requires(std::ostream& os, const T& value) { os << value; };

template <class T>
concept MapLike = requires(const T& value) {
  typename T::key_type;
  typename T::mapped_type;
  value.begin()->first;
  value.begin()->second;
  value.end();
};

template <class T>
concept RangeLike = requires(const T& value) {
  std::begin(value);
  std::end(value);
};

// Writes `text` in double quotes, escaping quotes, backslashes and control characters.
inline void writeQuoted(std::ostream& os, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  os << '"';
  for (const char c : text) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\r': os << "\\r"; break;
      case '\t': os << "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          const auto byte = static_cast<unsigned char>(c);
          os << "\\x" << kHex[byte >> 4] << kHex[byte & 0xf];
        } else {
          os << c;
        }
    }
  }
  os << '"';
}

// Numbers are written independently of the stream's locale and flags; floating point as
// the shortest text that reads back to the same value.
template <class T>
void writeNumber(std::ostream& os, T value) {
  char buffer[64];
  std::to_chars_result result;
  if constexpr (std::is_floating_point_v<T>) {
    result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  } else if constexpr (std::is_signed_v<T>) {
    result = std::to_chars(buffer, buffer + sizeof(buffer), static_cast<long long>(value));
  } else {
    result = std::to_chars(buffer, buffer + sizeof(buffer), static_cast<unsigned long long>(value));
  }
  os.write(buffer, result.ptr - buffer);
}

template <class T>
void formatTo(std::ostream& os, const T& value, bool nested);

template <class Range>
void formatElements(std::ostream& os, const Range& range, char open, char close) {
  os << open;
  bool first = true;
  for (const auto& element : range) {
    if (!first) os << ", ";
    first = false;
    formatTo(os, element, true);
  }
  os << close;
}

template <class T>
void formatTo(std::ostream& os, const T& value, bool nested) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (value ? "true" : "false");
  } else if constexpr (std::is_arithmetic_v<T>) {
    writeNumber(os, value);
  } else if constexpr (std::is_enum_v<T>) {
    writeNumber(os, static_cast<std::underlying_type_t<T>>(value));
  } else if constexpr (StringLike<T>) {
    const std::string_view text = value;
    if (nested) {
      writeQuoted(os, text);
    } else {
      os << text;
    }
  } else if constexpr (std::is_array_v<T>) {
    formatElements(os, value, '[', ']');
  } else if constexpr (kIsSpecializationOf<T, std::optional>) {
    if (value) {
      formatTo(os, *value, true);
    } else {
      os << "null";
    }
  } else if constexpr (kIsSpecializationOf<T, std::pair>) {
    os << '(';
    formatTo(os, value.first, true);
    os << ", ";
    formatTo(os, value.second, true);
    os << ')';
  } else if constexpr (kIsSpecializationOf<T, std::tuple>) {
    os << '(';
    std::apply(
        [&](const auto&... element) {
          std::size_t index = 0;
          ((os << (index++ == 0 ? "" : ", "), formatTo(os, element, true)), ...);
        },
        value);
    os << ')';
  } else if constexpr (Streamable<T>) {
    os << value;
  } else if constexpr (MapLike<T>) {
    os << '{';
    bool first = true;
    for (const auto& entry : value) {
      if (!first) os << ", ";
      first = false;
      formatTo(os, entry.first, true);
      os << '=';
      formatTo(os, entry.second, true);
    }
    os << '}';
  } else if constexpr (RangeLike<T>) {
    formatElements(os, value, '[', ']');
  } else if constexpr (WeirStruct<T>) {
    os << structName<T>() << '{';
    bool first = true;
    forEachField(value, [&](std::string_view name, const auto& field) {
      if (!first) os << ", ";
      first = false;
      os << name << '=';
      formatTo(os, field, true);
    });
    os << '}';
  } else {
    static_assert(kAlwaysFalse<T>,
                  "weir: this type T cannot be printed; declare it with WEIR_STRUCT(Type, "
                  "field...) or give it an operator<<(std::ostream&, const T&)");
  }
}

}  // namespace detail

// Writes `value` for people to read. Strings at the top level are written as they are;
// strings inside containers and structs are quoted. A type's own operator<< takes
// precedence over the WEIR_STRUCT and container forms.
template <class T>
void formatValue(std::ostream& os, const T& value) {
  detail::formatTo(os, value, false);
}

// formatValue into a string.
template <class T>
std::string toDisplayString(const T& value) {
  std::ostringstream os;
  formatValue(os, value);
  return std::move(os).str();
}

}  // namespace weir
