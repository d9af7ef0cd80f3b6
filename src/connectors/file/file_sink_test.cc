// FileSink without failures: what it publishes, where, in how many part files, and
// what it says about bad paths and options. Its exactly-once promise across failures is
// tested in tests/recovery/file_sink_recovery_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "support/gated_source.h"
#include "weir/weir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path freshFolder(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("weir-file-sink-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

// The published part files under `dir` (by path), and how many hidden ones there are.
struct Published {
  std::map<fs::path, std::string> files;
  size_t hidden = 0;
  std::vector<std::string> allLines() const {
    std::vector<std::string> all;
    for (const auto& [path, text] : files)
      for (auto& line : linesOf(text)) all.push_back(std::move(line));
    std::sort(all.begin(), all.end());
    return all;
  }
};
Published published(const fs::path& dir) {
  Published p;
  if (!fs::exists(dir)) return p;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    if (e.path().filename().string()[0] == '.') ++p.hidden;
    else p.files[e.path()] = readFile(e.path());
  }
  return p;
}

template <class T>
FileSink<T> intoBasePath(const fs::path& dir) {
  return FileSink<T>::forRowFormat(dir.string(), SimpleStringEncoder<T>())
      .withBucketAssigner(BasePathBucketAssigner<T>())
      .build();
}

TEST(FileSink, PublishesEveryRecordOnceInPartFilesNamedAsFlinkDoes) {
  auto dir = freshFolder("publish");
  StreamExecutionEnvironment env;
  std::vector<int64_t> values(3000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i);
  env.fromCollection(values).rebalance().map([](int64_t v) { return "n" + std::to_string(v); }).setParallelism(2)
      .sinkTo(intoBasePath<std::string>(dir)).setParallelism(2);
  env.execute();
  Published p = published(dir);
  EXPECT_EQ(p.hidden, 0u);
  std::vector<std::string> expected;
  for (int64_t v : values) expected.push_back("n" + std::to_string(v));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(p.allLines(), expected);
  // part-<uid>-<subtask>-<counter>: one file per subtask, each with its own uid.
  const std::regex name("part-([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})-([01])-0");
  std::set<std::string> uids, subtasks;
  for (const auto& [path, text] : p.files) {
    std::smatch m;
    std::string file = path.filename().string();
    ASSERT_TRUE(std::regex_match(file, m, name)) << file;
    uids.insert(m[1]);
    subtasks.insert(m[2]);
  }
  EXPECT_EQ(p.files.size(), 2u);
  EXPECT_EQ(uids.size(), 2u);
  EXPECT_EQ(subtasks.size(), 2u);
  fs::remove_all(dir);
}

uint64_t bytesWrittenBySinks(const JobMetrics& metrics) {
  uint64_t bytes = 0;
  for (const auto& v : metrics.vertices)
    if (v.isSink) bytes += v.numBytesOut;
  return bytes;
}

TEST(FileSink, CountsTheBytesItWroteAsNumBytesOut) {
  auto dir = freshFolder("bytes");
  StreamExecutionEnvironment env;
  std::vector<int64_t> values(5000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i * i);
  env.fromCollection(values).rebalance().map([](int64_t v) { return v; }).setParallelism(2)
      .sinkTo(intoBasePath<int64_t>(dir)).setParallelism(2);
  auto client = env.executeAsync();
  client.wait();
  uint64_t onDisk = 0;
  for (const auto& [path, text] : published(dir).files) onDisk += text.size();
  EXPECT_GT(onDisk, values.size() * 2);
  EXPECT_EQ(bytesWrittenBySinks(client.getMetrics()), onDisk);
  fs::remove_all(dir);
}

TEST(FileSink, ABasePathThatCannotBeMadeFailsTheJobNamingIt) {
  auto blocker = freshFolder("blocker");
  std::ofstream(blocker) << "a file, not a folder";
  StreamExecutionEnvironment env;
  env.fromElements(1).sinkTo(intoBasePath<int>(blocker / "out"));
  try {
    env.execute();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the base path '" + (blocker / "out").string()),
              std::string::npos)
        << e.what();
  }
  fs::remove(blocker);
}

