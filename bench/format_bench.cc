#include "format_bench.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness.h"
#include "nexmark/model.h"
#include "weir/csv_format.h"
#include "weir/json_format.h"
#include "weir/weir.h"

namespace weir::bench {

namespace {

namespace fs = std::filesystem;

// Nexmark's bid: numbers and strings, as a Kafka topic of bids would hold them.
using nexmark::Bid;

constexpr int64_t kRecords = 2'000'000;

Bid bidOf(int64_t i) {
  return Bid{1000 + i % 9973, 2000 + i % 7919, 100 + i % 100000, i % 2 == 0 ? "Google" : "Facebook",
             "https://www.nexmark.com/" + std::to_string(i % 1000) + "/item.htm?query=1", 1700000000000 + i, ""};
}

// The file a bench reads, written once; removed with the folder at the end.
template <class Schema>
std::string writeFile(const fs::path& dir, const std::string& name, Schema schema) {
  fs::create_directories(dir);
  std::string path = (dir / name).string();
  std::ofstream out(path, std::ios::binary);
  for (int64_t i = 0; i < kRecords; ++i) out << schema.serialize(bidOf(i)) << '\n';
  return path;
}

// Adds up the prices of the bids it gets.
struct PriceSum final : Sink<Bid> {
  explicit PriceSum(std::shared_ptr<std::atomic<int64_t>> s) : sum(std::move(s)) {}
  struct Writer final : SinkWriter<Bid> {
    explicit Writer(std::shared_ptr<std::atomic<int64_t>> s) : sum(std::move(s)) {}
    void flush(bool endOfInput) override {
      if (endOfInput) *sum += std::exchange(prices, 0);
    }
    void write(const Bid& bid) override { prices += bid.price; }
    std::shared_ptr<std::atomic<int64_t>> sum;
    int64_t prices = 0;
  };
  std::unique_ptr<SinkWriter<Bid>> createWriter(RuntimeContext&) const override { return std::make_unique<Writer>(sum); }
  std::shared_ptr<std::atomic<int64_t>> sum;
};

// FileSource with `format` into a sink that checks the sum of prices, against `loop`.
template <class Format, class Loop>
void compare(const char* name, int runs, const std::string& path, Format format, Loop loop) {
  int64_t expectedPrices = 0;
  for (int64_t i = 0; i < kRecords; ++i) expectedPrices += bidOf(i).price;
  int64_t enginePrices = 0, loopPrices = 0;
  auto [engine, baseline] = medianSecondsInterleaved(runs, [&] {
    StreamExecutionEnvironment env;
    env.setParallelism(1);
    auto sum = std::make_shared<std::atomic<int64_t>>(0);
    env.fromSource(FileSource<Bid>::forRecordStreamFormat(format, path).build(), WatermarkStrategy<Bid>::noWatermarks(),
                   "bids")
        .sinkTo(PriceSum{sum});
    env.execute(name);
    enginePrices = sum->load();
  }, [&] { loopPrices = loop(); });
  if (enginePrices != expectedPrices || loopPrices != expectedPrices)
    std::fprintf(stderr, "%s: prices summed to %lld (source) and %lld (loop), expected %lld\n", name,
                 static_cast<long long>(enginePrices), static_cast<long long>(loopPrices),
                 static_cast<long long>(expectedPrices));
  double e = static_cast<double>(kRecords) / engine, b = static_cast<double>(kRecords) / baseline;
  printFigure(name, {{"parallelism", 1}, {"records", static_cast<double>(kRecords)},
                     {"bytes", static_cast<double>(fs::file_size(path))}, {"records_per_s", e},
                     {"baseline_records_per_s", b}, {"ratio", b / e}});
}

fs::path benchFolder(const char* name) {
  return fs::temp_directory_path() / (std::string("weir-bench-") + name + "-" + std::to_string(::getpid()));
}

}  // namespace

void jsonDecode(int runs) {
  const fs::path dir = benchFolder("json");
  std::string path = writeFile(dir, "bids.jsonl", JsonSerializationSchema<Bid>());
  compare("json_decode", runs, path, JsonLinesInputFormat<Bid>(), [&] {
    std::ifstream in(path, std::ios::binary);
    int64_t prices = 0;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      Bid b;
      b.auction = j.at("auction").get<int64_t>();
      b.bidder = j.at("bidder").get<int64_t>();
      b.price = j.at("price").get<int64_t>();
      b.channel = j.at("channel").get<std::string>();
      b.url = j.at("url").get<std::string>();
      b.dateTime = j.at("dateTime").get<int64_t>();
      b.extra = j.at("extra").get<std::string>();
      prices += b.price;
    }
    return prices;
  });
  fs::remove_all(dir);
}

void csvDecode(int runs) {
  const fs::path dir = benchFolder("csv");
  std::string path = writeFile(dir, "bids.csv", CsvSerializationSchema<Bid>());
  compare("csv_decode", runs, path, CsvReaderFormat<Bid>::forStruct(), [&] {
    std::ifstream in(path, std::ios::binary);
    int64_t prices = 0;
    CsvSchema schema;
    std::vector<std::string> fields;
    auto number = [](const std::string& s) {
      int64_t v = 0;
      std::from_chars(s.data(), s.data() + s.size(), v);
      return v;
    };
    for (std::string line; std::getline(in, line);) {
      detail::csv::split(line, schema, fields);
      Bid b{number(fields[0]), number(fields[1]), number(fields[2]), fields[3], fields[4], number(fields[5]), fields[6]};
      prices += b.price;
    }
    return prices;
  });
  fs::remove_all(dir);
}

}  // namespace weir::bench
