#include "connectors/redis/redis_connection.h"

#include <pthread.h>
#include <signal.h>

#include "weir/error.h"

namespace weir::detail {

namespace {

// hiredis write()s without MSG_NOSIGNAL: a server gone between two writes would raise
// SIGPIPE and end the process. While one of its calls runs, the signal is blocked on
// this thread, and one it raised is taken back before the mask is restored (as libpq
// does).
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
    sigset_t pending;
    sigpending(&pending);
    wasPending_ = sigismember(&pending, SIGPIPE) == 1;
  }
  ~SigpipeBlocked() {
    sigset_t pending;
    sigpending(&pending);
    if (!wasPending_ && sigismember(&pending, SIGPIPE) == 1) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      const timespec zero{0, 0};
      sigtimedwait(&pipe, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_;
  bool wasPending_ = false;
};

timeval toTimeval(std::chrono::milliseconds t) {
  return timeval{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>(t.count() % 1000 * 1000)};
}

}  // namespace

bool transientRedisError(std::string_view error) {
  for (std::string_view prefix : {"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN"})
    if (error.substr(0, prefix.size()) == prefix) return true;
  return false;
}

RedisConnection::~RedisConnection() { redisFree(context_); }

std::unique_ptr<RedisConnection> RedisConnection::open(const RedisEndpoint& endpoint, const std::string& who,
                                                       std::string& why) {
  redisContext* c = redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, toTimeval(endpoint.connectTimeout));
  if (c == nullptr) {
    why = "out of memory";
    return nullptr;
  }
  std::unique_ptr<RedisConnection> connection(new RedisConnection(c));
  if (c->err) {
    why = c->errstr;
    return nullptr;
  }
  redisSetTimeout(c, toTimeval(endpoint.requestTimeout));
  redisEnableKeepAlive(c);
  if (!endpoint.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!endpoint.username.empty()) auth.push_back(endpoint.username);
    auth.push_back(endpoint.password);
    RedisReply reply = connection->command(auth);
    if (!reply) {
      why = connection->error();
      return nullptr;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
      if (transientRedisError(replyText(reply.get()))) {
        why = std::string(replyText(reply.get()));
        return nullptr;
      }
      throw Error(ErrorCode::kIo, who + ": authentication at '" + endpoint.address() +
                                      "' failed: " + std::string(replyText(reply.get())));
    }
  }
  return connection;
}

RedisReply RedisConnection::command(const std::vector<std::string>& args) {
  append(args);
  return nextReply();
}

void RedisConnection::append(const std::vector<std::string>& args) { append(args.data(), args.size()); }

void RedisConnection::append(const std::string* args, size_t count) {
  std::vector<const char*> argv(count);
  std::vector<size_t> lengths(count);
  for (size_t i = 0; i < count; ++i) {
    argv[i] = args[i].data();
    lengths[i] = args[i].size();
  }
  redisAppendCommandArgv(context_, static_cast<int>(count), argv.data(), lengths.data());
}

RedisReply RedisConnection::nextReply() {
  SigpipeBlocked blocked;
  void* reply = nullptr;
  if (redisGetReply(context_, &reply) != REDIS_OK) return RedisReply(nullptr, &freeReplyObject);
  return RedisReply(static_cast<redisReply*>(reply), &freeReplyObject);
}

bool RedisConnection::sendQueued() {
  SigpipeBlocked blocked;
  int done = 0;
  while (!done)
    if (redisBufferWrite(context_, &done) != REDIS_OK) return false;
  return true;
}

std::string RedisConnection::error() const {
  if (context_->err == REDIS_ERR_IO && context_->errstr[0] == '\0') return "I/O error";
  return context_->errstr[0] != '\0' ? context_->errstr : "the connection was closed";
}

int RedisConnection::fd() const { return context_->fd; }

}  // namespace weir::detail
