#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

TEST(PrintSink, PrintsOneLinePerRecordWithASubtaskPrefixWhenParallel) {
  testing::internal::CaptureStdout();
  {
    StreamExecutionEnvironment env;
    env.fromElements<std::string>("hello", "world").print();
    env.execute();
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "hello\nworld\n");

  testing::internal::CaptureStdout();
  {
    StreamExecutionEnvironment env;
    env.fromElements(7, 8).rebalance().map([](int v) { return v; }).setParallelism(2).print().setParallelism(2);
    env.execute();
  }
  std::string out = testing::internal::GetCapturedStdout();
  // Round robin from one producer: one record to each subtask.
  EXPECT_TRUE(out == "1> 8\n2> 7\n" || out == "2> 7\n1> 8\n" || out == "1> 7\n2> 8\n" || out == "2> 8\n1> 7\n") << out;
  EXPECT_EQ(out.size(), 10u);
}

}  // namespace
}  // namespace weir
