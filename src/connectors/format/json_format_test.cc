#include "weir/json_format.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weir {
namespace {

struct Address {
  std::string city;
  std::optional<int32_t> zip;
  bool operator==(const Address&) const = default;
};
WEIR_STRUCT(Address, city, zip);

struct Person {
  std::string name;
  int64_t id = 0;
  double score = 0;
  bool active = false;
  Address home;
  std::vector<Address> past;
  std::vector<int32_t> lucky;
  std::optional<std::string> nickname;
  std::map<std::string, int64_t> counts;
  std::pair<int32_t, std::string> tag;
  bool operator==(const Person&) const = default;
};
WEIR_STRUCT(Person, name, id, score, active, home, past, lucky, nickname, counts, tag);

Person decode(const std::string& text) {
  Person p;
  JsonDeserializationSchema<Person>().deserialize(text, p);
  return p;
}

std::string errorOf(const std::string& text) {
  try {
    decode(text);
  } catch (const SerializationError& e) {
    return e.what();
  }
  return "no error";
}

const char* kFull = R"({"name":"Ann \"A\" Lee","id":-9007199254740993,"score":2.5,"active":true,
  "home":{"city":"Oslo","zip":150},"past":[{"city":"Bergen","zip":null},{"city":"Tromsø"}],
  "lucky":[7,13],"nickname":"annie","counts":{"a":1,"b":2},"tag":[3,"x"],"ignored":{"deep":[1,2]}})";

TEST(JsonFormat, DecodesStructsByFieldNameWithNestingVectorsOptionalsAndMaps) {
  Person p = decode(kFull);
  Person expected{"Ann \"A\" Lee", -9007199254740993LL, 2.5, true, Address{"Oslo", 150},
                  {Address{"Bergen", std::nullopt}, Address{"Tromsø", std::nullopt}}, {7, 13},
                  "annie", {{"a", 1}, {"b", 2}}, {3, "x"}};
  EXPECT_EQ(p, expected);
}

TEST(JsonFormat, SerializedRecordsDecodeToThemselves) {
  Person p = decode(kFull);
  std::string text = JsonSerializationSchema<Person>().serialize(p);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(decode(text), p);
  // An optional without a value is null, and decodes back to none.
  p.nickname.reset();
  p.home.zip.reset();
  text = JsonSerializationSchema<Person>().serialize(p);
  EXPECT_NE(text.find(R"("nickname":null)"), std::string::npos) << text;
  EXPECT_EQ(decode(text), p);
}

TEST(JsonFormat, AMissingOptionalMemberIsNoneAndAMissingRequiredOneIsAnError) {
  std::string text = kFull;
  auto without = [&](const std::string& member) {
    std::string t = text;
    auto at = t.find(member);
    t.replace(at, std::string(member).size(), "\"x\":0,");
    return t;
  };
  EXPECT_EQ(decode(without(R"("nickname":"annie",)")).nickname, std::nullopt);
  EXPECT_EQ(errorOf(without(R"("id":-9007199254740993,)")), "JSON member 'id' is missing");
}

TEST(JsonFormat, ATypeMismatchNamesThePathAndWhatWasFound) {
  auto replaced = [](const std::string& from, const std::string& to) {
    std::string t = kFull;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_EQ(errorOf(replaced(R"("city":"Bergen")", R"("city":5)")),
            "JSON member 'past[0].city': expected a string, found a number");
  EXPECT_EQ(errorOf(replaced(R"("lucky":[7,13])", R"("lucky":[7,"13"])")),
            "JSON member 'lucky[1]': expected an integer, found a string");
  EXPECT_EQ(errorOf(replaced(R"("active":true)", R"("active":"yes")")),
            "JSON member 'active': expected true or false, found a string");
  EXPECT_EQ(errorOf(replaced(R"("home":{"city":"Oslo","zip":150})", R"("home":[1])")),
            "JSON member 'home': expected an object, found an array");
  EXPECT_EQ(errorOf("[1,2]"), "JSON value: expected an object, found an array");
}

TEST(JsonFormat, IntegersMustFitTheirFieldAndHaveNoFraction) {
  auto withZip = [](const std::string& zip) {
    std::string t = kFull;
    t.replace(t.find("\"zip\":150"), 9, "\"zip\":" + zip);
    return t;
  };
  EXPECT_EQ(decode(withZip("2147483647")).home.zip, 2147483647);
  EXPECT_EQ(errorOf(withZip("2147483648")), "JSON member 'home.zip': 2147483648 is out of range");
  EXPECT_EQ(errorOf(withZip("1.5")), "JSON member 'home.zip': expected an integer, found a number");
  EXPECT_EQ(errorOf(withZip("18446744073709551615")), "JSON member 'home.zip': 18446744073709551615 is out of range");
}

TEST(JsonFormat, MalformedTextSaysWhereAndWhy) {
  for (const std::string bad : {"", "{", R"({"name":"x",})", "nul", R"({"name":"x"} trailing)"}) {
    std::string what = errorOf(bad);
    EXPECT_EQ(what.rfind("invalid JSON: ", 0), 0u) << bad << " -> " << what;
    EXPECT_NE(what.find("parse error"), std::string::npos) << what;
  }
}

// A number beyond double's range is malformed input too (nlohmann-json reports it as
// out of range, not as a parse error): a bad record, not a crash of the job.
TEST(JsonFormat, ANumberOutOfRangeIsMalformed) {
  std::string what = errorOf(R"({"name":"x","score":1e400})");
  EXPECT_EQ(what.rfind("invalid JSON: number overflow", 0), 0u) << what;
}

TEST(JsonFormat, AStringThatIsNotUtf8CannotBeWritten) {
  std::string bytes = "\xff\xfe";
  EXPECT_THROW(JsonSerializationSchema<std::string>().serialize(bytes), SerializationError);
}

TEST(JsonFormat, PlainTypesAreValuesOfTheirOwn) {
  std::vector<std::optional<double>> v;
  JsonDeserializationSchema<std::vector<std::optional<double>>>().deserialize("[1, null, 2.25]", v);
  EXPECT_EQ(v, (std::vector<std::optional<double>>{1.0, std::nullopt, 2.25}));
  EXPECT_EQ(JsonSerializationSchema<std::vector<std::optional<double>>>().serialize(v), "[1.0,null,2.25]");
}

}  // namespace
}  // namespace weir
