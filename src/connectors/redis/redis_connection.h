// One hiredis connection as the Redis connectors use it: connected within a timeout,
// with every later read and write bounded too, AUTH done, and commands sent one at a
// time or pipelined.
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weir::detail {

using RedisReply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

inline std::string_view replyText(const redisReply* r) { return std::string_view(r->str, r->len); }

// Error replies that pass (a server loading its data, a script running): tried again.
bool transientRedisError(std::string_view error);

// Where a Redis server is and who connects to it.
struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string username;  // Redis 6 ACL user, with password
  std::string password;  // AUTH after connecting when set
  std::chrono::milliseconds connectTimeout{10000};
  std::chrono::milliseconds requestTimeout{30000};  // bounds every read and write

  std::string address() const { return host + ":" + std::to_string(port); }
};

class RedisConnection {
 public:
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // One attempt: null with `why` set when the server cannot be reached or is not ready
  // (loading). Throws weir::Error naming `who` and the server when it refuses the
  // credentials (trying again would not help).
  static std::unique_ptr<RedisConnection> open(const RedisEndpoint& endpoint, const std::string& who, std::string& why);

  // The reply, or null when the connection failed (error() says why; the connection is
  // unusable from then on).
  RedisReply command(const std::vector<std::string>& args);
  // Queues a command without waiting for its reply (pipelining); replies come from
  // nextReply(), in order.
  void append(const std::vector<std::string>& args);
  void append(const std::string* args, size_t count);
  // The next reply of the pipeline (sending what is queued first), or null when the
  // connection failed.
  RedisReply nextReply();
  // Sends what is queued now, without reading replies; false when the connection failed.
  bool sendQueued();
  std::string error() const;
  int fd() const;

 private:
  explicit RedisConnection(redisContext* c) : context_(c) {}
  redisContext* context_;
};

}  // namespace weir::detail
