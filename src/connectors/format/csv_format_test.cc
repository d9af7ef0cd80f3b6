#include "weir/csv_format.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>

namespace weir {
namespace {

struct Trade {
  std::string symbol;
  int64_t quantity = 0;
  double price = 0;
  bool buy = false;
  std::optional<std::string> note;
  bool operator==(const Trade&) const = default;
};
WEIR_STRUCT(Trade, symbol, quantity, price, buy, note);

Trade decode(const std::string& record, CsvSchema schema = CsvSchema()) {
  Trade t;
  CsvDeserializationSchema<Trade>(schema).deserialize(record, t);
  return t;
}

std::string errorOf(const std::string& record) {
  try {
    decode(record);
  } catch (const SerializationError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CsvFormat, DecodesFieldsByPositionWithRfc4180Quoting) {
  EXPECT_EQ(decode("ACME,10,2.5,true,"), (Trade{"ACME", 10, 2.5, true, std::nullopt}));
  EXPECT_EQ(decode(R"("A,B",-3,1e3,false,"said ""hi""")"), (Trade{"A,B", -3, 1000, false, "said \"hi\""}));
  EXPECT_EQ(decode("\"two\r\nlines\",0,0,false,\"\""), (Trade{"two\r\nlines", 0, 0, false, std::nullopt}));
}

// Serialized, any struct decodes to itself: separators, quotes and line ends in strings
// are quoted, numbers are written exactly.
TEST(CsvFormat, RandomRecordsDecodeToThemselves) {
  std::mt19937_64 random(42);
  const std::string alphabet = "ab ,\"\n\r;x\t";
  auto text = [&] {
    std::string s;
    for (size_t n = random() % 8; n > 0; --n) s += alphabet[random() % alphabet.size()];
    return s;
  };
  for (char separator : {',', ';', '\t'}) {
    CsvSchema schema = CsvSchema().withColumnSeparator(separator);
    CsvSerializationSchema<Trade> out(schema);
    for (int i = 0; i < 2000; ++i) {
      Trade t{text(), static_cast<int64_t>(random()), std::ldexp(static_cast<double>(random() % 100000), -7),
              random() % 2 == 0, std::nullopt};
      if (random() % 2 == 0) t.note = "n" + text();  // a note that is there is never empty
      std::string record = out.serialize(t);
      EXPECT_EQ(decode(record, schema), t) << record;
    }
  }
}

TEST(CsvFormat, MalformedRecordsSayWhichColumnAndWhy) {
  EXPECT_EQ(errorOf("ACME,10,2.5,true"), "CSV record has 4 columns, expected 5");
  EXPECT_EQ(errorOf("ACME,10,2.5,true,,"), "CSV record has 6 columns, expected 5");
  EXPECT_EQ(errorOf("ACME,ten,2.5,true,"), "CSV column 2 ('quantity'): 'ten' is not an integer that fits");
  EXPECT_EQ(errorOf("ACME,99999999999999999999,2.5,true,"),
            "CSV column 2 ('quantity'): '99999999999999999999' is not an integer that fits");
  EXPECT_EQ(errorOf("ACME,10, 2.5,true,"), "CSV column 3 ('price'): ' 2.5' is not a number");
  EXPECT_EQ(errorOf("ACME,10,2.5,yes,"), "CSV column 4 ('buy'): 'yes' is not true or false");
  EXPECT_EQ(errorOf("\"ACME,10,2.5,true,"), "CSV column 1: a quoted field is not closed");
  EXPECT_EQ(errorOf("\"AC\"ME,10,2.5,true,"), "CSV column 1: 'M' after the closing quote (a quote inside a field is doubled)");
  EXPECT_EQ(errorOf("AC\"ME,10,2.5,true,"), "CSV column 1: a quote inside an unquoted field");
}

TEST(CsvFormat, AHeaderMatchesColumnsToFieldsByName) {
  auto format = CsvReaderFormat<Trade>::forStruct(CsvSchema().withHeader());
  auto decoder = format.createDecoder();
  Trade t;
  EXPECT_FALSE(decoder->decode("price,buy,symbol,quantity", t));  // no note column: it is optional
  ASSERT_TRUE(decoder->decode("1.5,true,XYZ,7", t));
  EXPECT_EQ(t, (Trade{"XYZ", 7, 1.5, true, std::nullopt}));
  EXPECT_FALSE(decoder->decode("", t));  // blank lines are no records
}

TEST(CsvFormat, AHeaderThatDoesNotFitTheStructIsAnErrorNamingTheColumns) {
  auto headerError = [](const std::string& header, CsvSchema schema) {
    auto decoder = CsvReaderFormat<Trade>::forStruct(schema).createDecoder();
    Trade t;
    try {
      decoder->decode(header, t);
    } catch (const SerializationError& e) {
      return std::string("a bad record: ") + e.what();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CsvSchema header = CsvSchema().withHeader();
  EXPECT_EQ(headerError("symbol,price,buy", header),
            "CSV format: the header has no column for field 'quantity' of the struct");
  EXPECT_EQ(headerError("symbol,quantity,price,buy,venue,desk", header),
            "CSV format: the header has column 'venue', 'desk' that no field of the struct has "
            "(CsvSchema::withIgnoreUnknownColumns accepts them)");
  EXPECT_EQ(headerError("symbol,quantity,price,buy,symbol", header), "CSV format: the header names column 'symbol' twice");
  EXPECT_EQ(headerError("symbol,quantity,price,buy,venue", CsvSchema().withHeader().withIgnoreUnknownColumns()),
            "no error");
}

TEST(CsvFormat, BadOptionsAreRefused) {
  EXPECT_THROW(CsvSchema().withColumnSeparator('"'), Error);
  EXPECT_THROW(CsvSchema().withColumnSeparator('\n'), Error);
  EXPECT_THROW(CsvSchema().withQuoteChar(','), Error);
  EXPECT_EQ(decode("'a;b';1;2;true;", CsvSchema().withColumnSeparator(';').withQuoteChar('\'')).symbol, "a;b");
}

TEST(CsvFormat, TheHeaderLineNamesTheFields) {
  EXPECT_EQ(CsvSerializationSchema<Trade>().header(), "symbol,quantity,price,buy,note");
}

}  // namespace
}  // namespace weir
