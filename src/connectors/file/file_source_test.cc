#include "weir/file_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "checkpoint/checkpoint_storage.h"
#include "weir/csv_format.h"
#include "weir/json_format.h"
#include "weir/weir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Reading {
  std::string sensor;
  int64_t ts = 0;
  double value = 0;
  bool operator==(const Reading&) const = default;
  auto operator<=>(const Reading&) const = default;
};
WEIR_STRUCT(Reading, sensor, ts, value);

class FileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir-file-source-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& content) {
    auto path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  }

  std::vector<std::string> readAll(const std::string& path, int parallelism) {
    StreamExecutionEnvironment env;
    env.setParallelism(parallelism);
    CollectSink<std::string> sink;
    env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), path).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "files")
        .sinkTo(sink);
    env.execute();
    return sink.getResults();
  }

  fs::path dir_;
};

TEST_F(FileSourceTest, ReadsLinesOfOneFile) {
  auto path = write("a.txt", "first\nsecond\r\n\nlast without newline");
  EXPECT_EQ(readAll(path, 1), (std::vector<std::string>{"first", "second", "", "last without newline"}));
}

TEST_F(FileSourceTest, EmptyFileGivesNoLines) {
  auto path = write("empty.txt", "");
  EXPECT_TRUE(readAll(path, 1).empty());
}

TEST_F(FileSourceTest, LinesLongerThanTheReadBufferStayWhole) {
  std::string longLine(3 * 1024 * 1024 + 17, 'x');
  longLine[12345] = 'y';
  auto path = write("long.txt", "a\n" + longLine + "\nb\n");
  auto lines = readAll(path, 1);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "a");
  EXPECT_EQ(lines[1], longLine);
  EXPECT_EQ(lines[2], "b");
}

TEST_F(FileSourceTest, ReadsEveryFileOfAFolderInParallelSkippingHiddenOnes) {
  std::vector<std::string> expected;
  for (int f = 0; f < 7; ++f) {
    std::string content;
    for (int l = 0; l < 1000 + f; ++l) {
      std::string line = "file" + std::to_string(f) + "-line" + std::to_string(l);
      content += line + "\n";
      expected.push_back(line);
    }
    write((f % 2 ? "sub/" : "") + std::string("part-") + std::to_string(f), content);
  }
  write(".hidden", "not me\n");
  write("_in-progress", "nor me\n");
  write(".git/config", "nor me either\n");
  auto lines = readAll(dir_.string(), 3);
  std::sort(lines.begin(), lines.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(lines, expected);
}

// numBytesIn of the source vertex is every byte of every file it read, whatever the
// parallelism and however the lines fall across read buffers; nothing downstream reads bytes.
TEST_F(FileSourceTest, CountsTheBytesItReadAsNumBytesIn) {
  uint64_t expected = 0;
  for (int f = 0; f < 5; ++f) {
    std::string content(static_cast<size_t>(f) * 700000 + 13, 'x');
    for (size_t i = 99; i < content.size(); i += 100) content[i] = '\n';
    expected += content.size();
    write("part-" + std::to_string(f), content);
  }
  for (int parallelism : {1, 3}) {
    StreamExecutionEnvironment env;
    env.setParallelism(parallelism);
    env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), dir_.string()).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "files")
        .rebalance()
        .map([](const std::string& line) { return line.size(); })
        .sinkTo(DiscardingSink<size_t>());
    auto client = env.executeAsync();
    client.wait();
    auto vertices = client.getMetrics().vertices;
    ASSERT_EQ(vertices.size(), 2u);
    EXPECT_EQ(vertices[0].numBytesIn, expected) << "parallelism " << parallelism;
    EXPECT_EQ(vertices[0].numBytesOut, 0u);
    EXPECT_EQ(vertices[1].numBytesIn, 0u);
    EXPECT_EQ(vertices[1].numBytesOut, 0u);
  }
}

