#include "weir/serializer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <random>
#include <set>
#include <sstream>

#include "weir/detail/core/format.h"

// Tracks the largest single allocation so corrupt-length tests can prove nothing large
// was reserved.
namespace {
std::atomic<std::size_t> gLargestAllocation{0};
}  // namespace

void* operator new(std::size_t size) {
  std::size_t largest = gLargestAllocation.load(std::memory_order_relaxed);
  while (size > largest &&
         !gLargestAllocation.compare_exchange_weak(largest, size, std::memory_order_relaxed)) {
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// Out of line so the compiler does not see free() paired with operator new.
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

// A struct in the global namespace.
struct Click {
  std::string user;
  std::int64_t ts = 0;
  std::vector<std::string> tags;
  bool operator==(const Click&) const = default;
};
WEIR_STRUCT(Click, user, ts, tags);

// Structs in a nested namespace, one containing the other and containers.
namespace market::feed {

struct Trade {
  std::int32_t id = 0;
  double price = 0;
  std::optional<std::string> venue;
  bool operator==(const Trade&) const = default;
};
WEIR_STRUCT(Trade, id, price, venue);

struct Order {
  Trade trade;
  std::map<std::string, std::vector<std::int32_t>> legs;
  std::pair<std::int8_t, std::uint16_t> flags;
  std::tuple<bool, float, std::string> extra;
  std::unordered_map<std::int64_t, Click> clicks;
  bool operator==(const Order&) const = default;
};
WEIR_STRUCT(Order, trade, legs, flags, extra, clicks);

}  // namespace market::feed

struct Versioned {
  std::int32_t a = 0;
};
WEIR_STRUCT(Versioned, a);
WEIR_STRUCT_VERSION(Versioned, 3);

struct Wide {
  std::int32_t f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16;
  std::int32_t f17, f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32;
};
WEIR_STRUCT(Wide, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17,
            f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32);

struct NoSerializer {
  int x = 0;
};

struct HasUnserializableField {
  std::vector<std::map<int, NoSerializer>> bad;
};
WEIR_STRUCT(HasUnserializableField, bad);

namespace weir {
void PrintTo(const TypeSchema& schema, std::ostream* os) { *os << schema.toString(); }
}  // namespace weir

namespace weir {
namespace {

using market::feed::Order;
using market::feed::Trade;

static_assert(Serializable<Click>);
static_assert(Serializable<Order>);
static_assert(Serializable<std::vector<std::optional<std::map<std::string, Click>>>>);
static_assert(!Serializable<NoSerializer>);
static_assert(!Serializable<std::vector<NoSerializer>>);
static_assert(!Serializable<HasUnserializableField>);
static_assert(!Serializable<long double>);
static_assert(!Serializable<wchar_t>);
static_assert(!Serializable<const char*>);
static_assert(std::is_same_v<detail::UnserializablePart<HasUnserializableField>::type, NoSerializer>);
static_assert(std::is_same_v<detail::UnserializablePart<std::pair<int, std::tuple<NoSerializer>>>::type,
                             NoSerializer>);
static_assert(detail::fieldCount<Wide>() == 32);
static_assert(detail::structName<Trade>() == "Trade");

// Bytes from a list of byte values, written out by hand in the tests.
std::string bytes(std::initializer_list<int> values) {
  std::string result;
  for (int v : values) result.push_back(static_cast<char>(v));
  return result;
}

std::string hex(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string result;
  for (unsigned char c : data) {
    if (!result.empty()) result += ' ';
    result += kHex[c >> 4];
    result += kHex[c & 0xf];
  }
  return result;
}

template <class T>
T roundTrip(const T& value) {
  return deserializeFromString<T>(serializeToString(value));
}

template <class T>
void expectRoundTrip(const T& value) {
  EXPECT_EQ(roundTrip(value), value) << "bytes: " << hex(serializeToString(value));
}

TypeSchema leaf(const char* name) { return TypeSchema{name, 1, {}}; }

TypeSchema node(const char* name, std::vector<TypeSchema::Field> fields) {
  return TypeSchema{name, 1, std::move(fields)};
}

Click sampleClick() { return Click{"alice", 1700000000123, {"mobile", "", "ad \"x\""}}; }

Order sampleOrder() {
  Order order;
  order.trade = Trade{42, 101.25, std::string("XNAS")};
  order.legs = {{"a", {1, -2, 3}}, {"empty", {}}, {"", {std::numeric_limits<int32_t>::min()}}};
  order.flags = {-3, 65535};
  order.extra = {true, -0.5f, "note"};
  order.clicks = {{7, sampleClick()}, {-1, Click{}}};
  return order;
}

// ---- exact byte layouts, written by hand --------------------------------------------

TEST(SerializerLayout, FixedWidthLittleEndian) {
  EXPECT_EQ(hex(serializeToString<std::int32_t>(7)), "07 00 00 00");
  EXPECT_EQ(hex(serializeToString<std::int32_t>(-2)), "fe ff ff ff");
  EXPECT_EQ(hex(serializeToString<std::uint16_t>(0x1234)), "34 12");
  EXPECT_EQ(hex(serializeToString<std::int64_t>(-1)), "ff ff ff ff ff ff ff ff");
  EXPECT_EQ(hex(serializeToString<std::uint64_t>(0x0102030405060708ULL)),
            "08 07 06 05 04 03 02 01");
  EXPECT_EQ(hex(serializeToString<std::int8_t>(-128)), "80");
  EXPECT_EQ(hex(serializeToString<char>('A')), "41");
  EXPECT_EQ(hex(serializeToString(true)), "01");
  EXPECT_EQ(hex(serializeToString(false)), "00");
  EXPECT_EQ(hex(serializeToString(1.0)), "00 00 00 00 00 00 f0 3f");
  EXPECT_EQ(hex(serializeToString(-2.0f)), "00 00 00 c0");
}

TEST(SerializerLayout, Varints) {
  auto varint = [](std::uint64_t v) {
    DataOutput out;
    out.writeVarint(v);
    return hex(out.data());
  };
  EXPECT_EQ(varint(0), "00");
  EXPECT_EQ(varint(127), "7f");
  EXPECT_EQ(varint(128), "80 01");
  EXPECT_EQ(varint(300), "ac 02");
  EXPECT_EQ(varint(std::numeric_limits<std::uint64_t>::max()),
            "ff ff ff ff ff ff ff ff ff 01");
}

TEST(SerializerLayout, StringsAndContainers) {
  EXPECT_EQ(hex(serializeToString(std::string("ab"))), "02 61 62");
  EXPECT_EQ(hex(serializeToString(std::string())), "00");
  EXPECT_EQ(serializeToString(std::string(200, 'z')), bytes({0xc8, 0x01}) + std::string(200, 'z'));
  EXPECT_EQ(hex(serializeToString(std::vector<std::int16_t>{1, 2})), "02 01 00 02 00");
  EXPECT_EQ(hex(serializeToString(std::vector<std::string>{"a", ""})), "02 01 61 00");
  EXPECT_EQ(hex(serializeToString(std::vector<bool>{true, false, true})), "03 01 00 01");
  EXPECT_EQ(hex(serializeToString(std::optional<std::int8_t>())), "00");
  EXPECT_EQ(hex(serializeToString(std::optional<std::int8_t>(5))), "01 05");
  EXPECT_EQ(hex(serializeToString(std::map<std::string, std::int32_t>{{"b", 2}, {"a", 1}})),
            "02 01 61 01 00 00 00 01 62 02 00 00 00");
  EXPECT_EQ(hex(serializeToString(std::unordered_map<std::uint8_t, bool>{{9, true}})), "01 09 01");
  EXPECT_EQ(hex(serializeToString(std::pair<std::uint8_t, std::string>{1, "x"})), "01 01 78");
  EXPECT_EQ(hex(serializeToString(std::tuple<bool, std::int16_t>{true, -1})), "01 ff ff");
  EXPECT_EQ(serializeToString(std::tuple<>()), "");
}

TEST(SerializerLayout, StructIsFieldsInOrder) {
  EXPECT_EQ(hex(serializeToString(Click{"u", 5, {"t"}})),
            "01 75 05 00 00 00 00 00 00 00 01 01 74");
  EXPECT_EQ(hex(serializeToString(Trade{1, 0.0, std::nullopt})),
            "01 00 00 00 00 00 00 00 00 00 00 00 00");
}

// ---- round trips --------------------------------------------------------------------

template <class T>
void expectIntegerRoundTrips() {
  using Limits = std::numeric_limits<T>;
  for (T v : {Limits::min(), Limits::max(), T(0), T(1), T(Limits::max() / 2), T(Limits::min() + 1)}) {
    const std::string data = serializeToString(v);
    EXPECT_EQ(data.size(), sizeof(T));
    EXPECT_EQ(deserializeFromString<T>(data), v);
  }
}

TEST(SerializerRoundTrip, AllIntegerTypesAtTheirLimits) {
  expectIntegerRoundTrips<std::int8_t>();
  expectIntegerRoundTrips<std::int16_t>();
  expectIntegerRoundTrips<std::int32_t>();
  expectIntegerRoundTrips<std::int64_t>();
  expectIntegerRoundTrips<std::uint8_t>();
  expectIntegerRoundTrips<std::uint16_t>();
  expectIntegerRoundTrips<std::uint32_t>();
  expectIntegerRoundTrips<std::uint64_t>();
  expectIntegerRoundTrips<char>();
  expectIntegerRoundTrips<signed char>();
  expectIntegerRoundTrips<unsigned char>();
  expectIntegerRoundTrips<short>();
  expectIntegerRoundTrips<unsigned short>();
  expectIntegerRoundTrips<int>();
  expectIntegerRoundTrips<unsigned>();
  expectIntegerRoundTrips<long>();
  expectIntegerRoundTrips<unsigned long>();
  expectIntegerRoundTrips<long long>();
  expectIntegerRoundTrips<unsigned long long>();
  expectIntegerRoundTrips<char8_t>();
  expectIntegerRoundTrips<char16_t>();
  expectIntegerRoundTrips<char32_t>();
}

TEST(SerializerRoundTrip, Bool) {
  expectRoundTrip(true);
  expectRoundTrip(false);
}

template <class T>
void expectFloatRoundTrips() {
  using Limits = std::numeric_limits<T>;
  for (T v : {T(0), T(1.5), T(-3.25), Limits::min(), Limits::max(), Limits::lowest(),
              Limits::denorm_min(), Limits::epsilon(), Limits::infinity(), -Limits::infinity()}) {
    EXPECT_EQ(roundTrip(v), v);
  }
  EXPECT_TRUE(std::signbit(roundTrip(T(-0.0))));
  EXPECT_FALSE(std::signbit(roundTrip(T(0.0))));
  const T nan = Limits::quiet_NaN();
  const T back = roundTrip(nan);
  EXPECT_TRUE(std::isnan(back));
  EXPECT_EQ(serializeToString(back), serializeToString(nan));
}

TEST(SerializerRoundTrip, FloatsIncludingNanInfAndSignedZero) {
  expectFloatRoundTrips<float>();
  expectFloatRoundTrips<double>();
}

TEST(SerializerRoundTrip, Strings) {
  expectRoundTrip(std::string());
  expectRoundTrip(std::string("hello"));
  expectRoundTrip(std::string("a\0b", 3));
  std::string allBytes;
  for (int i = 0; i < 256; ++i) allBytes.push_back(static_cast<char>(i));
  expectRoundTrip(allBytes);
}

TEST(SerializerRoundTrip, SixtyFourMebibyteString) {
  std::string big(64u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 13));
  const std::string data = serializeToString(big);
  // 2^26 as a varint is 4 bytes: 80 80 80 20.
  ASSERT_EQ(data.size(), big.size() + 4);
  EXPECT_EQ(hex(data.substr(0, 4)), "80 80 80 20");
  const std::string back = deserializeFromString<std::string>(data);
  EXPECT_TRUE(back == big);
}

TEST(SerializerRoundTrip, FiveMillionInts) {
  std::vector<std::int32_t> values(5'000'000);
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<std::int32_t>(i * 2654435761u);
  }
  const std::string data = serializeToString(values);
  // 5,000,000 needs 23 bits: a 4-byte varint.
  ASSERT_EQ(data.size(), 4 + values.size() * 4);
  const auto back = deserializeFromString<std::vector<std::int32_t>>(data);
  EXPECT_TRUE(back == values);
  std::int32_t third;
  std::memcpy(&third, data.data() + 4 + 2 * 4, 4);
  EXPECT_EQ(third, static_cast<std::int32_t>(2 * 2654435761u));
}

TEST(SerializerRoundTrip, EmptyContainersAndNullopt) {
  expectRoundTrip(std::vector<std::int32_t>());
  expectRoundTrip(std::vector<std::string>());
  expectRoundTrip(std::map<std::string, std::int32_t>());
  expectRoundTrip(std::unordered_map<std::string, double>());
  expectRoundTrip(std::optional<std::string>());
  expectRoundTrip(std::optional<std::string>(""));
  EXPECT_NE(serializeToString(std::optional<std::string>()),
            serializeToString(std::optional<std::string>("")));
  expectRoundTrip(std::tuple<>());
  expectRoundTrip(Click{});
  expectRoundTrip(Order{});
}

TEST(SerializerRoundTrip, NestedContainers) {
  expectRoundTrip(std::vector<std::vector<std::vector<std::int64_t>>>{{{1, 2}, {}}, {}, {{-3}}});
  expectRoundTrip(std::map<std::string, std::vector<std::map<int, std::string>>>{
      {"x", {{{1, "one"}, {2, ""}}, {}}}, {"", {}}});
  expectRoundTrip(std::vector<std::optional<std::string>>{std::nullopt, "a", ""});
  expectRoundTrip(std::vector<bool>{true, false, false, true});
  expectRoundTrip(std::unordered_map<std::string, std::vector<double>>{{"k", {1.5, -2}}, {"", {}}});
  expectRoundTrip(std::pair<std::string, std::optional<int>>{"p", 7});
  expectRoundTrip(std::tuple<int, std::string, std::vector<double>, std::tuple<>>{
      -1, "t", {0.25}, {}});
  expectRoundTrip(std::optional<std::optional<int>>(std::optional<int>()));
  expectRoundTrip(std::map<std::pair<int, std::string>, std::tuple<bool>>{{{1, "a"}, {true}}});
}

TEST(SerializerRoundTrip, Structs) {
  expectRoundTrip(sampleClick());
  expectRoundTrip(Trade{-5, -0.125, std::nullopt});
  expectRoundTrip(sampleOrder());
  expectRoundTrip(std::vector<Order>{sampleOrder(), Order{}, sampleOrder()});
  Wide wide{};
  int n = 0;
  detail::forEachField(wide, [&](std::string_view, std::int32_t& f) { f = ++n * 1000; });
  const Wide back = roundTrip(wide);
  EXPECT_EQ(back.f1, 1000);
  EXPECT_EQ(back.f17, 17000);
  EXPECT_EQ(back.f32, 32000);
  EXPECT_EQ(serializeToString(wide).size(), 32u * 4);
}

TEST(SerializerRoundTrip, ManyValuesInOneBuffer) {
  DataOutput out;
  Serializer<Click>::serialize(sampleClick(), out);
  out.write<std::int16_t>(-9);
  out.writeString("tail");
  DataInput in(out.data());
  EXPECT_EQ(Serializer<Click>::deserialize(in), sampleClick());
  EXPECT_EQ(in.read<std::int16_t>(), -9);
  EXPECT_EQ(in.readString(), "tail");
  EXPECT_TRUE(in.atEnd());
  EXPECT_EQ(in.remaining(), 0u);
}

// ---- DataOutput / DataInput ---------------------------------------------------------

TEST(DataOutput, ClearKeepsCapacityAndReleaseEmpties) {
  DataOutput out;
  out.writeString(std::string(1000, 'q'));
  const std::size_t capacity = out.data().capacity();
  out.clear();
  EXPECT_EQ(out.size(), 0u);
  EXPECT_EQ(out.data().capacity(), capacity);
  out.write<std::uint8_t>(3);
  std::string released = out.release();
  EXPECT_EQ(released, bytes({3}));
  EXPECT_EQ(out.size(), 0u);
}

TEST(DataInput, ReadsWithoutCopyingAndTracksPosition) {
  const std::string data = bytes({0x03, 'a', 'b', 'c', 0x2a});
  DataInput in(data);
  EXPECT_EQ(in.remaining(), 5u);
  const std::string_view view = in.readStringView();
  EXPECT_EQ(view, "abc");
  EXPECT_EQ(view.data(), data.data() + 1);
  EXPECT_EQ(in.position(), 4u);
  std::uint8_t raw = 0;
  in.readRaw(&raw, 1);
  EXPECT_EQ(raw, 0x2a);
  EXPECT_TRUE(in.atEnd());
}

// ---- schemas, compared with hand-written snapshots ----------------------------------

TEST(TypeSchemaSnapshot, BuiltInNames) {
  EXPECT_EQ(Serializer<bool>::schema(), leaf("bool"));
  EXPECT_EQ(Serializer<std::int8_t>::schema(), leaf("int8"));
  EXPECT_EQ(Serializer<std::int16_t>::schema(), leaf("int16"));
  EXPECT_EQ(Serializer<std::int32_t>::schema(), leaf("int32"));
  EXPECT_EQ(Serializer<std::int64_t>::schema(), leaf("int64"));
  EXPECT_EQ(Serializer<std::uint8_t>::schema(), leaf("uint8"));
  EXPECT_EQ(Serializer<std::uint16_t>::schema(), leaf("uint16"));
  EXPECT_EQ(Serializer<std::uint32_t>::schema(), leaf("uint32"));
  EXPECT_EQ(Serializer<std::uint64_t>::schema(), leaf("uint64"));
  EXPECT_EQ(Serializer<char>::schema(), leaf("int8"));
  EXPECT_EQ(Serializer<int>::schema(), leaf("int32"));
  EXPECT_EQ(Serializer<long long>::schema(), leaf("int64"));
  EXPECT_EQ(Serializer<unsigned long long>::schema(), leaf("uint64"));
  EXPECT_EQ(Serializer<long>::schema(), leaf(sizeof(long) == 8 ? "int64" : "int32"));
  EXPECT_EQ(Serializer<float>::schema(), leaf("float32"));
  EXPECT_EQ(Serializer<double>::schema(), leaf("float64"));
  EXPECT_EQ(Serializer<std::string>::schema(), leaf("string"));
}

TEST(TypeSchemaSnapshot, Containers) {
  EXPECT_EQ(Serializer<std::vector<std::int32_t>>::schema(),
            node("vector", {{"", leaf("int32")}}));
  EXPECT_EQ(Serializer<std::vector<std::int32_t>>::schema().toString(), "vector<int32>");
  const TypeSchema map = node("map", {{"key", leaf("string")}, {"value", leaf("int64")}});
  EXPECT_EQ((Serializer<std::map<std::string, std::int64_t>>::schema()), map);
  EXPECT_EQ((Serializer<std::unordered_map<std::string, std::int64_t>>::schema()), map);
  EXPECT_EQ(map.toString(), "map<string, int64>");
  EXPECT_EQ(Serializer<std::optional<double>>::schema(),
            node("optional", {{"value", leaf("float64")}}));
  EXPECT_EQ((Serializer<std::pair<bool, std::string>>::schema()),
            node("pair", {{"0", leaf("bool")}, {"1", leaf("string")}}));
  EXPECT_EQ((Serializer<std::tuple<std::uint8_t, float, std::string>>::schema()),
            node("tuple", {{"0", leaf("uint8")}, {"1", leaf("float32")}, {"2", leaf("string")}}));
  EXPECT_EQ(Serializer<std::tuple<>>::schema(), leaf("tuple"));
  EXPECT_EQ(Serializer<std::tuple<>>::schema().toString(), "tuple<>");
  EXPECT_EQ((Serializer<std::vector<std::map<int, std::optional<std::string>>>>::schema().toString()),
            "vector<map<int32, optional<string>>>");
}

TEST(TypeSchemaSnapshot, Structs) {
  const TypeSchema click = node("Click", {{"user", leaf("string")},
                                          {"ts", leaf("int64")},
                                          {"tags", node("vector", {{"", leaf("string")}})}});
  EXPECT_EQ(Serializer<Click>::schema(), click);
  EXPECT_EQ(Serializer<Click>::schema().toString(),
            "Click{user:string, ts:int64, tags:vector<string>}");

  const TypeSchema trade = node("Trade", {{"id", leaf("int32")},
                                          {"price", leaf("float64")},
                                          {"venue", node("optional", {{"value", leaf("string")}})}});
  EXPECT_EQ(Serializer<Trade>::schema(), trade);

  const TypeSchema order = node(
      "Order",
      {{"trade", trade},
       {"legs", node("map", {{"key", leaf("string")},
                             {"value", node("vector", {{"", leaf("int32")}})}})},
       {"flags", node("pair", {{"0", leaf("int8")}, {"1", leaf("uint16")}})},
       {"extra", node("tuple", {{"0", leaf("bool")}, {"1", leaf("float32")}, {"2", leaf("string")}})},
       {"clicks", node("map", {{"key", leaf("int64")}, {"value", click}})}});
  EXPECT_EQ(Serializer<Order>::schema(), order);
  EXPECT_EQ(Serializer<Order>::schema().toString(),
            "Order{trade:Trade{id:int32, price:float64, venue:optional<string>}, "
            "legs:map<string, vector<int32>>, flags:pair<int8, uint16>, "
            "extra:tuple<bool, float32, string>, "
            "clicks:map<int64, Click{user:string, ts:int64, tags:vector<string>}>}");
}

TEST(TypeSchemaSnapshot, VersionAndWideStruct) {
  TypeSchema versioned = node("Versioned", {{"a", leaf("int32")}});
  versioned.version = 3;
  EXPECT_EQ(Serializer<Versioned>::schema(), versioned);
  EXPECT_EQ(versioned.toString(), "Versioned@3{a:int32}");

  const TypeSchema wide = Serializer<Wide>::schema();
  ASSERT_EQ(wide.fields.size(), 32u);
  for (std::size_t i = 0; i < 32; ++i) {
    EXPECT_EQ(wide.fields[i].name, "f" + std::to_string(i + 1));
    EXPECT_EQ(wide.fields[i].type, leaf("int32"));
  }
}

TEST(TypeSchemaSnapshot, EqualityNoticesEveryDifference) {
  const TypeSchema base = node("S", {{"a", leaf("int32")}});
  TypeSchema other = base;
  EXPECT_EQ(other, base);
  other.version = 2;
  EXPECT_NE(other, base);
  other = base;
  other.fields[0].name = "b";
  EXPECT_NE(other, base);
  other = base;
  other.fields[0].type = leaf("int64");
  EXPECT_NE(other, base);
  other = base;
  other.typeName = "T";
  EXPECT_NE(other, base);
  other = base;
  other.fields.push_back({"c", leaf("bool")});
  EXPECT_NE(other, base);
}

TEST(TypeSchemaWire, ExactBytesOfASimpleSchema) {
  DataOutput out;
  node("vector", {{"", leaf("int32")}}).write(out);
  EXPECT_EQ(out.data(), bytes({6, 'v', 'e', 'c', 't', 'o', 'r', 1, 1, 0, 5, 'i', 'n', 't', '3', '2',
                               1, 0}));
}

TEST(TypeSchemaWire, RoundTrip) {
  for (const TypeSchema& schema :
       {Serializer<Order>::schema(), Serializer<Versioned>::schema(), Serializer<Wide>::schema(),
        Serializer<std::tuple<>>::schema(), leaf("")}) {
    DataOutput out;
    schema.write(out);
    DataInput in(out.data());
    EXPECT_EQ(TypeSchema::read(in), schema);
    EXPECT_TRUE(in.atEnd());
  }
}

TEST(TypeSchemaWire, CorruptSchemasThrow) {
  DataOutput out;
  Serializer<Order>::schema().write(out);
  const std::string full = out.data();
  for (std::size_t length = 0; length < full.size(); ++length) {
    DataInput in(std::string_view(full).substr(0, length));
    EXPECT_THROW(TypeSchema::read(in), SerializationError) << "prefix " << length;
  }

  // 100 levels of single-field nesting: rejected at depth 64, without deep recursion.
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += bytes({1, 'x', 1, 1, 0});
  deep += bytes({1, 'x', 1, 0});
  {
    DataInput in(deep);
    EXPECT_THROW(TypeSchema::read(in), SerializationError);
  }

  // A version above 2^32.
  {
    const std::string data = bytes({1, 'x', 0x80, 0x80, 0x80, 0x80, 0x10, 0});
    DataInput in(data);
    EXPECT_THROW(TypeSchema::read(in), SerializationError);
  }

  // A field count far larger than the input.
  {
    gLargestAllocation = 0;
    const std::string data = bytes({1, 'x', 1, 0xff, 0xff, 0xff, 0xff, 0x0f});
    DataInput in(data);
    EXPECT_THROW(TypeSchema::read(in), SerializationError);
    EXPECT_LT(gLargestAllocation.load(), 4096u);
  }
}

// ---- corrupt input ------------------------------------------------------------------

template <class T>
void expectEveryPrefixThrows(const T& value) {
  const std::string full = serializeToString(value);
  ASSERT_EQ(deserializeFromString<T>(full), value);
  for (std::size_t length = 0; length < full.size(); ++length) {
    EXPECT_THROW(deserializeFromString<T>(std::string_view(full).substr(0, length)),
                 SerializationError)
        << "prefix of " << length << " of " << full.size() << " bytes";
  }
}

TEST(SerializerCorruptInput, EveryTruncationThrows) {
  expectEveryPrefixThrows(sampleOrder());
  expectEveryPrefixThrows(std::vector<Click>{sampleClick(), Click{}, sampleClick()});
  expectEveryPrefixThrows(std::map<std::string, std::vector<std::optional<std::string>>>{
      {"k", {"v", std::nullopt, ""}}, {"", {}}});
  expectEveryPrefixThrows(std::vector<std::int64_t>{1, 2, 3});
  expectEveryPrefixThrows(std::numeric_limits<std::uint64_t>::max());
}

TEST(SerializerCorruptInput, RandomByteFlipsThrowOrDecodeNeverCrash) {
  const std::string full = serializeToString(sampleOrder());
  std::mt19937 random(12345);
  int thrown = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string data = full;
    const int flips = 1 + static_cast<int>(random() % 3);
    for (int i = 0; i < flips; ++i) {
      data[random() % data.size()] = static_cast<char>(random());
    }
    try {
      deserializeFromString<Order>(data);
    } catch (const SerializationError&) {
      ++thrown;
    }
  }
  EXPECT_GT(thrown, 0);
}

TEST(SerializerCorruptInput, HugeLengthPrefixThrowsWithoutAllocating) {
  const std::string hugeVarint = bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f});
  const std::string gigabyte = bytes({0x80, 0x80, 0x80, 0x80, 0x04});  // 2^30
  const std::string tail = bytes({1, 2, 3});

  gLargestAllocation = 0;
  EXPECT_THROW(deserializeFromString<std::string>(hugeVarint + tail), SerializationError);
  EXPECT_THROW(deserializeFromString<std::string>(gigabyte + tail), SerializationError);
  EXPECT_THROW(deserializeFromString<std::vector<std::int32_t>>(gigabyte + tail),
               SerializationError);
  EXPECT_THROW(deserializeFromString<std::vector<std::string>>(hugeVarint + tail),
               SerializationError);
  EXPECT_THROW(deserializeFromString<std::vector<Click>>(gigabyte + tail), SerializationError);
  EXPECT_THROW((deserializeFromString<std::map<std::int64_t, std::string>>(gigabyte + tail)),
               SerializationError);
  EXPECT_THROW((deserializeFromString<std::unordered_map<std::string, int>>(gigabyte + tail)),
               SerializationError);
  EXPECT_LT(gLargestAllocation.load(), 4096u);

  // A vector<int64> of 2 elements needs 16 bytes; 15 remain.
  EXPECT_THROW(deserializeFromString<std::vector<std::int64_t>>(bytes({2}) + std::string(15, 'x')),
               SerializationError);
}

