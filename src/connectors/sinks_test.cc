#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "weir/weir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TextFileSink, WritesOnePartFilePerSubtask) {
  auto dir = fs::temp_directory_path() / ("weir-text-sink-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  StreamExecutionEnvironment env;
  env.fromElements(1, 2, 3, 4, 5, 6)
      .rebalance()
      .map([](int v) { return std::pair<std::string, int>{"n", v}; })
      .setParallelism(2)
      .sinkTo(TextFileSink<std::pair<std::string, int>>(dir.string()));
  env.execute();
  std::string all = readFile(dir / "part-0") + readFile(dir / "part-1");
  std::vector<std::string> lines;
  std::stringstream ss(all);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines, (std::vector<std::string>{"(\"n\", 1)", "(\"n\", 2)", "(\"n\", 3)", "(\"n\", 4)", "(\"n\", 5)",
                                             "(\"n\", 6)"}));
  fs::remove_all(dir);
}

uint64_t bytesWrittenBySinks(const JobMetrics& metrics) {
  uint64_t bytes = 0;
  for (const auto& v : metrics.vertices) {
    if (v.isSink) bytes += v.numBytesOut;
    else EXPECT_EQ(v.numBytesOut, 0u) << v.name;
  }
  return bytes;
}

TEST(TextFileSink, CountsTheBytesItWroteAsNumBytesOut) {
  auto dir = fs::temp_directory_path() / ("weir-text-sink-bytes-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  StreamExecutionEnvironment env;
  std::vector<int64_t> values(5000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<int64_t>(i * i);
  env.fromCollection(values).rebalance().map([](int64_t v) { return v; }).setParallelism(2)
      .sinkTo(TextFileSink<int64_t>(dir.string())).setParallelism(2);
  auto client = env.executeAsync();
  client.wait();
  uint64_t onDisk = fs::file_size(dir / "part-0") + fs::file_size(dir / "part-1");
  EXPECT_GT(onDisk, values.size() * 2);
  EXPECT_EQ(bytesWrittenBySinks(client.getMetrics()), onDisk);
  fs::remove_all(dir);
}

TEST(TextFileSink, AnUnwritableFolderFailsTheJobNamingIt) {
  auto blocker = fs::temp_directory_path() / ("weir-text-sink-file-" + std::to_string(::getpid()));
  std::ofstream(blocker) << "a file, not a folder";
  StreamExecutionEnvironment env;
  env.fromElements(1).sinkTo(TextFileSink<int>((blocker / "out").string()));
  try {
    env.execute();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(blocker.string()), std::string::npos) << e.what();
  }
  fs::remove(blocker);
}

struct TagWithSubtask : RichMapFunction<int, int> {
  int map(const int& v) override { return v * 10 + getRuntimeContext().getIndexOfThisSubtask(); }
};

TEST(PrintSink, PrintsOneLinePerRecordWithASubtaskPrefixWhenParallel) {
  testing::internal::CaptureStdout();
  {
    StreamExecutionEnvironment env;
    env.fromElements<std::string>("hello", "world").print();
    env.execute();
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "hello\nworld\n");

  testing::internal::CaptureStdout();
  JobMetrics metrics;
  {
    StreamExecutionEnvironment env;
    env.fromElements<std::string>("a line", "another line", "").print();
    auto client = env.executeAsync();
    client.wait();
    metrics = client.getMetrics();
  }
  std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_EQ(printed, "a line\nanother line\n\n");
  EXPECT_EQ(bytesWrittenBySinks(metrics), printed.size());

  testing::internal::CaptureStdout();
  {
    StreamExecutionEnvironment env;
    // Each record carries the subtask that handled it (v * 10 + index), which the print
    // sink chained to it must show as its prefix (index + 1).
    env.fromElements(7, 8).rebalance().map(TagWithSubtask{}).setParallelism(2).print().setParallelism(2);
    env.execute();
  }
  std::string out = testing::internal::GetCapturedStdout();
  std::stringstream lines(out);
  std::set<int> values;
  std::set<int> prefixes;
  for (std::string line; std::getline(lines, line);) {
    ASSERT_EQ(line.size(), 5u) << out;
    int prefix = line[0] - '0', tagged = std::stoi(line.substr(3));
    EXPECT_EQ(line.substr(1, 2), "> ") << out;
    EXPECT_EQ(prefix, tagged % 10 + 1) << "the line of subtask " << tagged % 10 + 1 << " has prefix " << prefix;
    values.insert(tagged / 10);
    prefixes.insert(prefix);
  }
  EXPECT_EQ(values, (std::set<int>{7, 8})) << out;
  EXPECT_EQ(prefixes, (std::set<int>{1, 2})) << "round robin from one producer: one record to each subtask";
}

}  // namespace
}  // namespace weir