TEST_F(FileSourceTest, AMissingPathFailsBeforeTheJobStartsNamingThePath) {
  auto missing = (dir_ / "nope.txt").string();
  try {
    readAll(missing, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST_F(FileSourceTest, AnUnreadableFileIsReportedByName) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  auto path = write("secret.txt", "x\n");
  fs::permissions(path, fs::perms::none);
  EXPECT_THROW(readAll(path, 1), Error);
}

// A file is one split however the input spells it: a relative path, an absolute one, a
// link to it. (A resumed job skips the files its checkpoint had by their split ids.)
TEST_F(FileSourceTest, AFileIsOneSplitHoweverThePathSpellsIt) {
  auto path = write("in.txt", "a\n");
  fs::create_symlink(path, dir_ / "link.txt");
  auto idOf = [](const std::string& p) {
    auto enumerator = FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), p).build().createEnumerator(1);
    auto split = enumerator->nextSplit(0);
    EXPECT_EQ(enumerator->nextSplit(0), nullptr);
    return split->splitId();
  };
  const std::string canonical = fs::canonical(path).string();
  EXPECT_EQ(idOf(path), canonical);
  EXPECT_EQ(idOf((dir_ / "." / "in.txt").string()), canonical);
  EXPECT_EQ(idOf((dir_ / "link.txt").string()), canonical);
  auto cwd = fs::current_path();
  fs::current_path(dir_);
  EXPECT_EQ(idOf("in.txt"), canonical);
  fs::current_path(cwd);
}

// A line longer than the max line length fails the job (the default policy) naming the
// file and the line's offset, instead of buffering it whole (a file of one endless line, /dev/zero, grew
// without bound).
TEST_F(FileSourceTest, ALineLongerThanTheMaxFailsNamingTheFileAndOffset) {
  std::string content = "short\n" + std::string(5000, 'x') + "\nafter\n";
  auto path = write("long.txt", content);
  for (size_t max : {size_t{100}, size_t{4999}}) {
    StreamExecutionEnvironment env;
    CollectSink<std::string> sink;
    env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), path).setMaxLineLength(max).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "files")
        .sinkTo(sink);
    try {
      env.execute();
      FAIL() << "no error with max " << max;
    } catch (const JobExecutionError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("source 'files': bad record in '" + fs::canonical(path).string() +
                          "' at position 6: the line is longer than " + std::to_string(max) + " bytes"),
                std::string::npos)
          << what;
    }
  }
  // At exactly its length the line is read, also with "\r\n" after it.
  write("long.txt", "short\r\n" + std::string(5000, 'x') + "\r\nafter\n");
  StreamExecutionEnvironment env;
  CollectSink<std::string> sink;
  env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), path).setMaxLineLength(5000).build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "files")
      .sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults(), (std::vector<std::string>{"short", std::string(5000, 'x'), "after"}));
  EXPECT_THROW(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), path).setMaxLineLength(0).build(), Error);
}

// Bad records: files of JSON lines where every 100th record is malformed in one of four
// ways (bad syntax, a wrong type, a missing member, a line longer than the limit).
class BadRecordTest : public FileSourceTest {
 protected:
  static constexpr size_t kMaxLine = 200;
  struct Injected {
    std::string split;
    int64_t position;
    std::string bytes;  // as the dead letter holds them (a long line: its first kMaxLine bytes)
    auto operator<=>(const Injected&) const = default;
  };

  void SetUp() override {
    FileSourceTest::SetUp();
    for (int f = 0; f < 3; ++f) {
      std::string content;
      std::string path = (dir_ / ("readings-" + std::to_string(f) + ".jsonl")).string();
      for (int i = 0; i < 2000; ++i) {
        const int64_t offset = static_cast<int64_t>(content.size());
        Reading r{"s" + std::to_string(f), i, i * 0.5};
        std::string line = JsonSerializationSchema<Reading>().serialize(r);
        if (i % 100 == 37) {
          const int kind = (f * 20 + i / 100) % 4;
          if (kind == 0) line = line.substr(0, line.size() - 3);
          if (kind == 1) line = R"({"sensor":"s","ts":"late","value":1})";
          if (kind == 2) line = R"({"sensor":"s","value":1})";
          if (kind == 3) line = R"({"sensor":")" + std::string(1000, 'x') + R"(","ts":1,"value":1})";
          injected_.push_back({fs::canonical(dir_).string() + "/readings-" + std::to_string(f) + ".jsonl", offset,
                               line.substr(0, kMaxLine)});
        } else {
          good_.push_back(r);
        }
        content += line + (i % 7 == 0 ? "\r\n" : "\n");
      }
      write(fs::path(path).filename().string(), content);
    }
    std::sort(good_.begin(), good_.end());
    std::sort(injected_.begin(), injected_.end());
  }

  SingleOutputStreamOperator<Reading> readings(StreamExecutionEnvironment& env, BadRecordPolicy policy) {
    return env.fromSource(FileSource<Reading>::forRecordStreamFormat(JsonLinesInputFormat<Reading>(), dir_.string())
                              .setMaxLineLength(kMaxLine)
                              .setBadRecordPolicy(policy)
                              .build(),
                          WatermarkStrategy<Reading>::noWatermarks(), "readings");
  }

  std::vector<Reading> good_;
  std::vector<Injected> injected_;
};

TEST_F(BadRecordTest, FailNamesTheSourceTheFilePositionAndReason) {
  StreamExecutionEnvironment env;
  readings(env, BadRecordPolicy::FAIL).sinkTo(DiscardingSink<Reading>());
  try {
    env.execute();
    FAIL() << "no error";
  } catch (const JobExecutionError& e) {
    std::string what = e.what();
    // The first bad record of the first file: record 37, bad syntax.
    const auto& first = injected_.front();
    EXPECT_NE(what.find("source 'readings': bad record in '" + first.split + "' at position " +
                        std::to_string(first.position) + ": invalid JSON: "),
              std::string::npos)
        << what;
  }
}

TEST_F(BadRecordTest, SkipDropsExactlyTheBadRecordsAndCountsThem) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<Reading> sink;
  readings(env, BadRecordPolicy::SKIP).sinkTo(sink);
  auto client = env.executeAsync();
  client.wait();
  auto records = sink.getResults();
  std::sort(records.begin(), records.end());
  EXPECT_EQ(records, good_);
  EXPECT_EQ(client.getMetrics().vertices.at(0).numRecordsInErrors, injected_.size());
}

TEST_F(BadRecordTest, DeadLettersHoldExactlyTheBadRecordsWithTheirPositions) {
  StreamExecutionEnvironment env;
  env.setParallelism(2);
  CollectSink<Reading> sink;
  CollectSink<BadRecord> deadLetters;
  auto stream = readings(env, BadRecordPolicy::DEAD_LETTER);
  stream.sinkTo(sink);
  stream.getSideOutput(deadLetterOutput()).sinkTo(deadLetters);
  auto client = env.executeAsync();
  client.wait();
  auto records = sink.getResults();
  std::sort(records.begin(), records.end());
  EXPECT_EQ(records, good_);
  std::vector<Injected> letters;
  for (const auto& d : deadLetters.getResults()) {
    EXPECT_EQ(d.source, "readings");
    EXPECT_FALSE(d.reason.empty());
    if (d.bytes.size() == kMaxLine) {
      EXPECT_NE(d.reason.find("longer than 200 bytes"), std::string::npos) << d.reason;
    }
    letters.push_back({d.split, d.position, d.bytes});
  }
  std::sort(letters.begin(), letters.end());
  EXPECT_EQ(letters, injected_);
  EXPECT_EQ(client.getMetrics().vertices.at(0).numRecordsInErrors, injected_.size());
}

TEST_F(BadRecordTest, DeadLettersThatNothingConsumesAreRefusedAtSubmission) {
  StreamExecutionEnvironment env;
  readings(env, BadRecordPolicy::DEAD_LETTER).sinkTo(DiscardingSink<Reading>());
  try {
    env.execute();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidJob);
    EXPECT_NE(std::string(e.what()).find("getSideOutput(deadLetterOutput())"), std::string::npos) << e.what();
  }
}

// A file of one endless line under SKIP: the reader drops it as it reads, holding no more
// than the limit, and goes on with the next file.
TEST_F(FileSourceTest, AnEndlessLineIsSkippedWithinTheLimit) {
  write("a-endless.txt", std::string(64 << 20, 'x') + "\nafter\n" + std::string(3 << 20, 'y'));
  write("b-after.txt", "kept\n");
  StreamExecutionEnvironment env;
  CollectSink<std::string> sink;
  env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), dir_.string())
                     .setMaxLineLength(1000)
                     .setBadRecordPolicy(BadRecordPolicy::SKIP)
                     .build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "files")
      .sinkTo(sink);
  auto client = env.executeAsync();
  client.wait();
  EXPECT_EQ(sink.getResults(), (std::vector<std::string>{"after", "kept"}));
  EXPECT_EQ(client.getMetrics().vertices.at(0).numRecordsInErrors, 2u);
}

