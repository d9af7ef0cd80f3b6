// RedisStreamSource's machinery on hiredis's C API. The enumerator checks the server
// and the keys once, then hands streams out round robin; each reader has one thread of
// its own and one connection, on which it resolves each stream's starting (and
// stopping) ID and then reads all its streams with one XREAD, blocking while there is
// nothing new. What it reads goes through a queue, in order, to the subtask's thread,
// which alone decides what a checkpoint holds: the ID of the last entry it handed on.
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <compare>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "connectors/redis/redis_connection.h"
#include "core/thread_name.h"
#include "weir/detail/connectors/redis_stream_reader.h"
#include "weir/error.h"

namespace weir::detail {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kBlock{200};          // XREAD BLOCK while nothing is there
constexpr std::chrono::milliseconds kFirstBackoff{50};    // between connection attempts, doubling
constexpr std::chrono::milliseconds kLastBackoff{2000};
constexpr std::chrono::milliseconds kLongestAttempt{1000};  // one connection attempt
constexpr std::chrono::milliseconds kSplitWake{100};      // nextPollTime when the thread wakes the subtask

Error invalid(const std::string& what) { return Error(ErrorCode::kInvalidArgument, "redis stream source: " + what); }

// A stream entry ID, "<ms>-<seq>".
struct StreamId {
  uint64_t ms = 0;
  uint64_t seq = 0;
  auto operator<=>(const StreamId&) const = default;
  std::string str() const { return std::to_string(ms) + "-" + std::to_string(seq); }
  // The ID just before this one (0-0 has none: itself).
  StreamId before() const {
    if (seq > 0) return {ms, seq - 1};
    if (ms > 0) return {ms - 1, std::numeric_limits<uint64_t>::max()};
    return {};
  }
};

std::optional<uint64_t> parseNumber(std::string_view s) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return n;
}

// "<ms>-<seq>", or "<ms>" with `seqIfMissing`.
std::optional<StreamId> parseId(std::string_view s, uint64_t seqIfMissing = 0) {
  const size_t dash = s.find('-');
  auto ms = parseNumber(s.substr(0, dash));
  if (!ms) return std::nullopt;
  if (dash == std::string_view::npos) return StreamId{*ms, seqIfMissing};
  auto seq = parseNumber(s.substr(dash + 1));
  if (!seq) return std::nullopt;
  return StreamId{*ms, *seq};
}

bool validStartingId(const std::string& id) { return id == "0" || id == "-" || id == "$" || parseId(id).has_value(); }

using Reply = RedisReply;
using Connection = RedisConnection;

// One connection attempt within `timeout` (RedisConnection::open), its reads bounded by
// the request timeout plus a blocking XREAD's wait.
std::unique_ptr<Connection> openConnection(const RedisStreamSourceConfig& config, std::chrono::milliseconds timeout,
                                           std::string& why) {
  RedisEndpoint endpoint;
  endpoint.host = config.host;
  endpoint.port = config.port;
  endpoint.username = config.username;
  endpoint.password = config.password;
  endpoint.connectTimeout = timeout;
  endpoint.requestTimeout = config.requestTimeout + kBlock;
  return Connection::open(endpoint, "redis stream source", why);
}

// What TYPE says a key is ("none" when it does not exist). Throws weir::Error for a
// reply that is an error (NOAUTH, NOPERM); null when the connection failed.
std::optional<std::string> typeOf(Connection& c, const RedisStreamSourceConfig& config, const std::string& key,
                                  bool& retry) {
  retry = false;
  Reply reply = c.command({"TYPE", key});
  if (!reply) return std::nullopt;
  if (reply->type == REDIS_REPLY_ERROR) {
    if (transientRedisError(replyText(reply.get()))) {
      retry = true;
      return std::nullopt;
    }
    throw Error(ErrorCode::kIo, "redis stream source: cannot read stream '" + key + "' on '" + config.address() +
                                    "': " + std::string(replyText(reply.get())));
  }
  return std::string(replyText(reply.get()));
}

Error notAStream(const RedisStreamSourceConfig& config, const std::string& key, const std::string& type) {
  return Error(ErrorCode::kInvalidArgument, "redis stream source: key '" + key + "' on '" + config.address() +
                                                "' holds a " + type + ", not a stream");
}

}  // namespace

