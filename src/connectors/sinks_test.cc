#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "weir/weir.h"

namespace weir {
namespace {

uint64_t bytesWrittenBySinks(const JobMetrics& metrics) {
  uint64_t bytes = 0;
  for (const auto& v : metrics.vertices) {
    if (v.isSink) bytes += v.numBytesOut;
    else EXPECT_EQ(v.numBytesOut, 0u) << v.name;
  }
  return bytes;
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