TEST(SerializerCorruptInput, MessagesSayWhatAndHowManyBytesAreMissing) {
  try {
    deserializeFromString<std::int32_t>(bytes({1, 2}));
    FAIL() << "no exception";
  } catch (const SerializationError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("int32"), std::string::npos) << message;
    EXPECT_NE(message.find("2 missing"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(e.code(), ErrorCode::kSerialization);
  }
  try {
    deserializeFromString<std::string>(bytes({10, 'a', 'b'}));
    FAIL() << "no exception";
  } catch (const SerializationError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("string length"), std::string::npos) << message;
    EXPECT_NE(message.find("8 missing"), std::string::npos) << message;
  }
}

TEST(SerializerCorruptInput, BadVarints) {
  const std::string elevenBytes(11, static_cast<char>(0x80));
  EXPECT_THROW(deserializeFromString<std::string>(elevenBytes), SerializationError);
  // Ten bytes whose last carries more than bit 63.
  for (int last : {0x02, 0x03, 0x7f, 0x81}) {
    const std::string data = std::string(9, static_cast<char>(0x80)) + bytes({last});
    DataInput in(data);
    EXPECT_THROW(in.readVarint(), SerializationError) << "last byte " << last;
  }
  EXPECT_THROW(deserializeFromString<std::string>(bytes({0x80, 0x80})), SerializationError);
  DataInput in(std::string_view("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10));
  EXPECT_EQ(in.readVarint(), std::numeric_limits<std::uint64_t>::max());
}

TEST(SerializerCorruptInput, InvalidTagBytesAndDuplicateKeys) {
  EXPECT_THROW(deserializeFromString<bool>(bytes({2})), SerializationError);
  EXPECT_THROW(deserializeFromString<std::optional<int>>(bytes({7, 0, 0, 0, 0})),
               SerializationError);
  EXPECT_THROW((deserializeFromString<std::map<std::uint8_t, bool>>(bytes({2, 5, 1, 5, 0}))),
               SerializationError);
  EXPECT_THROW((deserializeFromString<std::unordered_map<std::uint8_t, bool>>(bytes({2, 5, 1, 5, 0}))),
               SerializationError);
}

TEST(SerializerCorruptInput, TrailingBytesRejected) {
  EXPECT_THROW(deserializeFromString<std::int32_t>(bytes({7, 0, 0, 0, 0})), SerializationError);
  EXPECT_THROW(deserializeFromString<std::string>(bytes({1, 'a', 'b'})), SerializationError);
  EXPECT_THROW(deserializeFromString<std::tuple<>>(bytes({0})), SerializationError);
  EXPECT_THROW(deserializeFromString<Click>(serializeToString(sampleClick()) + "x"),
               SerializationError);
}

// ---- field visiting -----------------------------------------------------------------

TEST(ForEachField, VisitsInDeclarationOrderAndAllowsMutation) {
  Click click = sampleClick();
  std::vector<std::string> names;
  detail::forEachField(static_cast<const Click&>(click),
                       [&](std::string_view name, const auto&) { names.emplace_back(name); });
  EXPECT_EQ(names, (std::vector<std::string>{"user", "ts", "tags"}));
  detail::forEachField(click, [](std::string_view name, auto& value) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, std::int64_t>) {
      EXPECT_EQ(name, "ts");
      value = 99;
    }
  });
  EXPECT_EQ(click.ts, 99);
}