void RedisStreamSourceConfig::validate() const {
  if (host.empty()) throw invalid("the host is empty");
  if (port <= 0 || port > 65535) throw invalid("the port " + std::to_string(port) + " is not in 1..65535");
  if (streams.empty()) throw invalid("setStreams({...}) is required");
  std::set<std::string> seen;
  for (const auto& s : streams) {
    if (s.empty()) throw invalid("a stream's key is empty");
    if (!seen.insert(s).second) throw invalid("stream '" + s + "' is named twice");
  }
  if (!validStartingId(startingId))
    throw invalid("the starting ID '" + startingId + "' is not 0, $ or an ID (<ms>-<seq> or <ms>)");
  for (const auto& [stream, id] : startingIds) {
    if (!seen.contains(stream)) throw invalid("a starting ID names stream '" + stream + "', which is not read");
    if (!validStartingId(id))
      throw invalid("the starting ID '" + id + "' of stream '" + stream + "' is not 0, $ or an ID (<ms>-<seq> or <ms>)");
  }
  for (const auto& [stream, id] : stoppingIds) {
    if (!seen.contains(stream)) throw invalid("a stopping ID names stream '" + stream + "', which is not read");
    if (!parseId(id)) throw invalid("the stopping ID '" + id + "' of stream '" + stream + "' is not an ID (<ms>-<seq> or <ms>)");
  }
  if (!username.empty() && password.empty()) throw invalid("setUsername(...) needs setPassword(...)");
  if (batchSize == 0) throw invalid("the batch size must be at least 1");
  if (connectTimeout.count() <= 0 || reconnectTimeout.count() <= 0 || requestTimeout.count() <= 0)
    throw invalid("the connect, reconnect and request timeouts must be positive");
}

std::string RedisStreamSplit::encode() const {
  return (position.empty() ? "?" : position) + " " + (stopId.empty() ? "?" : stopId) + " " + stream;
}

RedisStreamSplit RedisStreamSplit::decode(const std::string& bytes) {
  RedisStreamSplit split;
  const size_t first = bytes.find(' ');
  const size_t second = first == std::string::npos ? first : bytes.find(' ', first + 1);
  auto fail = [&]() -> Error {
    return Error(ErrorCode::kCheckpoint, "a Redis stream source's checkpointed split does not parse: '" + bytes + "'");
  };
  if (second == std::string::npos || second + 1 >= bytes.size()) throw fail();
  split.position = bytes.substr(0, first);
  split.stopId = bytes.substr(first + 1, second - first - 1);
  split.stream = bytes.substr(second + 1);
  if (split.position == "?") split.position.clear();
  else if (!parseId(split.position)) throw fail();
  if (split.stopId == "?") split.stopId.clear();
  else if (!parseId(split.stopId)) throw fail();
  return split;
}

std::unique_ptr<SplitEnumerator> createRedisStreamEnumerator(std::shared_ptr<const RedisStreamSourceConfig> config,
                                                             int parallelism) {
  config->validate();
  // The server answers, the credentials work, each key is a stream or absent: tried
  // until the connect timeout, so that a server still starting is waited for.
  const auto deadline = Clock::now() + config->connectTimeout;
  std::string why;
  size_t checked = 0;
  std::unique_ptr<Connection> c;
  while (checked < config->streams.size()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      throw Error(ErrorCode::kIo, "redis stream source: cannot reach '" + config->address() + "' within " +
                                      std::to_string(config->connectTimeout.count()) + " ms: " + why +
                                      " (is redis-server running there?)");
    if (!c) c = openConnection(*config, std::min(left, kLongestAttempt), why);
    bool retry = false;
    if (c) {
      const std::string& key = config->streams[checked];
      if (auto type = typeOf(*c, *config, key, retry)) {
        if (*type != "stream" && *type != "none") throw notAStream(*config, key, *type);
        ++checked;
        continue;
      }
      if (!retry) {
        why = c->error();
        c.reset();
      } else {
        why = "the server is loading its data";
      }
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(100ms, std::max<Clock::duration>(deadline - Clock::now(), 0ms)));
  }
  std::vector<std::deque<std::unique_ptr<SourceSplit>>> splits(static_cast<size_t>(parallelism));
  for (size_t i = 0; i < config->streams.size(); ++i) {
    auto split = std::make_unique<RedisStreamSplit>();
    split->stream = config->streams[i];
    splits[i % static_cast<size_t>(parallelism)].push_back(std::move(split));
  }
  return std::make_unique<StaticSplitEnumerator>(std::move(splits));
}

