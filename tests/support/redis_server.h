// A Redis server for a test: a real redis-server process on a free loopback port, with
// its data in a folder of its own (an append-only file synced at every write, so that a
// stop and start keeps every entry); plus a small hiredis client to drive it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct redisContext;

namespace weir::test {

class RedisServer {
 public:
  struct Options {
    std::string password;  // --requirepass; empty: none
  };
  // Starts redis-server and waits until it answers PING; throws std::runtime_error
  // (with the end of its log) when it does not within 10 s.
  RedisServer() : RedisServer(Options{}) {}
  explicit RedisServer(Options options);
  ~RedisServer();  // stops it and removes its folder
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  const std::filesystem::path& folder() const { return dir_; }
  bool running() const { return pid_ > 0; }

  // SIGTERM (Redis writes what it has and exits), and waits for the exit.
  void stop();
  // Starts it again, on the same port and folder; waits until it answers.
  void start();
  // SIGKILL, and waits for the exit.
  void kill9();

 private:
  void launch();
  void waitUntilReady();
  void waitForExit();
  std::string logTail() const;

  Options options_;
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A reply, as text: a string, status or error as it is ("ERR ..." for an error), an
// integer in decimal, nil as "(nil)", an array as its elements.
struct RedisValue {
  enum Type { kString, kInteger, kNil, kArray, kError } type = kNil;
  std::string text;
  std::vector<RedisValue> elements;
  std::string str() const;  // the whole reply on one line, for messages
};

// A hiredis connection to a test's server; throws std::runtime_error when it cannot
// connect, or when the connection fails.
class RedisClient {
 public:
  explicit RedisClient(int port, const std::string& password = "");
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  RedisValue command(const std::vector<std::string>& args);
  // XADD <stream> * fields...: the new entry's ID. Throws on an error reply.
  std::string xadd(const std::string& stream, const std::vector<std::pair<std::string, std::string>>& fields,
                   const std::string& id = "*");
  // Many XADDs pipelined (one round trip per 1000), with `ids` or "*": their IDs, in order.
  std::vector<std::string> xaddMany(const std::string& stream,
                                    const std::vector<std::vector<std::pair<std::string, std::string>>>& entries,
                                    const std::vector<std::string>& ids = {});
  int64_t xlen(const std::string& stream);
  // XRANGE <stream> - +: each entry's ID and fields.
  struct Entry {
    std::string id;
    std::vector<std::pair<std::string, std::string>> fields;
  };
  std::vector<Entry> xrange(const std::string& stream);

 private:
  redisContext* context_ = nullptr;
};

}  // namespace weir::test
