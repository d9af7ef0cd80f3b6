// How a row-format file sink turns one record into bytes (Flink's Encoder), and
// SimpleStringEncoder, which writes each record as a line of text.
#pragma once

#include <charconv>
#include <string>
#include <type_traits>

#include "weir/detail/core/format.h"

namespace weir {

// Each sink subtask encodes with its own copy, so an encoder may keep buffers.
template <class T>
class Encoder {
 public:
  virtual ~Encoder() = default;
  // Appends the bytes of `element` to `out`.
  virtual void encode(const T& element, std::string& out) = 0;
};

// The record as print() shows it, then a newline (Flink's SimpleStringEncoder writes
// toString() and a newline).
template <class T>
class SimpleStringEncoder final : public Encoder<T> {
 public:
  void encode(const T& element, std::string& out) override {
    if constexpr (std::is_convertible_v<const T&, std::string_view>) {
      out += std::string_view(element);
    } else if constexpr (std::is_integral_v<T> && sizeof(T) > 1 && !std::is_same_v<T, wchar_t> &&
                         !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>) {
      char digits[24];  // what print() shows for an integer, without a stream
      out.append(digits, std::to_chars(digits, digits + sizeof digits, element).ptr);
    } else {
      out += toDisplayString(element);
    }
    out += '\n';
  }
};

}  // namespace weir