int64_t redisEntryTimestamp(const RedisStreamEntry& entry, const std::string& timestampField) {
  if (timestampField.empty()) {
    auto id = parseId(entry.id);
    return id ? static_cast<int64_t>(id->ms) : 0;
  }
  const std::string* value = entry.field(timestampField);
  if (value == nullptr) throw SerializationError("the entry has no field '" + timestampField + "' for its timestamp");
  int64_t ms = 0;
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), ms);
  if (ec != std::errc() || end != value->data() + value->size() || value->empty())
    throw SerializationError("field '" + timestampField + "' = '" + *value +
                             "' is not a timestamp (an integer of ms since the epoch)");
  return ms;
}

// The reading thread of one reader, and the queue between it and the subtask.
struct RedisStreamReader::Fetcher {
  struct Item {
    enum Kind { kEntry, kResolved, kFinished } kind = kEntry;
    RedisStreamEntry entry;  // kEntry; for the others only its stream
    std::string position, stopId;  // kResolved
  };

  Fetcher(std::shared_ptr<const RedisStreamSourceConfig> config, std::function<void()> wakeUp, Counter reconnects,
          int subtask)
      : config_(std::move(config)), wakeUp_(std::move(wakeUp)), reconnects_(reconnects), subtask_(subtask) {}

  void add(RedisStreamSplit split) {
    {
      std::lock_guard lock(mutex_);
      incoming_.push_back(std::move(split));
    }
    cv_.notify_all();
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }

