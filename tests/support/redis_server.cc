#include "support/redis_server.h"

#include "support/free_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace weir::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

RedisValue convert(const redisReply* r) {
  RedisValue v;
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
      v.type = RedisValue::kString;
      v.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      v.type = RedisValue::kError;
      v.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      v.type = RedisValue::kInteger;
      v.text = std::to_string(r->integer);
      break;
    case REDIS_REPLY_ARRAY:
      v.type = RedisValue::kArray;
      for (size_t i = 0; i < r->elements; ++i) v.elements.push_back(convert(r->element[i]));
      break;
    default:
      v.type = RedisValue::kNil;
      v.text = "(nil)";
  }
  return v;
}

}  // namespace

std::string RedisValue::str() const {
  if (type != kArray) return text;
  std::string out = "[";
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i > 0) out += ' ';
    out += elements[i].str();
  }
  return out + "]";
}

RedisServer::RedisServer(Options options) : options_(std::move(options)) {
  dir_ = fs::temp_directory_path() / ("weir-redis-" + std::to_string(::getpid()) + "-" +
                                      std::to_string(reinterpret_cast<uintptr_t>(this)));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  // Another process may take the port between the pick and the bind: a few picks.
  for (int attempt = 0;; ++attempt) {
    port_ = freeLoopbackPort();
    try {
      launch();
      waitUntilReady();
      return;
    } catch (const std::exception&) {
      if (pid_ > 0) kill9();
      if (attempt == 4) {
        fs::remove_all(dir_);
        throw;
      }
    }
  }
}

RedisServer::~RedisServer() {
  if (pid_ > 0) stop();
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

void RedisServer::launch() {
  std::vector<std::string> args{"redis-server",
                                "--bind", "127.0.0.1",
                                "--port", std::to_string(port_),
                                "--dir", dir_.string(),
                                "--save", "",
                                "--appendonly", "yes",
                                "--appendfsync", "always",
                                "--daemonize", "no",
                                "--protected-mode", "no",
                                "--logfile", (dir_ / "redis.log").string()};
  if (!options_.password.empty()) {
    args.push_back("--requirepass");
    args.push_back(options_.password);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // posix_spawn, not fork: the test process has threads (jobs, hiredis clients).
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd : {0, 1, 2}) posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_RDWR, 0);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, "redis-server", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw std::runtime_error("redis test server: cannot start redis-server: " + std::string(std::strerror(err)));
  pid_ = pid;
}

void RedisServer::waitUntilReady() {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis test server: redis-server exited at once (port " + std::to_string(port_) +
                               "): " + logTail());
    }
    timeval tv{0, 200000};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    if (c != nullptr && !c->err) {
      redisSetTimeout(c, timeval{1, 0});
      std::string answer;
      if (!options_.password.empty()) {
        auto* r = static_cast<redisReply*>(redisCommand(c, "AUTH %s", options_.password.c_str()));
        if (r != nullptr) freeReplyObject(r);
      }
      if (auto* r = static_cast<redisReply*>(redisCommand(c, "PING"))) {
        answer.assign(r->str != nullptr ? r->str : "", r->str != nullptr ? r->len : 0);
        freeReplyObject(r);
      }
      redisFree(c);
      if (answer == "PONG") return;  // not LOADING: the append-only file is read
    } else if (c != nullptr) {
      redisFree(c);
    }
    std::this_thread::sleep_for(10ms);
  }
  throw std::runtime_error("redis test server: no PONG on port " + std::to_string(port_) + " within 10 s: " +
                           logTail());
}

void RedisServer::waitForExit() {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  pid_ = -1;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  waitForExit();
}

void RedisServer::kill9() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitForExit();
}

void RedisServer::start() {
  if (pid_ > 0) return;
  launch();
  waitUntilReady();
}

std::string RedisServer::logTail() const {
  std::ifstream in(dir_ / "redis.log");
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.empty() ? "(no log)" : last;
}

RedisClient::RedisClient(int port, const std::string& password) {
  context_ = redisConnectWithTimeout("127.0.0.1", port, timeval{5, 0});
  if (context_ == nullptr || context_->err) {
    std::string why = context_ != nullptr ? context_->errstr : "out of memory";
    if (context_ != nullptr) redisFree(context_);
    context_ = nullptr;
    throw std::runtime_error("redis test client: cannot connect to port " + std::to_string(port) + ": " + why);
  }
  redisSetTimeout(context_, timeval{10, 0});
  if (!password.empty()) {
    RedisValue r = command({"AUTH", password});
    if (r.type == RedisValue::kError) throw std::runtime_error("redis test client: AUTH: " + r.text);
  }
}

RedisClient::~RedisClient() {
  if (context_ != nullptr) redisFree(context_);
}

RedisValue RedisClient::command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()));
  if (r == nullptr) throw std::runtime_error("redis test client: " + std::string(context_->errstr));
  RedisValue v = convert(r);
  freeReplyObject(r);
  return v;
}

std::string RedisClient::xadd(const std::string& stream, const std::vector<std::pair<std::string, std::string>>& fields,
                              const std::string& id) {
  std::vector<std::string> args{"XADD", stream, id};
  for (const auto& [k, v] : fields) {
    args.push_back(k);
    args.push_back(v);
  }
  RedisValue r = command(args);
  if (r.type != RedisValue::kString) throw std::runtime_error("redis test client: XADD " + stream + ": " + r.str());
  return r.text;
}

std::vector<std::string> RedisClient::xaddMany(
    const std::string& stream, const std::vector<std::vector<std::pair<std::string, std::string>>>& entries,
    const std::vector<std::string>& given) {
  std::vector<std::string> ids;
  for (size_t from = 0; from < entries.size(); from += 1000) {
    const size_t to = std::min(entries.size(), from + 1000);
    for (size_t i = from; i < to; ++i) {
      std::vector<std::string> args{"XADD", stream, given.empty() ? std::string("*") : given.at(i)};
      for (const auto& [k, v] : entries[i]) {
        args.push_back(k);
        args.push_back(v);
      }
      std::vector<const char*> argv;
      std::vector<size_t> lengths;
      for (const auto& a : args) {
        argv.push_back(a.data());
        lengths.push_back(a.size());
      }
      redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data());
    }
    for (size_t i = from; i < to; ++i) {
      void* reply = nullptr;
      if (redisGetReply(context_, &reply) != REDIS_OK || reply == nullptr)
        throw std::runtime_error("redis test client: XADD " + stream + ": " + context_->errstr);
      RedisValue v = convert(static_cast<redisReply*>(reply));
      freeReplyObject(reply);
      if (v.type != RedisValue::kString) throw std::runtime_error("redis test client: XADD " + stream + ": " + v.str());
      ids.push_back(v.text);
    }
  }
  return ids;
}

int64_t RedisClient::xlen(const std::string& stream) {
  RedisValue r = command({"XLEN", stream});
  if (r.type != RedisValue::kInteger) throw std::runtime_error("redis test client: XLEN " + stream + ": " + r.str());
  return std::stoll(r.text);
}

std::vector<RedisClient::Entry> RedisClient::xrange(const std::string& stream) {
  RedisValue r = command({"XRANGE", stream, "-", "+"});
  if (r.type != RedisValue::kArray) throw std::runtime_error("redis test client: XRANGE " + stream + ": " + r.str());
  std::vector<Entry> out;
  for (const RedisValue& e : r.elements) {
    Entry entry{e.elements.at(0).text, {}};
    const auto& fields = e.elements.at(1).elements;
    for (size_t i = 0; i + 1 < fields.size(); i += 2) entry.fields.emplace_back(fields[i].text, fields[i + 1].text);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace weir::test