// Flink's DefaultRollingPolicy: a part file rolls before the record that finds it larger
// than the part size, so each holds the part size plus at most one record.
TEST(FileSink, DefaultRollingPolicyRollsAPartFileOnceItIsLargerThanThePartSize) {
  auto dir = freshFolder("size");
  StreamExecutionEnvironment env;
  std::vector<int64_t> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i);
  env.fromCollection(values)
      .map([](int64_t v) {
        char line[16];
        std::snprintf(line, sizeof line, "line-%04lld", static_cast<long long>(v));
        return std::string(line);
      })
      .sinkTo(FileSink<std::string>::forRowFormat(dir.string(), SimpleStringEncoder<std::string>())
                  .withBucketAssigner(BasePathBucketAssigner<std::string>())
                  .withRollingPolicy(DefaultRollingPolicy::builder().withMaxPartSize(1000).build())
                  .build());
  env.execute();
  // 10 bytes a line: 101 lines (1,010 bytes) per file, the rest in the last.
  std::map<int64_t, std::string> byCounter;
  for (const auto& [path, text] : published(dir).files) {
    std::string file = path.filename().string();
    byCounter[std::stoll(file.substr(file.rfind('-') + 1))] = text;
  }
  ASSERT_EQ(byCounter.size(), 10u);
  std::string all;
  for (const auto& [counter, text] : byCounter) {
    EXPECT_EQ(text.size(), counter < 9 ? 1010u : 910u) << "part " << counter;
    all += text;
  }
  std::string expected;
  for (int64_t v : values) {
    char line[16];
    std::snprintf(line, sizeof line, "line-%04lld\n", static_cast<long long>(v));
    expected += line;
  }
  EXPECT_EQ(all, expected) << "part files in counter order hold the records in order";
  fs::remove_all(dir);
}