  // Moves up to `maxEntries` entries, and the markers before and among them, to `out`.
  // Throws the error that stopped the thread.
  void take(size_t maxEntries, std::vector<Item>& out) {
    bool made = false;
    {
      std::lock_guard lock(mutex_);
      if (!fatal_.empty()) throw Error(ErrorCode::kIo, fatal_);
      size_t entries = 0;
      while (!queue_.empty() && (queue_.front().kind != Item::kEntry || entries < maxEntries)) {
        if (queue_.front().kind == Item::kEntry) ++entries;
        out.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      queuedEntries_ -= entries;
      made = entries > 0;
    }
    if (made) cv_.notify_all();  // room again
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);  // ends a blocked XREAD now
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Reading {
    RedisStreamSplit split;  // as handed over; its IDs are set once resolved
    StreamId position;
    std::optional<StreamId> stop;
    bool resolved = false;
    bool finished = false;
  };

  bool active(const Reading& r) const { return r.resolved && !r.finished; }

  void run() {
    core::nameThisThread("redis source", " " + std::to_string(subtask_));
    // hiredis write()s: a server gone between two commands would raise SIGPIPE, whose
    // default ends the process. Blocked on this thread, the write fails with EPIPE and
    // the connection is opened again; the process's own handling stays as it was.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    since_ = Clock::now();
    while (true) {
      std::vector<RedisStreamSplit> added;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] {
          if (stopping_ || !incoming_.empty()) return true;
          const bool work = std::any_of(reading_.begin(), reading_.end(), [&](const Reading& r) { return !r.finished; });
          return work && queuedEntries_ < config_->batchSize;
        });
        if (stopping_) break;
        added.swap(incoming_);
      }
      for (auto& split : added) {
        Reading r;
        r.split = std::move(split);
        reading_.push_back(std::move(r));
      }
      try {
        if (!connection_ && !connect()) continue;
        if (!resolve()) continue;
        fetch();
      } catch (const std::exception& e) {  // none may leave the thread: the subtask fails with it
        {
          std::lock_guard lock(mutex_);
          fatal_ = e.what();
        }
        if (wakeUp_) wakeUp_();
        break;
      }
    }
    disconnect();
  }

  // Waits `backoff_` (or until stopped), doubling it for the next time.
  void pause() {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, backoff_, [&] { return stopping_; });
    backoff_ = std::min(backoff_ * 2, kLastBackoff);
  }

  void disconnect() {
    {
      std::lock_guard lock(mutex_);
      fd_ = -1;
    }
    connection_.reset();
  }

  // The connection broke: try again (after a pause) from where the fetching got to.
  void dropped(const std::string& why) {
    why_ = why;
    disconnect();
    since_ = Clock::now();
    pause();
  }

  bool connect() {
    const auto limit = everConnected_ ? config_->reconnectTimeout : config_->connectTimeout;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since_);
    std::string why;
    auto c = openConnection(*config_, std::clamp(limit - waited, std::chrono::milliseconds(1), kLongestAttempt), why);
    if (c) {
      {
        std::lock_guard lock(mutex_);
        if (stopping_) return false;
        fd_ = c->fd();
      }
      connection_ = std::move(c);
      if (everConnected_) reconnects_.inc();
      everConnected_ = true;
      backoff_ = kFirstBackoff;
      return true;
    }
    why_ = why;
    if (Clock::now() - since_ >= limit) {
      throw Error(ErrorCode::kIo,
                  everConnected_
                      ? "redis stream source: lost the connection to '" + config_->address() +
                            "' and could not connect again within " + std::to_string(limit.count()) + " ms: " + why_
                      : "redis stream source: cannot reach '" + config_->address() + "' within " +
                            std::to_string(limit.count()) + " ms: " + why_ + " (is redis-server running there?)");
    }
    pause();
    return false;
  }

  // An error reply about `streams`: transient ones wait and are tried again (false);
  // the others throw, naming the key (WRONGTYPE: the one that is not a stream).
  bool refused(const redisReply* reply, const std::vector<const Reading*>& streams) {
    const std::string error(replyText(reply));
    if (transientRedisError(error)) {
      pause();
      return false;
    }
    if (error.rfind("WRONGTYPE", 0) == 0) {
      for (const Reading* r : streams) {
        bool retry = false;
        auto type = typeOf(*connection_, *config_, r->split.stream, retry);
        if (type && *type != "stream" && *type != "none") throw notAStream(*config_, r->split.stream, *type);
      }
    }
    std::string keys;
    for (const Reading* r : streams) keys += (keys.empty() ? "'" : ", '") + r->split.stream + "'";
    throw Error(ErrorCode::kIo, "redis stream source: cannot read stream " + keys + " on '" + config_->address() +
                                    "': " + error);
  }

  // The ID of the stream's last entry now (0-0 when it has none, or does not exist);
  // nullopt when the connection broke or the server asks to wait.
  std::optional<StreamId> lastId(const Reading& r) {
    Reply reply = connection_->command({"XREVRANGE", r.split.stream, "+", "-", "COUNT", "1"});
    if (!reply) {
      dropped(connection_->error());
      return std::nullopt;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
      refused(reply.get(), {&r});
      return std::nullopt;
    }
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) return StreamId{};
    const redisReply* entry = reply->element[0];
    if (entry->type != REDIS_REPLY_ARRAY || entry->elements < 1 || entry->element[0]->type != REDIS_REPLY_STRING)
      return StreamId{};
    return parseId(replyText(entry->element[0])).value_or(StreamId{});
  }

  // Decides the IDs of the splits that have none yet, and says so through the queue;
  // false when the connection broke.
  bool resolve() {
    std::vector<Item> items;
    for (Reading& r : reading_) {
      if (r.resolved) continue;
      bool changed = false;
      if (r.split.position.empty()) {
        auto it = config_->startingIds.find(r.split.stream);
        const std::string& start = it != config_->startingIds.end() ? it->second : config_->startingId;
        if (start == "0" || start == "-") {
          r.position = StreamId{};
        } else if (start == "$") {
          auto last = lastId(r);
          if (!last) return false;
          r.position = *last;
        } else {
          r.position = parseId(start)->before();  // inclusive: read from the entry at `start` on
        }
        changed = true;
      } else {
        r.position = *parseId(r.split.position);
      }
      if (!r.split.stopId.empty()) {
        r.stop = *parseId(r.split.stopId);
      } else if (config_->bounded) {
        if (auto it = config_->stoppingIds.find(r.split.stream); it != config_->stoppingIds.end()) {
          r.stop = parseId(it->second, std::numeric_limits<uint64_t>::max());
        } else {
          auto last = lastId(r);
          if (!last) return false;
          r.stop = *last;
        }
        changed = true;
      }
      r.resolved = true;
      r.split.position = r.position.str();
      if (r.stop) r.split.stopId = r.stop->str();
      if (changed) {
        Item item;
        item.kind = Item::kResolved;
        item.entry.stream = r.split.stream;
        item.position = r.split.position;
        item.stopId = r.split.stopId;
        items.push_back(std::move(item));
      }
      if (r.stop && r.position >= *r.stop) items.push_back(finish(r));
    }
    publish(std::move(items), 0);
    return true;
  }

  Item finish(Reading& r) {
    r.finished = true;
    Item item;
    item.kind = Item::kFinished;
    item.entry.stream = r.split.stream;
    return item;
  }

  void publish(std::vector<Item> items, size_t entries) {
    if (items.empty()) return;
    bool wasEmpty;
    {
      std::lock_guard lock(mutex_);
      wasEmpty = queue_.empty();
      for (auto& item : items) queue_.push_back(std::move(item));
      queuedEntries_ += entries;
    }
    if (wasEmpty && wakeUp_) wakeUp_();
  }

  // One XREAD over every stream being read: blocking unless a bounded one is among
  // them (whose end is an XREAD that finds nothing more).
  void fetch() {
    std::vector<Reading*> streams;
    for (Reading& r : reading_)
      if (active(r)) streams.push_back(&r);
    if (streams.empty()) return;
    const bool bounded = std::any_of(streams.begin(), streams.end(), [](const Reading* r) { return r->stop.has_value(); });
    std::vector<std::string> args{"XREAD", "COUNT", std::to_string(config_->batchSize)};
    if (!bounded) {
      args.push_back("BLOCK");
      args.push_back(std::to_string(kBlock.count()));
    }
    args.push_back("STREAMS");
    for (const Reading* r : streams) args.push_back(r->split.stream);
    for (const Reading* r : streams) args.push_back(r->position.str());
    Reply reply = connection_->command(args);
    if (!reply) {
      dropped(connection_->error());
      return;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
      refused(reply.get(), std::vector<const Reading*>(streams.begin(), streams.end()));
      return;
    }
    std::vector<Item> items;
    size_t entries = 0;
    std::set<const Reading*> answered;
    if (reply->type == REDIS_REPLY_ARRAY) {
      for (size_t s = 0; s < reply->elements; ++s) {
        const redisReply* stream = reply->element[s];
        if (stream->type != REDIS_REPLY_ARRAY || stream->elements != 2) continue;
        const std::string_view name = replyText(stream->element[0]);
        auto it = std::find_if(streams.begin(), streams.end(), [&](const Reading* r) { return r->split.stream == name; });
        if (it == streams.end()) continue;
        Reading& r = **it;
        answered.insert(&r);
        const redisReply* list = stream->element[1];
        for (size_t e = 0; e < list->elements && !r.finished; ++e) {
          const redisReply* entry = list->element[e];
          if (entry->type != REDIS_REPLY_ARRAY || entry->elements < 1) continue;
          auto id = parseId(replyText(entry->element[0]));
          if (!id || *id <= r.position) continue;
          if (r.stop && *id > *r.stop) {
            items.push_back(finish(r));
            break;
          }
          r.position = *id;
          const redisReply* fields = entry->elements > 1 ? entry->element[1] : nullptr;
          if (fields != nullptr && fields->type == REDIS_REPLY_ARRAY) {
            Item item;
            item.entry.stream = r.split.stream;
            item.entry.id = id->str();
            for (size_t f = 0; f + 1 < fields->elements; f += 2)
              item.entry.fields.emplace_back(std::string(replyText(fields->element[f])),
                                             std::string(replyText(fields->element[f + 1])));
            items.push_back(std::move(item));
            ++entries;
          }
          if (r.stop && r.position >= *r.stop) items.push_back(finish(r));
        }
      }
    }
    // Without BLOCK, a bounded stream that had nothing more is at its end (later
    // entries get greater IDs than its stop).
    if (bounded)
      for (Reading* r : streams)
        if (r->stop && !r->finished && !answered.contains(r)) items.push_back(finish(*r));
    publish(std::move(items), entries);
  }

  const std::shared_ptr<const RedisStreamSourceConfig> config_;
  const std::function<void()> wakeUp_;
  Counter reconnects_;
  const int subtask_;
  std::thread thread_;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;                 // guarded by mutex_
  size_t queuedEntries_ = 0;               // guarded by mutex_
  std::vector<RedisStreamSplit> incoming_;  // guarded by mutex_
  bool stopping_ = false;                  // guarded by mutex_
  std::string fatal_;                      // guarded by mutex_
  int fd_ = -1;                            // guarded by mutex_: the connection's socket, for stop()

  // The thread's own.
  std::vector<Reading> reading_;
  std::unique_ptr<Connection> connection_;
  bool everConnected_ = false;
  Clock::time_point since_;  // of the start, or of the last lost connection
  std::chrono::milliseconds backoff_ = kFirstBackoff;
  std::string why_;
};

