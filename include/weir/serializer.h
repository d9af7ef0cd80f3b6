// Binary serialization of records and state: DataOutput/DataInput, Serializer<T>, the
// TypeSchema snapshot written beside every serialized state, and WEIR_STRUCT for user
// structs. The wire format is little-endian and the same on every platform; see the
// comment on each Serializer for its layout.
#pragma once

#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "weir/error.h"

namespace weir {

namespace detail {

// Arithmetic types with a fixed-width wire form (long double has none).
template <class T>
concept Arithmetic = std::is_arithmetic_v<T> && !std::is_same_v<T, long double>;

template <std::size_t N>
struct UnsignedOfSize;
template <>
struct UnsignedOfSize<1> { using type = std::uint8_t; };
template <>
struct UnsignedOfSize<2> { using type = std::uint16_t; };
template <>
struct UnsignedOfSize<4> { using type = std::uint32_t; };
template <>
struct UnsignedOfSize<8> { using type = std::uint64_t; };

template <std::unsigned_integral U>
constexpr U byteSwap(U value) {
  U result = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) {
    result = static_cast<U>((result << 8) | (value & 0xff));
    value = static_cast<U>(value >> 8);
  }
  return result;
}

// The stable, platform-independent wire name of an arithmetic type. `char` is "int8"
// everywhere, whatever its signedness on the platform.
template <Arithmetic T>
constexpr const char* wireTypeName() {
  if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_floating_point_v<T>) {
    return sizeof(T) == 4 ? "float32" : "float64";
  } else if constexpr (std::is_same_v<T, char> || std::is_signed_v<T>) {
    return sizeof(T) == 1 ? "int8" : sizeof(T) == 2 ? "int16" : sizeof(T) == 4 ? "int32" : "int64";
  } else {
    return sizeof(T) == 1   ? "uint8"
           : sizeof(T) == 2 ? "uint16"
           : sizeof(T) == 4 ? "uint32"
                            : "uint64";
  }
}

static_assert(std::numeric_limits<float>::is_iec559 && sizeof(float) == 4,
              "weir needs IEEE-754 binary32 float");
static_assert(std::numeric_limits<double>::is_iec559 && sizeof(double) == 8,
              "weir needs IEEE-754 binary64 double");

}  // namespace detail

// A growable byte buffer that values are serialized into; clear() keeps the capacity so
// one DataOutput can be reused for every record.
class DataOutput {
 public:
  DataOutput() = default;

  void writeRaw(const void* data, std::size_t size) {
    if (size != 0) buffer_.append(static_cast<const char*>(data), size);
  }

  // Unsigned LEB128: 7 bits per byte, low bits first, high bit set on all but the last.
  void writeVarint(std::uint64_t value) {
    char bytes[10];
    std::size_t n = 0;
    while (value >= 0x80) {
      bytes[n++] = static_cast<char>((value & 0x7f) | 0x80);
      value >>= 7;
    }
    bytes[n++] = static_cast<char>(value);
    buffer_.append(bytes, n);
  }

  // Fixed width, little-endian; bool is one byte 0 or 1, floats are their IEEE bits.
  template <detail::Arithmetic T>
  void write(T value) {
    if constexpr (std::is_same_v<T, bool>) {
      buffer_.push_back(value ? '\1' : '\0');
    } else {
      using U = typename detail::UnsignedOfSize<sizeof(T)>::type;
      U bits;
      std::memcpy(&bits, &value, sizeof(T));
      if constexpr (std::endian::native == std::endian::big) bits = detail::byteSwap(bits);
      char bytes[sizeof(T)];
      std::memcpy(bytes, &bits, sizeof(T));
      buffer_.append(bytes, sizeof(T));
    }
  }

  // Varint length, then the bytes.
  void writeString(std::string_view value) {
    writeVarint(value.size());
    writeRaw(value.data(), value.size());
  }

  void reserve(std::size_t capacity) { buffer_.reserve(capacity); }
  const std::string& data() const { return buffer_; }
  std::size_t size() const { return buffer_.size(); }
  void clear() { buffer_.clear(); }
  std::string release() { return std::exchange(buffer_, std::string()); }