// Reads everything `reader` has, up to `limit` records.
template <class T>
std::vector<T> drain(SourceReader<T>& reader, size_t limit = SIZE_MAX) {
  std::vector<T> out;
  while (out.size() < limit) {
    std::vector<T> batch;
    auto status = reader.pollNext(batch, std::min<size_t>(limit - out.size(), 7));
    out.insert(out.end(), batch.begin(), batch.end());
    if (status == InputStatus::END_OF_INPUT) break;
  }
  return out;
}

// A CSV file with a header whose columns are in another order than the struct's fields,
// and quoted fields with line ends in them, larger than the read buffer: read whole, or
// stopped at any record and resumed from its checkpointed position (the header is read
// again first), the records are the same.
TEST_F(FileSourceTest, CsvWithAHeaderAndQuotedLineEndsResumesAnywhere) {
  std::vector<Reading> expected;
  std::string content = "value,sensor,ts\r\n";
  for (int i = 0; i < 60000; ++i) {
    Reading r{i % 3 == 0 ? "multi\nline, \"quoted\"\r\n" + std::to_string(i) : "plain" + std::to_string(i), i, i / 4.0};
    expected.push_back(r);
    content += std::to_string(r.value) + ",";
    CsvSchema schema;
    detail::csv::appendField(r.sensor, schema, content);
    content += "," + std::to_string(r.ts) + "\r\n";
  }
  ASSERT_GT(content.size(), 2u << 20);
  auto path = write("readings.csv", content);
  auto source = FileSource<Reading>::forRecordStreamFormat(CsvReaderFormat<Reading>::forStruct(CsvSchema().withHeader()), path)
                    .build();
  auto readerOf = [&](SplitEnumerator* enumerator) {
    return source.createReader(SourceReaderContext{0, 1, enumerator, OperatorMetricGroup(), nullptr});
  };
  auto enumerator = source.createEnumerator(1);
  EXPECT_EQ(drain(*readerOf(enumerator.get())), expected);
  for (size_t stop : {size_t{1}, size_t{2}, size_t{9999}, size_t{37001}, size_t{59999}}) {
    auto first = source.createEnumerator(1);
    auto reader = readerOf(first.get());
    auto before = drain(*reader, stop);
    auto state = reader->snapshotState(1);
    auto resumed = readerOf(nullptr);
    resumed->addSplits(state);
    auto after = drain(*resumed);
    before.insert(before.end(), after.begin(), after.end());
    EXPECT_EQ(before, expected) << "stopped after " << stop;
  }
}

// What reading `path` as CSV with a header, under SKIP, fails with ("" if nothing).
std::string csvWithHeaderFailure(const std::string& path) {
  StreamExecutionEnvironment env;
  env.fromSource(FileSource<Reading>::forRecordStreamFormat(CsvReaderFormat<Reading>::forStruct(CsvSchema().withHeader()), path)
                     .setBadRecordPolicy(BadRecordPolicy::SKIP)
                     .build(),
                 WatermarkStrategy<Reading>::noWatermarks(), "csv")
      .sinkTo(DiscardingSink<Reading>());
  try {
    env.execute();
  } catch (const JobExecutionError& e) {
    return e.what();
  }
  return "";
}

TEST_F(FileSourceTest, ACsvHeaderThatDoesNotFitFailsTheJobNamingTheFile) {
  auto path = write("readings.csv", "sensor,time,value\ns,1,2\n");
  std::string what = csvWithHeaderFailure(path);
  EXPECT_NE(what.find("file source: '" + fs::canonical(path).string() +
                      "': CSV format: the header has no column for field 'ts' of the struct"),
            std::string::npos)
      << what;
}

bool eventually(const std::function<bool()>& done) {
  for (auto deadline = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < deadline;) {
    if (done()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return done();
}

// Continuous mode: files that appear in the folder are read; a job restored from a
// checkpoint (at another parallelism) reads only the files that appeared since.
TEST_F(FileSourceTest, MonitoringAFolderReadsNewFilesOnceAcrossARestore) {
  fs::path checkpoints = dir_.string() + "-checkpoints";
  fs::remove_all(checkpoints);
  fs::create_directories(checkpoints);
  fs::path in = dir_ / "in";
  auto add = [&](const std::string& name, int lines) {
    std::string content;
    for (int i = 0; i < lines; ++i) content += name + "-" + std::to_string(i) + "\n";
    write("in/_" + name, content);  // written whole under a name the source skips, then renamed
    fs::rename(in / ("_" + name), in / name);
  };
  auto lines = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  auto expectedOf = [](std::initializer_list<std::pair<std::string, int>> files) {
    std::vector<std::string> out;
    for (const auto& [name, n] : files)
      for (int i = 0; i < n; ++i) out.push_back(name + "-" + std::to_string(i));
    std::sort(out.begin(), out.end());
    return out;
  };
  auto run = [&](int parallelism, const std::string& restore, CollectSink<std::string>& sink) {
    StreamExecutionEnvironment env;
    env.setParallelism(parallelism);
    env.enableCheckpointing(20ms);
    env.getCheckpointConfig().setCheckpointStorage(checkpoints.string());
    env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
    if (!restore.empty()) env.setRestorePath(restore);
    env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), in.string())
                       .monitorContinuously(30ms)
                       .build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "monitor")
        .sinkTo(sink);
    return env.executeAsync();
  };
  auto stop = [](JobClient& job) {
    job.cancel();
    try {
      job.wait();
    } catch (const JobExecutionError&) {
    }
  };

  add("a", 300);
  CollectSink<std::string> first;
  auto job = run(2, "", first);
  ASSERT_TRUE(eventually([&] { return first.getResults().size() >= 300; }));
  add("b", 500);
  ASSERT_TRUE(eventually([&] { return first.getResults().size() >= 800; }));
  const int64_t checkpointsThen = job.getMetrics().numberOfCompletedCheckpoints;
  ASSERT_TRUE(eventually([&] { return job.getMetrics().numberOfCompletedCheckpoints >= checkpointsThen + 2; }));
  stop(job);
  EXPECT_EQ(lines(first.getResults()), expectedOf({{"a", 300}, {"b", 500}}));

  add("c", 200);
  CollectSink<std::string> second;
  auto resumed = run(1, checkpoint::findLatestCheckpoint(checkpoints.string()), second);
  ASSERT_TRUE(eventually([&] { return second.getResults().size() >= 200; }));
  add("d", 100);
  ASSERT_TRUE(eventually([&] { return second.getResults().size() >= 300; }));
  stop(resumed);
  EXPECT_EQ(lines(second.getResults()), expectedOf({{"c", 200}, {"d", 100}}));
  fs::remove_all(checkpoints);
}

// A stray quote inside an unquoted field makes its record bad, and only it: the records
// after it are cut as before (counting quotes alone would join them all to it).
TEST_F(FileSourceTest, AStrayQuoteInCsvSpoilsOnlyItsRecord) {
  std::string content;
  std::vector<Reading> expected;
  for (int i = 0; i < 1000; ++i) {
    if (i == 10) {
      content += "s\"10,10,1.5\n";
      continue;
    }
    content += "s" + std::to_string(i) + "," + std::to_string(i) + ",0.5\n";
    expected.push_back({"s" + std::to_string(i), i, 0.5});
  }
  auto path = write("readings.csv", content);
  StreamExecutionEnvironment env;
  CollectSink<Reading> sink;
  env.fromSource(FileSource<Reading>::forRecordStreamFormat(CsvReaderFormat<Reading>::forStruct(), path)
                     .setBadRecordPolicy(BadRecordPolicy::SKIP)
                     .build(),
                 WatermarkStrategy<Reading>::noWatermarks(), "csv")
      .sinkTo(sink);
  auto client = env.executeAsync();
  client.wait();
  EXPECT_EQ(sink.getResults(), expected);
  EXPECT_EQ(client.getMetrics().vertices.at(0).numRecordsInErrors, 1u);
}

// A header that is no CSV record fails the job whatever the policy: taking the next
// record for the header would misread the whole file.
TEST_F(FileSourceTest, ABrokenCsvHeaderFailsTheJobUnderSkipToo) {
  auto path = write("readings.csv", "\"sensor,ts,value\ns,1,2\n");
  std::string what = csvWithHeaderFailure(path);
  EXPECT_NE(what.find("file source: '" + fs::canonical(path).string() +
                      "': CSV format: the header is not a CSV record: CSV column 1: a quoted field is not closed"),
            std::string::npos)
      << what;
}

TEST_F(FileSourceTest, AMaxLineLengthAbove1GiBIsRefused) {
  EXPECT_THROW(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), dir_.string())
                   .setMaxLineLength(SIZE_MAX)
                   .build(),
               Error);
}

TEST_F(FileSourceTest, AMonitoringIntervalOfZeroIsRefused) {
  EXPECT_THROW(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), dir_.string())
                   .monitorContinuously(0ms)
                   .build(),
               Error);
}

}  // namespace
}  // namespace weir