RedisStreamReader::RedisStreamReader(std::shared_ptr<const RedisStreamSourceConfig> config,
                                     const SourceReaderContext& context)
    : config_(std::move(config)),
      context_(context),
      fetchEventTimeLag_(std::numeric_limits<double>::quiet_NaN()),
      reconnects_(context_.metricGroup.addGroup("RedisStreamSourceReader").counter("reconnects")) {
  context_.metricGroup.gauge("currentFetchEventTimeLag", [this] { return fetchEventTimeLag_; });
}

RedisStreamReader::~RedisStreamReader() { close(); }

void RedisStreamReader::close() {
  if (fetcher_) fetcher_->stop();  // no wake-up after this returns
  fetcher_.reset();
}

std::chrono::steady_clock::time_point RedisStreamReader::nextPollTime() const {
  return Clock::now() + (context_.wakeUp ? kSplitWake : std::chrono::milliseconds(2));
}

void RedisStreamReader::start(RedisStreamSplit split) {
  const std::string id = split.splitId();
  if (splits_.contains(id)) return;
  splits_[id] = Split{split, false};
  // Said at once, with no record: its watermark holds the source's back from now on.
  announced_.push_back({id, 0, false});
  if (!fetcher_) fetcher_ = std::make_unique<Fetcher>(config_, context_.wakeUp, reconnects_, context_.subtaskIndex);
  fetcher_->add(std::move(split));
}