 private:
  std::string buffer_;
};

// A bounds-checked reader over bytes it does not own. Every read that runs past the end,
// and every length prefix larger than what remains, throws SerializationError naming what
// was being read and how many bytes are missing; corrupt input never causes UB or a large
// allocation. The `what` overloads let serializers name the value in that message.
class DataInput {
 public:
  explicit DataInput(std::string_view data) : data_(data) {}

  void readRaw(void* out, std::size_t size) { readRaw(out, size, "raw bytes"); }
  void readRaw(void* out, std::size_t size, const char* what) {
    if (size > remaining()) throwTruncated(what, size);
    if (size != 0) std::memcpy(out, data_.data() + pos_, size);
    pos_ += size;
  }

  std::uint64_t readVarint() { return readVarint("varint"); }
  std::uint64_t readVarint(const char* what) {
    const std::size_t start = pos_;
    std::uint64_t result = 0;
    for (int i = 0; i < 10; ++i) {
      if (pos_ >= data_.size()) throwTruncatedVarint(what, start);
      const auto byte = static_cast<std::uint8_t>(data_[pos_++]);
      // The tenth byte holds bit 63 only; anything more does not fit 64 bits.
      if (i == 9 && byte > 1) break;
      result |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * i);
      if ((byte & 0x80) == 0) return result;
    }
    throwOverlongVarint(what, start);
  }

  template <detail::Arithmetic T>
  T read() {
    if constexpr (std::is_same_v<T, bool>) {
      if (remaining() < 1) throwTruncated("bool", 1);
      const auto byte = static_cast<std::uint8_t>(data_[pos_]);
      if (byte > 1) throwInvalidByte("bool", byte);
      ++pos_;
      return byte == 1;
    } else {
      if (remaining() < sizeof(T)) throwTruncated(detail::wireTypeName<T>(), sizeof(T));
      using U = typename detail::UnsignedOfSize<sizeof(T)>::type;
      U bits;
      std::memcpy(&bits, data_.data() + pos_, sizeof(T));
      if constexpr (std::endian::native == std::endian::big) bits = detail::byteSwap(bits);
      pos_ += sizeof(T);
      T value;
      std::memcpy(&value, &bits, sizeof(T));
      return value;
    }
  }

  std::string readString() { return std::string(readStringView()); }
  // The string's bytes inside the input, without copying; valid as long as the input is.
  std::string_view readStringView() {
    const std::size_t size = readLength("string length");
    std::string_view result = data_.substr(pos_, size);
    pos_ += size;
    return result;
  }

  // Reads a varint element count and checks that `count * minBytesPerElement` bytes
  // remain, so a corrupt count is rejected before anything is reserved.
  std::size_t readLength(const char* what, std::size_t minBytesPerElement = 1) {
    const std::size_t start = pos_;
    const std::uint64_t count = readVarint(what);
    const std::size_t perElement = minBytesPerElement == 0 ? 1 : minBytesPerElement;
    if (count > remaining() / perElement) throwBadLength(what, start, count, perElement);
    return static_cast<std::size_t>(count);
  }

  // Throws a SerializationError for a byte that is not a valid encoding of `what`.
  [[noreturn]] void throwInvalidByte(const char* what, std::uint8_t byte) const;

  std::size_t remaining() const { return data_.size() - pos_; }
  std::size_t position() const { return pos_; }
  bool atEnd() const { return pos_ == data_.size(); }

 private:
  [[noreturn]] void throwTruncated(const char* what, std::size_t needed) const;
  [[noreturn]] void throwTruncatedVarint(const char* what, std::size_t start) const;
  [[noreturn]] void throwOverlongVarint(const char* what, std::size_t start) const;
  [[noreturn]] void throwBadLength(const char* what, std::size_t start, std::uint64_t count,
                                   std::size_t minBytesPerElement) const;

  std::string_view data_;
  std::size_t pos_ = 0;
};

// The shape of a serialized type, written beside serialized state so a restore can match
// fields by name. Containers have unnamed element fields ("" for vector, "key"/"value" for
// map, "value" for optional, "0","1",... for pair/tuple); structs name theirs by member.
struct TypeSchema {
  struct Field;