// ---- display ------------------------------------------------------------------------

struct Money {
  long cents = 0;
};
std::ostream& operator<<(std::ostream& os, const Money& m) {
  return os << '$' << m.cents / 100 << '.' << (m.cents % 100 < 10 ? "0" : "") << m.cents % 100;
}

enum class Color { kRed = 2 };

TEST(FormatValue, Scalars) {
  EXPECT_EQ(toDisplayString(42), "42");
  EXPECT_EQ(toDisplayString(-7L), "-7");
  EXPECT_EQ(toDisplayString(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(toDisplayString(true), "true");
  EXPECT_EQ(toDisplayString(false), "false");
  EXPECT_EQ(toDisplayString(std::int8_t{-5}), "-5");
  EXPECT_EQ(toDisplayString('A'), "65");
  EXPECT_EQ(toDisplayString(1.5), "1.5");
  EXPECT_EQ(toDisplayString(0.1), "0.1");
  EXPECT_EQ(toDisplayString(0.1f), "0.1");
  EXPECT_EQ(toDisplayString(1e300), "1e+300");
  EXPECT_EQ(toDisplayString(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(toDisplayString(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(toDisplayString(Color::kRed), "2");
  std::ostringstream os;
  os << std::hex;
  formatValue(os, 255);
  EXPECT_EQ(os.str(), "255");
}

TEST(FormatValue, StringsAreQuotedOnlyWhenNested) {
  EXPECT_EQ(toDisplayString(std::string("hi there")), "hi there");
  EXPECT_EQ(toDisplayString(std::string_view("sv")), "sv");
  EXPECT_EQ(toDisplayString("literal"), "literal");
  EXPECT_EQ(toDisplayString(std::vector<std::string>{"a", "b\"c", "d\\e", "x\ny"}),
            R"(["a", "b\"c", "d\\e", "x\ny"])");
  EXPECT_EQ(toDisplayString(std::optional<std::string>("x")), "\"x\"");
}

TEST(FormatValue, Containers) {
  EXPECT_EQ(toDisplayString(std::vector<int>{1, 2, 3}), "[1, 2, 3]");
  EXPECT_EQ(toDisplayString(std::vector<int>()), "[]");
  EXPECT_EQ(toDisplayString(std::vector<bool>{true, false}), "[true, false]");
  EXPECT_EQ(toDisplayString(std::set<int>{3, 1}), "[1, 3]");
  EXPECT_EQ(toDisplayString(std::map<std::string, int>{{"b", 2}, {"a", 1}}), R"({"a"=1, "b"=2})");
  EXPECT_EQ(toDisplayString(std::map<int, int>()), "{}");
  EXPECT_EQ(toDisplayString(std::unordered_map<int, std::vector<int>>{{1, {2}}}), "{1=[2]}");
  EXPECT_EQ(toDisplayString(std::optional<int>()), "null");
  EXPECT_EQ(toDisplayString(std::optional<int>(5)), "5");
  EXPECT_EQ(toDisplayString(std::pair<int, std::string>{1, "x"}), R"((1, "x"))");
  EXPECT_EQ(toDisplayString(std::tuple<int, double, bool>{1, 2.5, false}), "(1, 2.5, false)");
  EXPECT_EQ(toDisplayString(std::tuple<>()), "()");
  EXPECT_EQ(toDisplayString(std::vector<std::optional<int>>{std::nullopt, 1}), "[null, 1]");
  const int array[] = {4, 5};
  EXPECT_EQ(toDisplayString(array), "[4, 5]");
}

TEST(FormatValue, StructsAndOperatorStream) {
  EXPECT_EQ(toDisplayString(Click{"u", 5, {"a", "b"}}), R"(Click{user="u", ts=5, tags=["a", "b"]})");
  EXPECT_EQ(toDisplayString(Trade{1, 2.5, std::nullopt}), "Trade{id=1, price=2.5, venue=null}");
  Order order;
  order.trade = Trade{3, 0.5, std::string("X")};
  order.legs = {{"l", {1}}};
  order.flags = {-1, 2};
  order.extra = {true, 1.25f, "e"};
  order.clicks = {{9, Click{"v", 1, {}}}};
  EXPECT_EQ(toDisplayString(order),
            R"(Order{trade=Trade{id=3, price=0.5, venue="X"}, legs={"l"=[1]}, flags=(-1, 2), )"
            R"(extra=(true, 1.25, "e"), clicks={9=Click{user="v", ts=1, tags=[]}}})");
  EXPECT_EQ(toDisplayString(Money{123}), "$1.23");
  EXPECT_EQ(toDisplayString(std::vector<Money>{{5}, {250}}), "[$0.05, $2.50]");
}

}  // namespace
}  // namespace weir