void RedisStreamReader::addSplits(const std::vector<std::string>& splits) {
  for (const auto& bytes : splits) start(RedisStreamSplit::decode(bytes));
}

SplitRun& RedisStreamReader::runOf(const std::string& splitId) {
  if (runs_.empty() || runs_.back().splitId != splitId || runs_.back().finished) runs_.push_back({splitId, 0, false});
  return runs_.back();
}

InputStatus RedisStreamReader::poll(size_t maxRecords, const std::function<size_t(const RedisStreamEntry&)>& visit) {
  runs_.clear();
  if (!enumeratorDone_ && context_.enumerator != nullptr) {
    while (auto split = context_.enumerator->nextSplit(context_.subtaskIndex))
      start(std::move(static_cast<RedisStreamSplit&>(*split)));
  }
  enumeratorDone_ = true;  // the streams are known up front
  for (SplitRun& run : announced_) runOf(run.splitId).finished = run.finished;
  announced_.clear();
  std::vector<Fetcher::Item> items;
  if (fetcher_) fetcher_->take(std::max<size_t>(maxRecords, 1), items);
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (Fetcher::Item& item : items) {
    auto it = splits_.find(item.entry.stream);
    if (it == splits_.end()) continue;
    Split& split = it->second;
    switch (item.kind) {
      case Fetcher::Item::kResolved:
        split.split.position = item.position;
        split.split.stopId = item.stopId;
        break;
      case Fetcher::Item::kFinished:
        split.finished = true;
        runOf(it->first).finished = true;
        break;
      case Fetcher::Item::kEntry: {
        size_t bytes = item.entry.id.size();
        for (const auto& [name, value] : item.entry.fields) bytes += name.size() + value.size();
        context_.metricGroup.getIOMetricGroup().getNumBytesInCounter().inc(bytes);
        fetchEventTimeLag_ = static_cast<double>(now - redisEntryTimestamp(item.entry, {}));
        const size_t made = visit(item.entry);
        runOf(it->first).records += made;
        split.split.position = item.entry.id;
        break;
      }
    }
  }
  if (!items.empty() || !runs_.empty()) return InputStatus::MORE_AVAILABLE;
  const bool reading = std::any_of(splits_.begin(), splits_.end(), [](const auto& s) { return !s.second.finished; });
  return !reading && config_->bounded ? InputStatus::END_OF_INPUT : InputStatus::NOTHING_AVAILABLE;
}

std::vector<std::string> RedisStreamReader::snapshotState(int64_t) {
  std::vector<std::string> out;
  for (const auto& [id, s] : splits_)
    if (!s.finished) out.push_back(s.split.encode());
  return out;
}

}  // namespace weir::detail