  // Schemas nested deeper than this are rejected by read() as corrupt.
  static constexpr int kMaxDepth = 64;

  std::string typeName;
  std::uint32_t version = 1;
  std::vector<Field> fields;

  // Only in a schema made from a C++ type (never written nor compared): how a restore
  // migrates what older versions of the type wrote (core/schema_migration.h).
  struct Upgrade;
  // WEIR_STRUCT: the bytes of a value-initialized struct, whose fields are the defaults
  // of fields added since a snapshot was taken.
  std::string defaults = {};
  // WEIR_STRUCT_UPGRADE: conversions from values of older versions.
  std::vector<Upgrade> upgrades = {};

  void write(DataOutput& out) const;
  static TypeSchema read(DataInput& in);
  // E.g. "Click{user:string, ts:int64, tags:vector<string>}"; "@n" follows a name whose
  // version is not 1.
  std::string toString() const;
  // The first way `now` differs from this schema, as one phrase naming the field by its
  // path under `path` ("'value.price' was int32, is now float64"); empty when they are
  // equal. Fields are compared by name, so a reordered field is named as such.
  std::string firstDifference(const TypeSchema& now, const std::string& path) const;

  friend bool operator==(const TypeSchema& a, const TypeSchema& b);
};

// One named field (or unnamed container element) of a TypeSchema.
struct TypeSchema::Field {
  std::string name;
  TypeSchema type;

  friend bool operator==(const Field& a, const Field& b) {
    return a.name == b.name && a.type == b.type;
  }
};

// A WEIR_STRUCT_UPGRADE: reads a value of the old type (`from`, whose fields are matched
// with the recorded ones by name) and writes the value of the new type it becomes.
struct TypeSchema::Upgrade {
  std::uint32_t fromVersion = 0;
  TypeSchema from;
  void (*convert)(DataInput& in, DataOutput& out) = nullptr;
};

// Turns a T into bytes and back, and describes its layout. Specialize it for a type that
// WEIR_STRUCT cannot describe: provide serialize(const T&, DataOutput&),
// deserialize(DataInput&) -> T and schema() -> TypeSchema, and, if a value can encode in
// fewer than one byte, `static constexpr std::size_t kMinEncodedSize`.
template <class T>
struct Serializer;

// A type that weir can put into a channel, into state or into a checkpoint.
template <class T>
concept Serializable = requires(const T& value, DataOutput& out, DataInput& in) {
  Serializer<T>::serialize(value, out);
  { Serializer<T>::deserialize(in) } -> std::same_as<T>;
  { Serializer<T>::schema() } -> std::same_as<TypeSchema>;
};