TEST(FileSink, DateTimeBucketAssignerNamesABucketPerHourOfProcessingTime) {
  const int64_t at = 1796412005000;  // 2026-12-04 19:20:05 UTC
  const BucketAssigner<int>::Context context(at);
  EXPECT_EQ(DateTimeBucketAssigner<int>("yyyy-MM-dd--HH", "UTC").getBucketId(1, context), "2026-12-04--19");
  EXPECT_EQ(DateTimeBucketAssigner<int>("'date='yyyy-MM-dd/'hour='HH", "UTC").getBucketId(1, context),
            "date=2026-12-04/hour=19");
  EXPECT_EQ(DateTimeBucketAssigner<int>("yyMMdd-HHmmss", "UTC").getBucketId(1, context), "261204-192005");
  EXPECT_EQ(DateTimeBucketAssigner<int>("yyyy-MM-dd--HH", "UTC").getBucketId(1, BucketAssigner<int>::Context(-1)),
            "1969-12-31--23");
  auto errorOf = [](const std::string& pattern, const std::string& zone) {
    try {
      DateTimeBucketAssigner<int>(pattern, zone);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(errorOf("yyyy-MM-dd HH:mm:ss.SSS", "UTC").find("'SSS' is not supported"), std::string::npos);
  EXPECT_NE(errorOf("yyyy-MM-dd", "Europe/Paris").find("time zone 'Europe/Paris'"), std::string::npos);
  EXPECT_NE(errorOf("'unclosed", "").find("unclosed quote"), std::string::npos);
}

// By default every record goes into a folder per hour of the job's clock.
TEST(FileSink, ByDefaultEachRecordGoesIntoTheFolderOfItsHour) {
  auto dir = freshFolder("hours");
  StreamExecutionEnvironment env;
  env.setClock(std::make_shared<ManualClock>(1796412005000));
  env.fromElements<std::string>("a", "b", "c")
      .sinkTo(FileSink<std::string>::forRowFormat(dir.string(), SimpleStringEncoder<std::string>()).build());
  env.execute();
  std::time_t t = 1796412005;
  std::tm local{};
  localtime_r(&t, &local);
  char hour[32];
  std::strftime(hour, sizeof hour, "%Y-%m-%d--%H", &local);
  Published p = published(dir);
  ASSERT_EQ(p.files.size(), 1u);
  EXPECT_EQ(p.files.begin()->first.parent_path(), dir / hour);
  EXPECT_EQ(p.files.begin()->second, "a\nb\nc\n");
  fs::remove_all(dir);
}

// A bucket assigner of one's own: nested folders by the record; a bucket id that leaves
// the base path fails the job naming it.
struct ByParity final : BucketAssigner<int64_t> {
  std::string getBucketId(const int64_t& v, const Context&) override {
    if (v < 0) return "../escape";
    return v % 2 == 0 ? "even/numbers" : "odd";
  }
};

TEST(FileSink, ACustomBucketAssignerChoosesTheFolderOfEachRecord) {
  auto dir = freshFolder("parity");
  {
    StreamExecutionEnvironment env;
    env.fromElements<int64_t>(1, 2, 3, 4, 5)
        .sinkTo(FileSink<int64_t>::forRowFormat(dir.string(), SimpleStringEncoder<int64_t>())
                    .withBucketAssigner(ByParity())
                    .withOutputFileConfig(OutputFileConfig::builder().withPartPrefix("nums").withPartSuffix(".txt").build())
                    .build());
    env.execute();
  }
  Published p = published(dir);
  ASSERT_EQ(p.files.size(), 2u);
  for (const auto& [path, text] : p.files) {
    std::string file = path.filename().string();
    // One counter per subtask over all its buckets: parts 0 and 1.
    EXPECT_TRUE(file.starts_with("nums-") && (file.ends_with("-0-0.txt") || file.ends_with("-0-1.txt"))) << file;
    if (path.parent_path() == dir / "even" / "numbers") {
      EXPECT_EQ(text, "2\n4\n");
    } else {
      EXPECT_EQ(path.parent_path(), dir / "odd");
      EXPECT_EQ(text, "1\n3\n5\n");
    }
  }
  StreamExecutionEnvironment env;
  env.fromElements<int64_t>(-1).sinkTo(
      FileSink<int64_t>::forRowFormat(dir.string(), SimpleStringEncoder<int64_t>()).withBucketAssigner(ByParity()).build());
  try {
    env.execute();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bucket id '../escape' is not a relative path"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OutputFileConfig::builder().withPartPrefix("a/b").build(), Error);
  fs::remove_all(dir);
}

// Waits up to 20 s for `done`.
template <class F>
bool eventually(F done) {
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// OnCheckpointRollingPolicy: each completed checkpoint publishes what was written since
// the one before, while the job runs.
TEST(FileSink, OnCheckpointRollingPublishesAtEachCompletedCheckpoint) {
  auto dir = freshFolder("on-checkpoint");
  test::GatedSource<std::string> source;
  StreamExecutionEnvironment env;
  env.setParallelism(1).enableCheckpointing(20ms);
  env.fromSource(source, WatermarkStrategy<std::string>::noWatermarks(), "gate")
      .sinkTo(FileSink<std::string>::forRowFormat(dir.string(), SimpleStringEncoder<std::string>())
                  .withBucketAssigner(BasePathBucketAssigner<std::string>())
                  .withRollingPolicy(OnCheckpointRollingPolicy::build())
                  .build());
  auto job = env.executeAsync();
  source.push({"a1", "a2", "a3"});
  EXPECT_TRUE(eventually([&] { return published(dir).allLines().size() == 3; }));
  source.push({"b1", "b2"});
  EXPECT_TRUE(eventually([&] { return published(dir).allLines().size() == 5; }));
  source.close();
  job.wait();
  Published p = published(dir);
  EXPECT_EQ(p.allLines(), (std::vector<std::string>{"a1", "a2", "a3", "b1", "b2"}));
  EXPECT_EQ(p.hidden, 0u);
  for (const auto& [path, text] : p.files) {
    auto lines = linesOf(text);
    EXPECT_TRUE(std::all_of(lines.begin(), lines.end(), [&](const std::string& l) { return l[0] == lines[0][0]; }))
        << "a part file holds records of two checkpoints: " << text;
  }
  fs::remove_all(dir);
}

// DefaultRollingPolicy keeps a part file open (and hidden) across checkpoints until it
// has been inactive for the inactivity interval, checked on the job's clock.
TEST(FileSink, APartFileInactiveForTheIntervalRollsAndIsPublishedAtTheNextCheckpoint) {
  auto dir = freshFolder("inactive");
  auto clock = std::make_shared<ManualClock>(1'000'000);
  test::GatedSource<std::string> source;
  StreamExecutionEnvironment env;
  env.setClock(clock);
  env.setParallelism(1).enableCheckpointing(20ms);
  env.fromSource(source, WatermarkStrategy<std::string>::noWatermarks(), "gate")
      .sinkTo(FileSink<std::string>::forRowFormat(dir.string(), SimpleStringEncoder<std::string>())
                  .withBucketAssigner(BasePathBucketAssigner<std::string>())
                  .withRollingPolicy(DefaultRollingPolicy::builder()
                                         .withRolloverInterval(std::chrono::hours(1))
                                         .withInactivityInterval(10s)
                                         .build())
                  .withBucketCheckInterval(1s)
                  .build());
  auto job = env.executeAsync();
  source.push({"x", "y"});
  // Checkpoints complete; the file stays hidden.
  EXPECT_TRUE(eventually([&] { return published(dir).hidden == 1; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(published(dir).files.size(), 0u);
  clock->advance(11s);
  EXPECT_TRUE(eventually([&] { return published(dir).allLines().size() == 2; }));
  source.push({"z"});
  source.close();
  job.wait();
  Published p = published(dir);
  EXPECT_EQ(p.files.size(), 2u);
  EXPECT_EQ(p.allLines(), (std::vector<std::string>{"x", "y", "z"}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir
