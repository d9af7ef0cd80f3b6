// Values written with one version of a WEIR_STRUCT, migrated to the next by the field
// rules (added fields take their defaults, removed ones go, reordered ones are found by
// name) or by a WEIR_STRUCT_UPGRADE, are read back as the new type with the values a
// hand-made conversion gives; every other change is refused naming the field.
#include "core/schema_migration.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

// The same structs as two versions of a job declare them.
namespace v1 {
struct Point {
  int32_t x = 0;
  int32_t y = 0;
};
WEIR_STRUCT(Point, x, y);
struct Order {
  std::string item;
  int64_t quantity = 0;
  std::string note;  // removed in v2
  Point where;
};
WEIR_STRUCT(Order, item, quantity, note, where);
}  // namespace v1

namespace v2 {
struct Point {
  int32_t y = 0;  // reordered
  int32_t x = 0;
  int32_t z = -1;  // new, with a default
};
WEIR_STRUCT(Point, y, x, z);
struct Order {
  Point where;  // reordered
  std::vector<std::string> tags = {"new"};  // new, with a default
  std::string item;
  int64_t quantity = 0;
  double price = 2.5;  // new
};
WEIR_STRUCT(Order, where, tags, item, quantity, price);
bool operator==(const Point& a, const Point& b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
bool operator==(const Order& a, const Order& b) {
  return a.where == b.where && a.tags == b.tags && a.item == b.item && a.quantity == b.quantity && a.price == b.price;
}
}  // namespace v2

// A change the rules cannot make: quantity from int64 to double.
namespace retyped {
struct Order {
  std::string item;
  double quantity = 0;
};
WEIR_STRUCT(Order, item, quantity);
}  // namespace retyped

// Version 2 of a Point that stores polar coordinates: an upgrade from version 1.
namespace polar {
struct PointV1 {
  int32_t x = 0;
  int32_t y = 0;
};
WEIR_STRUCT(PointV1, x, y);
struct Point {
  int64_t squaredLength = 0;
  bool onAxis = false;
};
WEIR_STRUCT(Point, squaredLength, onAxis);
WEIR_STRUCT_VERSION(Point, 2);
WEIR_STRUCT_UPGRADE(Point, 1, PointV1, [](const PointV1& p) {
  return Point{int64_t{p.x} * p.x + int64_t{p.y} * p.y, p.x == 0 || p.y == 0};
});
}  // namespace polar
namespace unupgraded {
struct Point {
  int32_t x = 0;
  int32_t y = 0;
};
WEIR_STRUCT(Point, x, y);
WEIR_STRUCT_VERSION(Point, 2);
}  // namespace unupgraded

// A type with a Serializer of its own: weir sees no fields in it.
struct Opaque {
  std::string text;
  bool operator<(const Opaque& o) const { return text < o.text; }
};
template <>
struct weir::Serializer<Opaque> {
  static void serialize(const Opaque& v, DataOutput& out) { out.writeString(v.text); }
  static Opaque deserialize(DataInput& in) { return {in.readString()}; }
  static TypeSchema schema() { return {"Opaque", 1, {}}; }
};

namespace weir::detail {
namespace {

template <class Old, class New>
New migrated(const Old& value) {
  SchemaMigration m(Serializer<Old>::schema(), Serializer<New>::schema(), "state.value");
  return deserializeFromString<New>(m.migrate(serializeToString(value)));
}

template <class Old, class New>
std::string refusal() {
  try {
    SchemaMigration m(Serializer<Old>::schema(), Serializer<New>::schema(), "state.value");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kState);
    return e.what();
  }
  return "";
}

v2::Order byHand(const v1::Order& o) {
  v2::Order n;  // the defaults of the new fields
  n.where.x = o.where.x;
  n.where.y = o.where.y;
  n.item = o.item;
  n.quantity = o.quantity;
  return n;
}

TEST(SchemaMigration, FieldsAreAddedWithTheirDefaultsDroppedAndFoundByName) {
  v1::Order old{"apple", 7, "gone", {3, -4}};
  v2::Order now = migrated<v1::Order, v2::Order>(old);
  EXPECT_EQ(now, byHand(old));
  EXPECT_EQ(now.where.z, -1);
  EXPECT_EQ(now.tags, std::vector<std::string>{"new"});
  EXPECT_EQ(now.price, 2.5);
}

TEST(SchemaMigration, InsideContainersEveryElementMigrates) {
  std::vector<v1::Order> list = {{"a", 1, "x", {1, 2}}, {"b", 2, "", {5, 6}}, {"c", 3, "yy", {0, 0}}};
  auto migratedList = migrated<std::vector<v1::Order>, std::vector<v2::Order>>(list);
  ASSERT_EQ(migratedList.size(), 3u);
  for (size_t i = 0; i < list.size(); ++i) EXPECT_EQ(migratedList[i], byHand(list[i]));

  std::map<std::string, v1::Point> byName = {{"p", {1, 2}}, {"q", {3, 4}}};
  auto migratedMap = migrated<std::map<std::string, v1::Point>, std::map<std::string, v2::Point>>(byName);
  EXPECT_EQ(migratedMap, (std::map<std::string, v2::Point>{{"p", {2, 1, -1}}, {"q", {4, 3, -1}}}));

  using OldPair = std::pair<std::optional<v1::Point>, std::optional<v1::Point>>;
  using NewPair = std::pair<std::optional<v2::Point>, std::optional<v2::Point>>;
  NewPair pair = migrated<OldPair, NewPair>(OldPair{v1::Point{9, 8}, std::nullopt});
  EXPECT_EQ(pair, (NewPair{v2::Point{8, 9, -1}, std::nullopt}));
}

TEST(SchemaMigration, EqualSchemasKeepTheirBytes) {
  SchemaMigration m(Serializer<v1::Order>::schema(), Serializer<v1::Order>::schema(), "state.value");
  EXPECT_TRUE(m.identity());
  std::string bytes = serializeToString(v1::Order{"z", 1, "n", {1, 1}});
  EXPECT_EQ(m.migrate(bytes), bytes);
  EXPECT_FALSE((SchemaMigration(Serializer<v1::Point>::schema(), Serializer<v2::Point>::schema(), "v").identity()));
}

TEST(SchemaMigration, AFieldOfAnotherTypeIsRefusedNamingItsPathAndBothTypes) {
  EXPECT_EQ((refusal<v1::Order, retyped::Order>()), "'state.value.quantity' was int64, is now float64");
  EXPECT_EQ((refusal<std::vector<int32_t>, std::vector<int64_t>>()), "'state.value[]' was int32, is now int64");
  EXPECT_EQ((refusal<std::vector<int32_t>, std::optional<int32_t>>()),
            "'state.value' was vector<int32>, is now optional<int32>");
  EXPECT_EQ((refusal<v1::Point, v1::Order>()).substr(0, 31), "'state.value' was Point{x:int32");
}

// A part written by a Serializer of the job's own cannot be skipped: a value that must be
// rewritten around one is refused, never misread.
TEST(SchemaMigration, AroundATypeWithItsOwnSerializerItIsRefused) {
  EXPECT_EQ((refusal<std::map<Opaque, v1::Point>, std::map<Opaque, v2::Point>>()),
            "'state.value.key' (Opaque) is written by a Serializer of the job's own, so weir cannot migrate the "
            "value around it");
  EXPECT_EQ((refusal<std::vector<std::pair<Opaque, v1::Point>>, std::vector<std::pair<Opaque, v2::Point>>>()),
            "'state.value[].0' (Opaque) is written by a Serializer of the job's own, so weir cannot migrate the "
            "value around it");
  EXPECT_TRUE((SchemaMigration(Serializer<std::map<Opaque, int>>::schema(), Serializer<std::map<Opaque, int>>::schema(),
                               "state.value")
                   .identity()));
}

TEST(SchemaMigration, AnotherVersionGoesThroughItsUpgrade) {
  auto point = migrated<v1::Point, polar::Point>(v1::Point{3, 4});
  EXPECT_EQ(point.squaredLength, 25);
  EXPECT_FALSE(point.onAxis);
  // The recorded fields first become the upgrade's old type by the field rules.
  auto reordered = migrated<v2::Point, polar::Point>(v2::Point{0, 5, 7});
  EXPECT_EQ(reordered.squaredLength, 25);
  EXPECT_TRUE(reordered.onAxis);
  auto inList = migrated<std::vector<v1::Point>, std::vector<polar::Point>>({{1, 1}, {0, 2}});
  ASSERT_EQ(inList.size(), 2u);
  EXPECT_EQ(inList[0].squaredLength, 2);
  EXPECT_EQ(inList[1].squaredLength, 4);
  EXPECT_TRUE(inList[1].onAxis);
}

TEST(SchemaMigration, AnotherVersionWithoutAnUpgradeIsRefused) {
  EXPECT_EQ((refusal<v1::Point, unupgraded::Point>()),
            "'state.value' was Point{x:int32, y:int32}, is now Point@2{x:int32, y:int32}, and no "
            "WEIR_STRUCT_UPGRADE(Point, 1, ...) says how to make its values");
}

TEST(SchemaMigration, CorruptBytesAreASerializationError) {
  SchemaMigration m(Serializer<v1::Order>::schema(), Serializer<v2::Order>::schema(), "state.value");
  std::string bytes = serializeToString(v1::Order{"apple", 7, "note", {3, 4}});
  EXPECT_THROW(m.migrate(bytes.substr(0, bytes.size() - 1)), SerializationError);
  EXPECT_THROW(m.migrate(bytes + "x"), SerializationError);
}

}  // namespace
}  // namespace weir::detail