namespace detail {

template <class T>
inline constexpr bool kIsSerializable = Serializable<T>;

// The fewest bytes any value of T encodes to; bounds container counts on read.
template <Serializable T>
constexpr std::size_t minEncodedSize() {
  if constexpr (requires { Serializer<T>::kMinEncodedSize; }) {
    return Serializer<T>::kMinEncodedSize;
  } else {
    return 1;
  }
}

// Whether a vector<T> can be copied as one block of little-endian bytes.
template <class T>
inline constexpr bool kBulkCopyable =
    std::endian::native == std::endian::little && Arithmetic<T> && !std::is_same_v<T, bool> &&
    !std::is_same_v<T, wchar_t>;

// An integer type with a platform-independent width (wchar_t has none).
template <class T>
concept WireInteger =
    std::integral<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, wchar_t>;

// The argument WEIR_STRUCT's functions are found by (through ADL on T's namespace).
template <class T>
struct StructTag {
  using type = T;
};

// One member of a WEIR_STRUCT: its name and pointer.
template <class C, class M>
struct FieldDescriptor {
  using Value = M;
  std::string_view name;
  M C::*member;
};

template <class C, class M>
constexpr FieldDescriptor<C, M> makeField(std::string_view name, M C::*member) {
  return {name, member};
}

// A type declared with WEIR_STRUCT.
template <class T>
concept WeirStruct = std::is_class_v<T> && requires {
  { weirStructName(StructTag<T>{}) } -> std::convertible_to<std::string_view>;
  weirStructFields(StructTag<T>{});
};

template <WeirStruct T>
using StructFields = decltype(weirStructFields(StructTag<T>{}));

template <class Fields>
struct AllFieldsSerializable;
template <class... F>
struct AllFieldsSerializable<std::tuple<F...>>
    : std::bool_constant<(Serializable<typename F::Value> && ...)> {};

template <class T>
concept SerializableStruct = WeirStruct<T> && AllFieldsSerializable<StructFields<T>>::value;

// The struct's name as written in WEIR_STRUCT.
template <WeirStruct T>
constexpr std::string_view structName() {
  return weirStructName(StructTag<T>{});
}

template <WeirStruct T>
constexpr std::size_t fieldCount() {
  return std::tuple_size_v<StructFields<T>>;
}

// Calls f(std::string_view name, value&) for each field of a WEIR_STRUCT in declaration
// order; `value` is const when `object` is.
template <class T, class F>
  requires WeirStruct<std::remove_const_t<T>>
constexpr void forEachField(T& object, F&& f) {
  constexpr auto fields = weirStructFields(StructTag<std::remove_const_t<T>>{});
  std::apply(
      [&](const auto&... field) { (static_cast<void>(f(field.name, object.*(field.member))), ...); },
      fields);
}

template <class T>
constexpr std::uint32_t structVersion() {
  if constexpr (requires { weirStructVersion(StructTag<T>{}); }) {
    return weirStructVersion(StructTag<T>{});
  } else {
    return 1;
  }
}

// The old type WEIR_STRUCT_UPGRADE(T, V, Old, f) names, and its conversion to a T.
template <class T, std::uint32_t V>
concept HasStructUpgrade = requires { weirStructUpgradeFrom(StructTag<T>{}, std::integral_constant<std::uint32_t, V>{}); };

template <class T, std::uint32_t V>
using StructUpgradeSource =
    typename decltype(weirStructUpgradeFrom(StructTag<T>{}, std::integral_constant<std::uint32_t, V>{}))::type;

template <class T, class Fields = StructFields<T>>
struct StructMinEncodedSize;
template <class T, class... F>
struct StructMinEncodedSize<T, std::tuple<F...>>
    : std::integral_constant<std::size_t,
                             (std::size_t{0} + ... + minEncodedSize<typename F::Value>())> {};

// Finds the innermost type that makes T unserializable, so the compile error names it.
template <class T>
struct UnserializablePart;

template <class... Ts>
struct FirstUnserializable {
  using type = void;
};
template <class T, class... Ts>
struct FirstUnserializable<T, Ts...> {
  using type = typename std::conditional_t<kIsSerializable<T>, FirstUnserializable<Ts...>,
                                           UnserializablePart<T>>::type;
};

template <class Whole, class... Parts>
struct UnserializableOf {
  using Inner = typename FirstUnserializable<Parts...>::type;
  using type = std::conditional_t<std::is_void_v<Inner>, Whole, Inner>;
};

template <class T>
struct UnserializablePart {
  using type = T;
};
template <class T, class A>
struct UnserializablePart<std::vector<T, A>> : UnserializableOf<std::vector<T, A>, T> {};
template <class K, class V, class C, class A>
struct UnserializablePart<std::map<K, V, C, A>> : UnserializableOf<std::map<K, V, C, A>, K, V> {};
template <class K, class V, class H, class E, class A>
struct UnserializablePart<std::unordered_map<K, V, H, E, A>>
    : UnserializableOf<std::unordered_map<K, V, H, E, A>, K, V> {};
template <class T>
struct UnserializablePart<std::optional<T>> : UnserializableOf<std::optional<T>, T> {};
template <class A, class B>
struct UnserializablePart<std::pair<A, B>> : UnserializableOf<std::pair<A, B>, A, B> {};
template <class... Ts>
struct UnserializablePart<std::tuple<Ts...>> : UnserializableOf<std::tuple<Ts...>, Ts...> {};

template <class T, class Fields>
struct UnserializableStructOf;
template <class T, class... F>
struct UnserializableStructOf<T, std::tuple<F...>> : UnserializableOf<T, typename F::Value...> {};
template <WeirStruct T>
struct UnserializablePart<T> : UnserializableStructOf<T, StructFields<T>> {};

// Instantiated with the offending type, so the compiler's error names it.
template <class T>
struct NoSerializerFor {
  static_assert(kIsSerializable<T>,
                "weir: no Serializer for the type T named above; declare it with "
                "WEIR_STRUCT(Type, field...) right after the struct, or specialize "
                "weir::Serializer<T>");
  static constexpr bool value = true;
};

template <class... Ts>
TypeSchema indexedSchema(const char* typeName) {
  TypeSchema schema{typeName, 1, {}};
  schema.fields.reserve(sizeof...(Ts));
  std::size_t index = 0;
  ((schema.fields.push_back({std::to_string(index++), Serializer<Ts>::schema()})), ...);
  return schema;
}

}  // namespace detail

// Fails compilation, naming the unserializable type, unless T has a Serializer. Call it
// at the API boundary wherever a user's type must later be serialized.
template <class T>
constexpr void requireSerializable() {
  static_assert(detail::NoSerializerFor<typename detail::UnserializablePart<T>::type>::value);
}

// One byte, 0 or 1; any other byte is rejected.
template <>
struct Serializer<bool> {
  static constexpr std::size_t kMinEncodedSize = 1;
  static void serialize(const bool& value, DataOutput& out) { out.write(value); }
  static bool deserialize(DataInput& in) { return in.read<bool>(); }
  static TypeSchema schema() { return {"bool", 1, {}}; }
};

// Fixed width, little-endian, two's complement; named by width and signedness.
template <detail::WireInteger T>
struct Serializer<T> {
  static constexpr std::size_t kMinEncodedSize = sizeof(T);
  static void serialize(const T& value, DataOutput& out) { out.write(value); }
  static T deserialize(DataInput& in) { return in.read<T>(); }
  static TypeSchema schema() { return {detail::wireTypeName<T>(), 1, {}}; }
};

// IEEE-754 bits, little-endian (NaN payloads and the sign of zero are kept).
template <class T>
  requires std::is_same_v<T, float> || std::is_same_v<T, double>
struct Serializer<T> {
  static constexpr std::size_t kMinEncodedSize = sizeof(T);
  static void serialize(const T& value, DataOutput& out) { out.write(value); }
  static T deserialize(DataInput& in) { return in.read<T>(); }
  static TypeSchema schema() { return {detail::wireTypeName<T>(), 1, {}}; }
};

// Varint length, then the bytes.
template <>
struct Serializer<std::string> {
  static constexpr std::size_t kMinEncodedSize = 1;
  static void serialize(const std::string& value, DataOutput& out) { out.writeString(value); }
  static std::string deserialize(DataInput& in) { return in.readString(); }
  static TypeSchema schema() { return {"string", 1, {}}; }
};

// Varint count, then each element.
template <Serializable T, class A>
struct Serializer<std::vector<T, A>> {
  static_assert(detail::minEncodedSize<T>() > 0,
                "weir: container elements must encode to at least one byte "
                "(e.g. std::tuple<> cannot be a vector element)");
  static constexpr std::size_t kMinEncodedSize = 1;

  static void serialize(const std::vector<T, A>& value, DataOutput& out) {
    out.writeVarint(value.size());
    if constexpr (detail::kBulkCopyable<T>) {
      out.writeRaw(value.data(), value.size() * sizeof(T));
    } else {
      for (const auto& element : value) Serializer<T>::serialize(element, out);
    }
  }

  static std::vector<T, A> deserialize(DataInput& in) {
    const std::size_t count = in.readLength("vector length", detail::minEncodedSize<T>());
    std::vector<T, A> result;
    if constexpr (detail::kBulkCopyable<T>) {
      result.resize(count);
      in.readRaw(result.data(), count * sizeof(T), "vector elements");
    } else {
      result.reserve(count);
      for (std::size_t i = 0; i < count; ++i) result.push_back(Serializer<T>::deserialize(in));
    }
    return result;
  }

