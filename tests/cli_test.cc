// The weir program as a user runs it: exit codes, one-line errors, and real output.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace {

namespace fs = std::filesystem;

struct Result {
  int exitCode = -1;
  bool signaled = false;
  std::string out;
  std::string err;
};

Result weir(const std::string& args) {
  auto errFile = fs::temp_directory_path() / ("weir-cli-err-" + std::to_string(::getpid()));
  std::string command = std::string(WEIR_BINARY) + " " + args + " 2>" + errFile.string();
  Result run;
  FILE* pipe = ::popen(command.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) run.out.append(buf.data(), n);
  int status = ::pclose(pipe);
  run.signaled = WIFSIGNALED(status);
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(errFile);
  std::stringstream ss;
  ss << in.rdbuf();
  run.err = ss.str();
  fs::remove(errFile);
  return run;
}

// Exit code 2, and stderr is one line that starts with "weir: " and mentions `word`.
void expectUsageError(const std::string& args, const std::string& word) {
  Result r = weir(args);
  EXPECT_FALSE(r.signaled) << args;
  EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("weir: ", 0), 0u) << args << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(word), std::string::npos) << args << "\n" << r.err;
}

TEST(Cli, HelpExitsZero) {
  for (const char* args : {"--help", "run --help", "run clicks --help", "run wordcount --help"}) {
    Result r = weir(args);
    EXPECT_EQ(r.exitCode, 0) << args;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << args;
  }
  EXPECT_NE(weir("run --help").out.find("clicks"), std::string::npos);
}

TEST(Cli, BadCommandLinesGiveOneLineAndExitCode2) {
  expectUsageError("frobnicate", "unknown command 'frobnicate'");
  expectUsageError("run nosuchjob", "unknown example 'nosuchjob'");
  expectUsageError("run clicks --no-such-option", "--no-such-option");
  expectUsageError("run clicks --parallelism 0", "--parallelism");
  expectUsageError("run clicks --parallelism -2", "--parallelism");
  expectUsageError("run clicks --parallelism 129", "--parallelism");
  expectUsageError("run clicks --max-parallelism 4 --parallelism 5", "--parallelism");
  expectUsageError("run clicks --max-parallelism 0", "--max-parallelism");
  expectUsageError("run clicks --max-parallelism 32769", "--max-parallelism");
  expectUsageError("run clicks --rate -10", "--rate");
  expectUsageError("run clicks --events 0", "--events");
  expectUsageError("run clicks --parallelism many", "--parallelism");
  expectUsageError("run wordcount", "--input");
  expectUsageError("run wordcount --input /no/such/file.txt", "/no/such/file.txt");
  expectUsageError("run clicks --rest-port 70000", "--rest-port");
  expectUsageError("status not-a-job-id", "not a job id");
  expectUsageError("cancel 0123", "not a job id");
  expectUsageError("run clicks --state-backend leveldb", "unknown state backend 'leveldb'");
  expectUsageError("run clicks --rocksdb-local-dir /tmp", "--rocksdb-local-dir needs --state-backend rocksdb");
}

TEST(Cli, JobControlWithoutAServerSaysSoInOneLine) {
  // Nothing listens on port 9 (discard) of loopback here.
  Result r = weir("list --address 127.0.0.1:9");
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_EQ(r.err.rfind("weir: cannot reach the REST API at 127.0.0.1:9", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  expectUsageError("list --address nonsense", "--address");
}

TEST(Cli, AnUnreadableInputIsAUsageError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads every file";
  auto path = fs::temp_directory_path() / ("weir-cli-secret-" + std::to_string(::getpid()));
  std::ofstream(path) << "x\n";
  fs::permissions(path, fs::perms::none);
  expectUsageError("run wordcount --input " + path.string(), path.string());
  fs::remove(path);
}

TEST(Cli, WordCountCountsEveryWordOfAFolder) {
  auto dir = fs::temp_directory_path() / ("weir-cli-words-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  std::map<std::string, int64_t> expected;
  const char* words[] = {"alpha", "beta", "gamma", "delta"};
  for (int f = 0; f < 3; ++f) {
    std::ofstream out(dir / "in" / ("f" + std::to_string(f)));
    for (int i = 0; i < 500; ++i) {
      std::string w = words[(i * (f + 1)) % 4];
      out << w << (i % 3 ? ", " : "\n");
      expected[w]++;
    }
  }
  Result r = weir("run wordcount -p 2 --rest-port 0 --input " + (dir / "in").string() + " --output " + (dir / "out").string());
  ASSERT_EQ(r.exitCode, 0) << r.err;
  // The last (largest) rolling count of each word is its total.
  std::map<std::string, int64_t> finalCounts;
  for (auto& part : fs::directory_iterator(dir / "out")) {
    std::ifstream in(part.path());
    for (std::string line; std::getline(in, line);) {  // ("word", n)
      auto q1 = line.find('"'), q2 = line.find('"', q1 + 1), comma = line.find(", ", q2);
      std::string word = line.substr(q1 + 1, q2 - q1 - 1);
      int64_t n = std::stoll(line.substr(comma + 2));
      finalCounts[word] = std::max(finalCounts[word], n);
    }
  }
  EXPECT_EQ(finalCounts, expected);
  fs::remove_all(dir);
}

TEST(Cli, TheDemoCountsEveryEventAndPrintsTheTopUsers) {
  Result r = weir("run clicks --events 200000 --users 1000 --top 3 -p 2 --rest-port 0");
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("counted 200,000 events"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("top 3 users:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("   3. user "), std::string::npos) << r.out;
}

TEST(Cli, TheDemoGivesTheSameTopUsersOnRocksDB) {
  auto top = [](const std::string& out) { return out.substr(out.find("top 5 users:")); };
  Result heap = weir("run clicks --events 30000 --users 500 --top 5 -p 2 --no-rest");
  auto dir = fs::temp_directory_path() / ("weir-cli-rocks-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Result rocks = weir("run clicks --events 30000 --users 500 --top 5 -p 2 --no-rest --state-backend rocksdb "
                      "--rocksdb-local-dir " + dir.string());
  ASSERT_EQ(heap.exitCode, 0) << heap.err;
  ASSERT_EQ(rocks.exitCode, 0) << rocks.err;
  EXPECT_NE(rocks.out.find("counted 30,000 events"), std::string::npos) << rocks.out;
  EXPECT_EQ(top(rocks.out), top(heap.out));
  EXPECT_TRUE(fs::is_empty(dir)) << "RocksDB's folders are removed when the job ends";
  fs::remove_all(dir);
}

}  // namespace

namespace {

TEST(Cli, CtrlCCancelsTheJobAndExits130) {
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    ::execl(WEIR_BINARY, WEIR_BINARY, "run", "clicks", "--events", "2000000000", "--rest-port", "0", nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  FILE* reader = ::fdopen(out[0], "r");
  std::array<char, 4096> line;
  // The job is running once the Web UI line is out.
  std::string seen;
  while (seen.find("Web UI") == std::string::npos && std::fgets(line.data(), line.size(), reader)) seen += line.data();
  ASSERT_NE(seen.find("Web UI"), std::string::npos) << seen;
  ::kill(pid, SIGINT);
  std::string rest;
  while (std::fgets(line.data(), line.size(), reader)) rest += line.data();
  std::fclose(reader);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << rest;
  EXPECT_EQ(WEXITSTATUS(status), 130) << rest;
  EXPECT_NE(rest.find("cancelling the job"), std::string::npos) << rest;
  EXPECT_NE(rest.find("cancelled after"), std::string::npos) << rest;
}

}  // namespace
