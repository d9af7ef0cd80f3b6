// JSON for records (Flink's flink-json): JsonSerializationSchema and
// JsonDeserializationSchema between a type and one JSON value, and JsonLinesInputFormat,
// a file of one JSON value per line. Built on nlohmann-json.
//
// The mapping: a WEIR_STRUCT is an object with a member per field, by name (members the
// struct has no field for are ignored; a missing member is an error unless its field is
// a std::optional); std::vector is an array; std::map / std::unordered_map with string
// keys an object; std::pair and std::tuple arrays of their elements; std::optional null
// or its value; bool, numbers and std::string themselves. An integer that does not fit
// its field, or a number with a fraction for an integer field, is an error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "weir/error.h"
#include "weir/serialization_schema.h"
#include "weir/serializer.h"
#include "weir/stream_format.h"

namespace weir {

namespace detail::json {

using Json = nlohmann::json;

// Where in a document a value is, built into text only for an error message.
struct Path {
  const Path* parent = nullptr;
  std::string_view member;  // empty: an array element
  size_t index = 0;
  std::string text() const {
    if (parent == nullptr) return "";
    std::string parentText = parent->text();
    if (member.empty()) return parentText + "[" + std::to_string(index) + "]";
    return parentText.empty() ? std::string(member) : parentText + "." + std::string(member);
  }
};

[[noreturn]] inline void mismatch(const Path& path, const char* expected, const Json& found) {
  std::string where = path.text();
  std::string type = found.type_name();
  std::string article = found.is_null() ? "" : (found.is_object() || found.is_array()) ? "an " : "a ";
  throw SerializationError("JSON " + (where.empty() ? std::string("value") : "member '" + where + "'") + ": expected " +
                           expected + ", found " + article + type);
}

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
void read(const Json& j, T& out, const Path& path);

template <class Tuple, size_t... I>
void readTuple(const Json& j, Tuple& out, const Path& path, std::index_sequence<I...>) {
  if (!j.is_array() || j.size() != sizeof...(I)) mismatch(path, "an array of its elements", j);
  (read(j[I], std::get<I>(out), Path{&path, {}, I}), ...);
}

template <class T>
void read(const Json& j, T& out, const Path& path) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) mismatch(path, "true or false", j);
    out = j.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!j.is_number_integer()) mismatch(path, "an integer", j);
    bool fits = j.is_number_unsigned() ? std::in_range<T>(j.get<uint64_t>()) : std::in_range<T>(j.get<int64_t>());
    if (!fits) throw SerializationError("JSON member '" + path.text() + "': " + j.dump() + " is out of range");
    out = j.is_number_unsigned() ? static_cast<T>(j.get<uint64_t>()) : static_cast<T>(j.get<int64_t>());
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!j.is_number()) mismatch(path, "a number", j);
    out = j.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) mismatch(path, "a string", j);
    out = j.get_ref<const std::string&>();
  } else if constexpr (IsOptional<T>::value) {
    if (j.is_null()) {
      out.reset();
    } else {
      read(j, out.emplace(), path);
    }
  } else if constexpr (requires { typename T::value_type; out.push_back(std::declval<typename T::value_type>()); }) {
    if (!j.is_array()) mismatch(path, "an array", j);
    out.clear();
    out.resize(j.size());
    for (size_t i = 0; i < j.size(); ++i) read(j[i], out[i], Path{&path, {}, i});
  } else if constexpr (requires { typename T::mapped_type; requires std::is_same_v<typename T::key_type, std::string>; }) {
    if (!j.is_object()) mismatch(path, "an object", j);
    out.clear();
    for (const auto& [key, value] : j.items()) read(value, out[key], Path{&path, key, 0});
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    readTuple(j, out, path, std::make_index_sequence<std::tuple_size_v<T>>());
  } else if constexpr (WeirStruct<T>) {
    if (!j.is_object()) mismatch(path, "an object", j);
    forEachField(out, [&](std::string_view name, auto& field) {
      using F = std::remove_cvref_t<decltype(field)>;
      Path at{&path, name, 0};
      auto it = j.find(name);
      if (it == j.end()) {
        if constexpr (IsOptional<F>::value) {
          field.reset();
          return;
        }
        throw SerializationError("JSON member '" + at.text() + "' is missing");
      }
      read(*it, field, at);
    });
  } else {
    static_assert(sizeof(T) == 0, "weir JSON: no mapping for this type (see json_format.h)");
  }
}

template <class T>
void write(const T& value, Json& j) {
  if constexpr (std::is_same_v<T, bool> || std::is_arithmetic_v<T> || std::is_same_v<T, std::string>) {
    j = value;
  } else if constexpr (IsOptional<T>::value) {
    if (value) {
      write(*value, j);
    } else {
      j = nullptr;
    }
  } else if constexpr (requires { typename T::mapped_type; requires std::is_same_v<typename T::key_type, std::string>; }) {
    j = Json::object();
    for (const auto& [key, v] : value) write(v, j[key]);
  } else if constexpr (requires { typename T::value_type; value.begin(); }) {
    j = Json::array();
    for (const auto& v : value) write(v, j.emplace_back());
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    j = Json::array();
    std::apply([&](const auto&... e) { (write(e, j.emplace_back()), ...); }, value);
  } else if constexpr (WeirStruct<T>) {
    j = Json::object();
    forEachField(value, [&](std::string_view name, const auto& field) { write(field, j[std::string(name)]); });
  } else {
    static_assert(sizeof(T) == 0, "weir JSON: no mapping for this type (see json_format.h)");
  }
}

// nlohmann-json's message without its "[json.exception.<kind>.<id>] " prefix.
inline std::string reason(const Json::exception& e) {
  std::string what = e.what();
  if (auto at = what.find("] "); at != std::string::npos) what.erase(0, at + 2);
  return what;
}

// Parses `message`; a syntax error says at which byte and why.
inline Json parse(std::string_view message) {
  try {
    return Json::parse(message);
  } catch (const Json::exception& e) {  // a syntax error, or a number out of range (1e400)
    throw SerializationError("invalid JSON: " + reason(e));
  }
}

}  // namespace detail::json

// A record as one JSON value, compact (no spaces, no line end).
template <class T>
class JsonSerializationSchema final : public SerializationSchema<T> {
 public:
  // Throws weir::SerializationError for a string that is not UTF-8 (JSON has no bytes).
  std::string serialize(const T& element) override {
    detail::json::Json j;
    detail::json::write(element, j);
    try {
      return j.dump();
    } catch (const detail::json::Json::exception& e) {
      throw SerializationError("cannot write JSON: " + detail::json::reason(e));
    }
  }
};

// One JSON value as a record of T; see the top of json_format.h for the mapping.
template <class T>
class JsonDeserializationSchema final : public DeserializationSchema<T> {
 public:
  void deserialize(std::string_view message, T& out) override {
    detail::json::read(detail::json::parse(message), out, detail::json::Path{});
  }
};

// JSON Lines: one JSON value per line, each a record of T; blank lines are skipped.
template <class T>
using JsonLinesInputFormat = LineInputFormat<JsonDeserializationSchema<T>>;

}  // namespace weir