  static TypeSchema schema() { return {"vector", 1, {{"", Serializer<T>::schema()}}}; }
};

namespace detail {

// Varint count, then key and value of each entry; std::map and std::unordered_map share
// this layout and the schema name "map", so state can switch between them.
template <class M, class K, class V>
struct MapSerializer {
  static_assert(minEncodedSize<K>() + minEncodedSize<V>() > 0,
                "weir: map entries must encode to at least one byte");
  static constexpr std::size_t kMinEncodedSize = 1;

  static void serialize(const M& value, DataOutput& out) {
    out.writeVarint(value.size());
    for (const auto& [key, mapped] : value) {
      Serializer<K>::serialize(key, out);
      Serializer<V>::serialize(mapped, out);
    }
  }

  static M deserialize(DataInput& in) {
    const std::size_t count =
        in.readLength("map length", minEncodedSize<K>() + minEncodedSize<V>());
    M result;
    if constexpr (requires { result.reserve(count); }) result.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
      K key = Serializer<K>::deserialize(in);
      V mapped = Serializer<V>::deserialize(in);
      if (!result.emplace(std::move(key), std::move(mapped)).second) {
        throw SerializationError("weir::DataInput: corrupt map at byte " +
                                 std::to_string(in.position()) +
                                 ": a key occurs twice; the bytes are not a serialized map");
      }
    }
    return result;
  }

  static TypeSchema schema() {
    return {"map", 1, {{"key", Serializer<K>::schema()}, {"value", Serializer<V>::schema()}}};
  }
};

}  // namespace detail

template <Serializable K, Serializable V, class C, class A>
struct Serializer<std::map<K, V, C, A>> : detail::MapSerializer<std::map<K, V, C, A>, K, V> {};

template <Serializable K, Serializable V, class H, class E, class A>
struct Serializer<std::unordered_map<K, V, H, E, A>>
    : detail::MapSerializer<std::unordered_map<K, V, H, E, A>, K, V> {};

// One byte 0 (empty) or 1 followed by the value.
template <Serializable T>
struct Serializer<std::optional<T>> {
  static constexpr std::size_t kMinEncodedSize = 1;

  static void serialize(const std::optional<T>& value, DataOutput& out) {
    out.write<std::uint8_t>(value.has_value() ? 1 : 0);
    if (value) Serializer<T>::serialize(*value, out);
  }

  static std::optional<T> deserialize(DataInput& in) {
    const auto present = in.read<std::uint8_t>();
    if (present == 0) return std::nullopt;
    if (present != 1) in.throwInvalidByte("optional presence flag", present);
    return Serializer<T>::deserialize(in);
  }

  static TypeSchema schema() { return {"optional", 1, {{"value", Serializer<T>::schema()}}}; }
};

// The two values, first then second.
template <Serializable A, Serializable B>
struct Serializer<std::pair<A, B>> {
  static constexpr std::size_t kMinEncodedSize =
      detail::minEncodedSize<A>() + detail::minEncodedSize<B>();

  static void serialize(const std::pair<A, B>& value, DataOutput& out) {
    Serializer<A>::serialize(value.first, out);
    Serializer<B>::serialize(value.second, out);
  }

  static std::pair<A, B> deserialize(DataInput& in) {
    A first = Serializer<A>::deserialize(in);
    B second = Serializer<B>::deserialize(in);
    return {std::move(first), std::move(second)};
  }

  static TypeSchema schema() { return detail::indexedSchema<A, B>("pair"); }
};

// Each element in order.
template <Serializable... Ts>
struct Serializer<std::tuple<Ts...>> {
  static constexpr std::size_t kMinEncodedSize = (std::size_t{0} + ... + detail::minEncodedSize<Ts>());

  static void serialize(const std::tuple<Ts...>& value, DataOutput& out) {
    std::apply([&](const Ts&... element) { (Serializer<Ts>::serialize(element, out), ...); },
               value);
  }

  static std::tuple<Ts...> deserialize(DataInput& in) {
    // Braced initialization evaluates left to right, so elements are read in order.
    return std::tuple<Ts...>{Serializer<Ts>::deserialize(in)...};
  }

