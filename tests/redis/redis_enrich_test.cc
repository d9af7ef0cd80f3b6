// `weir run redis-enrich` (examples/redis_enrich.cc) against a real redis-server: every
// click comes out once with its user's country, as the test's own HSETs say, looked up
// by async I/O over a pool of connections; a lookup Redis refuses fails the job with one
// line naming the server, after the retries.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/fresh_folder.h"
#include "support/redis_server.h"
#include "support/weir_process.h"

namespace weir {
namespace {

using namespace weir::test;
namespace fs = std::filesystem;

// The lines of every finished part file under `dir`, sorted.
std::vector<std::string> linesUnder(const fs::path& dir) {
  std::vector<std::string> lines;
  for (const auto& f : fs::recursive_directory_iterator(dir)) {
    if (!f.is_regular_file() || f.path().filename().string().front() == '.') continue;
    std::ifstream in(f.path());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(RedisEnrich, EveryClickComesOutOnceWithItsUsersCountry) {
  RedisServer server;
  RedisClient redis(server.port());
  for (int u = 0; u < 50; ++u)  // users 50-59 have no country
    redis.command({"HSET", "user:u" + std::to_string(u), "country", "c" + std::to_string(u % 7)});
  std::vector<std::vector<std::pair<std::string, std::string>>> clicks;
  std::vector<std::string> expected;
  for (int i = 0; i < 5000; ++i) {
    const int u = (i * 31) % 60;
    clicks.push_back({{"user", "u" + std::to_string(u)}});
    expected.push_back("u" + std::to_string(u) + "," + (u < 50 ? "c" + std::to_string(u % 7) : "unknown"));
  }
  redis.xaddMany("clicks", clicks);
  std::sort(expected.begin(), expected.end());

  fs::path dir = freshFolder("redis-enrich");
  Ran r = runWeir("run redis-enrich --redis " + server.address() +
                      " --stream clicks --bounded --connections 3 --capacity 20 -p 2 --no-rest --output " +
                      (dir / "out").string(),
                  dir);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(linesUnder(dir / "out"), expected);
  fs::remove_all(dir);
}

TEST(RedisEnrich, ALookupRedisRefusesFailsTheJobNamingTheServerAfterTheRetries) {
  RedisServer server;
  RedisClient redis(server.port());
  redis.command({"SET", "user:bad", "not a hash"});  // HGET answers WRONGTYPE
  redis.xaddMany("clicks", {{{"user", "bad"}}});
  fs::path dir = freshFolder("redis-enrich-refused");
  Ran r = runWeir("run redis-enrich --redis " + server.address() +
                      " --stream clicks --bounded --retries 1 --no-rest --output " + (dir / "out").string(),
                  dir);
  EXPECT_EQ(r.exitCode, 1) << r.err;
  EXPECT_NE(r.err.find("failed: redis " + server.address() + ": HGET user:bad answered WRONGTYPE"), std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace weir
