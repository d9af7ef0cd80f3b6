#include "weir/file_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "weir/weir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;

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
    env.fromSource(FileSource::forRecordStreamFormat(TextLineInputFormat(), path).build(),
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
    env.fromSource(FileSource::forRecordStreamFormat(TextLineInputFormat(), dir_.string()).build(),
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
    auto enumerator = FileSource::forRecordStreamFormat(TextLineInputFormat(), p).build().createEnumerator(1);
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

// A line longer than the max line length fails the job naming the file and the line's
// offset, instead of buffering it whole (a file of one endless line, /dev/zero, grew
// without bound).
TEST_F(FileSourceTest, ALineLongerThanTheMaxFailsNamingTheFileAndOffset) {
  std::string content = "short\n" + std::string(5000, 'x') + "\nafter\n";
  auto path = write("long.txt", content);
  for (size_t max : {size_t{100}, size_t{4999}}) {
    StreamExecutionEnvironment env;
    CollectSink<std::string> sink;
    env.fromSource(FileSource::forRecordStreamFormat(TextLineInputFormat(), path).setMaxLineLength(max).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "files")
        .sinkTo(sink);
    try {
      env.execute();
      FAIL() << "no error with max " << max;
    } catch (const JobExecutionError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("the line at offset 6 of '" + fs::canonical(path).string() + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("longer than " + std::to_string(max) + " bytes"), std::string::npos) << what;
    }
  }
  // At exactly its length the line is read, also with "\r\n" after it.
  write("long.txt", "short\r\n" + std::string(5000, 'x') + "\r\nafter\n");
  StreamExecutionEnvironment env;
  CollectSink<std::string> sink;
  env.fromSource(FileSource::forRecordStreamFormat(TextLineInputFormat(), path).setMaxLineLength(5000).build(),
                 WatermarkStrategy<std::string>::noWatermarks(), "files")
      .sinkTo(sink);
  env.execute();
  EXPECT_EQ(sink.getResults(), (std::vector<std::string>{"short", std::string(5000, 'x'), "after"}));
  EXPECT_THROW(FileSource::forRecordStreamFormat(TextLineInputFormat(), path).setMaxLineLength(0).build(), Error);
}

}  // namespace
}  // namespace weir