  static TypeSchema schema() { return detail::indexedSchema<Ts...>("tuple"); }
};

// A WEIR_STRUCT: each field in declaration order, with no per-field framing.
template <detail::SerializableStruct T>
struct Serializer<T> {
  static_assert(std::is_default_constructible_v<T>,
                "weir: a WEIR_STRUCT type must be default-constructible to be deserialized");

  static constexpr std::size_t kMinEncodedSize = detail::StructMinEncodedSize<T>::value;

  static void serialize(const T& value, DataOutput& out) {
    detail::forEachField(value, [&](std::string_view, const auto& field) {
      Serializer<std::remove_cvref_t<decltype(field)>>::serialize(field, out);
    });
  }

  static T deserialize(DataInput& in) {
    T value{};
    detail::forEachField(value, [&](std::string_view, auto& field) {
      field = Serializer<std::remove_cvref_t<decltype(field)>>::deserialize(in);
    });
    return value;
  }

  static TypeSchema schema() {
    TypeSchema result{std::string(detail::structName<T>()), detail::structVersion<T>(), {}};
    result.fields.reserve(detail::fieldCount<T>());
    std::apply(
        [&](const auto&... field) {
          (result.fields.push_back(
               {std::string(field.name),
                Serializer<typename std::remove_cvref_t<decltype(field)>::Value>::schema()}),
           ...);
        },
        weirStructFields(detail::StructTag<T>{}));
    DataOutput defaults;
    serialize(T{}, defaults);
    result.defaults = defaults.release();
    addUpgrades(result, std::make_integer_sequence<std::uint32_t, detail::structVersion<T>()>{});
    return result;
  }

 private:
  template <std::uint32_t... Vs>
  static void addUpgrades(TypeSchema& schema, std::integer_sequence<std::uint32_t, Vs...>) {
    (addUpgrade<Vs>(schema), ...);
  }
  template <std::uint32_t V>
  static void addUpgrade(TypeSchema& schema) {
    if constexpr (V > 0 && detail::HasStructUpgrade<T, V>) {
      using Old = detail::StructUpgradeSource<T, V>;
      schema.upgrades.push_back({V, Serializer<Old>::schema(), [](DataInput& in, DataOutput& out) {
                                   const Old old = Serializer<Old>::deserialize(in);
                                   Serializer<T>::serialize(weirStructUpgrade(detail::StructTag<T>{},
                                                               std::integral_constant<std::uint32_t, V>{}, old),
                                             out);
                                 }});
    }
  }
};

// The bytes of one value.
template <class T>
std::string serializeToString(const T& value) {
  requireSerializable<T>();
  if constexpr (Serializable<T>) {
    DataOutput out;
    Serializer<T>::serialize(value, out);
    return out.release();
  } else {
    return {};
  }
}

// The value in `bytes`, which must hold exactly one value: leftover bytes mean the bytes
// are of another type or corrupt, and throw SerializationError.
template <class T>
T deserializeFromString(std::string_view bytes) {
  requireSerializable<T>();
  if constexpr (Serializable<T>) {
    DataInput in(bytes);
    T value = Serializer<T>::deserialize(in);
    if (!in.atEnd()) {
      throw SerializationError("weir::deserializeFromString: " + std::to_string(in.remaining()) +
                               " trailing byte(s) after a " + Serializer<T>::schema().typeName +
                               " of " + std::to_string(in.position()) +
                               " bytes; the bytes are of another type or corrupt");
    }
    return value;
  } else {
    throw SerializationError("weir: type has no Serializer");
  }
}

}  // namespace weir

#define WEIR_DETAIL_CAT_(a, b) a##b
#define WEIR_DETAIL_CAT(a, b) WEIR_DETAIL_CAT_(a, b)
#define WEIR_DETAIL_NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, \
                           _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28,   \
                           _29, _30, _31, _32, _33, N, ...)                                   \
  N
#define WEIR_DETAIL_NARGS(...)                                                                \
  WEIR_DETAIL_NARGS_(__VA_ARGS__, TOO_MANY_FIELDS_MAX_32, 32, 31, 30, 29, 28, 27, 26, 25, 24, \
                     23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, \
                     3, 2, 1)
#define WEIR_DETAIL_FE_1(m, d, x) m(d, x)
#define WEIR_DETAIL_FE_2(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_1(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_3(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_2(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_4(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_3(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_5(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_4(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_6(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_5(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_7(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_6(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_8(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_7(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_9(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_8(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_10(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_9(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_11(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_10(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_12(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_11(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_13(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_12(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_14(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_13(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_15(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_14(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_16(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_15(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_17(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_16(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_18(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_17(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_19(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_18(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_20(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_19(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_21(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_20(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_22(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_21(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_23(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_22(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_24(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_23(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_25(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_24(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_26(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_25(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_27(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_26(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_28(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_27(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_29(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_28(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_30(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_29(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_31(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_30(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FE_32(m, d, x, ...) m(d, x), WEIR_DETAIL_FE_31(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FOR_EACH(m, d, ...) \
  WEIR_DETAIL_CAT(WEIR_DETAIL_FE_, WEIR_DETAIL_NARGS(__VA_ARGS__))(m, d, __VA_ARGS__)
#define WEIR_DETAIL_FIELD(Type, field) ::weir::detail::makeField(#field, &Type::field)

// Makes a struct serializable, printable and hashable by weir: one line at namespace scope
// in the struct's own namespace, right after the struct, naming 1 to 32 public members:
//   struct Click { std::string user; int64_t ts; };
//   WEIR_STRUCT(Click, user, ts);
// Fields are serialized in the order listed; the schema names the type "Click".
#define WEIR_STRUCT(Type, ...)                                                           \
  inline constexpr ::std::string_view weirStructName(::weir::detail::StructTag<Type>) { \
    return #Type;                                                                        \
  }                                                                                      \
  inline constexpr auto weirStructFields(::weir::detail::StructTag<Type>) {              \
    return ::std::make_tuple(WEIR_DETAIL_FOR_EACH(WEIR_DETAIL_FIELD, Type, __VA_ARGS__)); \
  }                                                                                      \
  static_assert(::std::is_class_v<Type>, "WEIR_STRUCT(" #Type ", ...) needs a struct or class")

// Sets the schema version of a WEIR_STRUCT (default 1); same placement as WEIR_STRUCT.
// State written at another version is restored only through a WEIR_STRUCT_UPGRADE.
#define WEIR_STRUCT_VERSION(Type, version)                                             \
  inline constexpr ::std::uint32_t weirStructVersion(::weir::detail::StructTag<Type>) { \
    return version;                                                                    \
  }                                                                                    \
  static_assert(true, "")

// Restores state that version `fromVersion` of Type wrote, for a change the field rules
// cannot make (a field's type or meaning changed): OldType is a WEIR_STRUCT with Type's
// fields as they were then, and the function (the last argument: a lambda or the name of
// one) turns an OldType into a Type. Same placement
// as WEIR_STRUCT, after WEIR_STRUCT_VERSION(Type, n) with n > fromVersion:
//   struct ClickV1 { std::string user; int32_t cents; };
//   WEIR_STRUCT(ClickV1, user, cents);
//   WEIR_STRUCT_VERSION(Click, 2);
//   WEIR_STRUCT_UPGRADE(Click, 1, ClickV1, [](const ClickV1& c) { return Click{c.user, c.cents / 100.0}; });
#define WEIR_STRUCT_UPGRADE(Type, fromVersion, OldType, ...)                                                      \
  inline constexpr ::weir::detail::StructTag<OldType> weirStructUpgradeFrom(                                       \
      ::weir::detail::StructTag<Type>, ::std::integral_constant<::std::uint32_t, fromVersion>) {                  \
    return {};                                                                                                     \
  }                                                                                                                \
  inline Type weirStructUpgrade(::weir::detail::StructTag<Type>,                                                   \
                                ::std::integral_constant<::std::uint32_t, fromVersion>, const OldType& old) {     \
    return (__VA_ARGS__)(old);                                                                                     \
  }                                                                                                                \
  static_assert((fromVersion) >= 1, "WEIR_STRUCT_UPGRADE(" #Type ", ...): versions start at 1")
