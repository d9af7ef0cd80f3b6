// Enriches a stream of clicks with each user's country, looked up in Redis by async I/O:
// up to --capacity lookups in flight per subtask, sent over a bounded pool of
// --connections Redis connections, each on a thread of its own. The job does not wait
// for one answer before it asks the next question.
//
//   HSET user:alice country NZ                        the users, in --redis
//   XADD clicks * user alice                          the clicks, in --stream
//   weir run redis-enrich --redis localhost:6379 --stream clicks --output enriched/
//
// writes "alice,NZ" lines into part files under --output ("alice,unknown" for a user
// without a country). A lookup that fails (the server restarts, say) is tried again up to
// --retries times, 100 ms apart, then fails the job naming the server; one that has no
// answer after --timeout ms fails it with a TimeoutException. Results come out as the answers come back (unorderedWait), never
// across a watermark.
#include <hiredis/hiredis.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "cli/examples.h"
#include "cli/interrupt.h"
#include "weir/file_sink.h"
#include "weir/redis_stream_source.h"
#include "weir/weir.h"

namespace weir::cli {

namespace {

struct Click {
  std::string user;
};
WEIR_STRUCT(Click, user);

struct EnrichedClick {
  std::string user;
  std::string country;
};
WEIR_STRUCT(EnrichedClick, user, country);

// A fixed number of threads, each with its own connection to Redis, answering HGET
// requests from one queue. The async operator bounds how many requests wait in it.
class RedisLookupPool {
 public:
  using Callback = std::function<void(std::optional<std::string> value, std::string error)>;

  RedisLookupPool(std::string host, int port, int connections) : host_(std::move(host)), port_(port) {
    for (int i = 0; i < connections; ++i) threads_.emplace_back([this] { serve(); });
  }
  // Drops the lookups not started and waits for those under way.
  ~RedisLookupPool() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
      queue_.clear();
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // HGET key field; `done` runs on a pool thread with the value (nullopt: none) or an error.
  void hget(std::string key, std::string field, Callback done) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({std::move(key), std::move(field), std::move(done)});
    }
    ready_.notify_one();
  }

 private:
  struct Lookup {
    std::string key, field;
    Callback done;
  };
  using Context = std::unique_ptr<redisContext, decltype(&redisFree)>;

  std::string where() const { return "redis " + host_ + ":" + std::to_string(port_); }

  void serve() {
    Context c(nullptr, &redisFree);
    while (true) {
      Lookup lookup;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return stopped_ || !queue_.empty(); });
        if (stopped_) return;
        lookup = std::move(queue_.front());
        queue_.pop_front();
      }
      if (!c || c->err) {  // (re)connect, each read and write bounded by a second
        timeval oneSecond{1, 0};
        c.reset(redisConnectWithTimeout(host_.c_str(), port_, oneSecond));
        if (c && !c->err) redisSetTimeout(c.get(), oneSecond);
      }
      if (!c || c->err) {
        lookup.done(std::nullopt, where() + ": " + (c ? c->errstr : "cannot allocate a connection"));
        continue;
      }
      auto* reply = static_cast<redisReply*>(
          redisCommand(c.get(), "HGET %b %b", lookup.key.data(), lookup.key.size(), lookup.field.data(), lookup.field.size()));
      if (reply == nullptr) {
        lookup.done(std::nullopt, where() + ": " + c->errstr);
        continue;
      }
      std::unique_ptr<redisReply, decltype(&freeReplyObject)> owned(reply, &freeReplyObject);
      if (reply->type == REDIS_REPLY_STRING) lookup.done(std::string(reply->str, reply->len), "");
      else if (reply->type == REDIS_REPLY_NIL) lookup.done(std::nullopt, "");
      else lookup.done(std::nullopt, where() + ": HGET " + lookup.key + " answered " +
                                         (reply->type == REDIS_REPLY_ERROR ? std::string(reply->str, reply->len)
                                                                           : "an unexpected reply"));
    }
  }

  std::string host_;
  int port_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Lookup> queue_;  // guarded by mutex_
  bool stopped_ = false;      // guarded by mutex_
  std::vector<std::thread> threads_;
};

// The async function: one pool per subtask, opened with it and closed with it.
class LookupCountry : public AsyncFunction<Click, EnrichedClick> {
 public:
  LookupCountry(std::string host, int port, int connections) : host_(std::move(host)), port_(port), connections_(connections) {}
  void open() override { pool_ = std::make_shared<RedisLookupPool>(host_, port_, connections_); }
  void close() override { pool_.reset(); }
  void asyncInvoke(const Click& click, ResultFuture<EnrichedClick> result) override {
    pool_->hget("user:" + click.user, "country",
                [user = click.user, result](std::optional<std::string> country, std::string error) {
                  if (!error.empty()) result.completeExceptionally(std::runtime_error(error));
                  else result.complete({EnrichedClick{user, country.value_or("unknown")}});
                });
  }

 private:
  std::string host_;
  int port_;
  int connections_;
  std::shared_ptr<RedisLookupPool> pool_;  // each subtask opens its own copy's
};

struct EnrichedLine : Encoder<EnrichedClick> {
  void encode(const EnrichedClick& c, std::string& out) override { out += c.user + "," + c.country + "\n"; }
};

struct Settings {
  std::string redis = "127.0.0.1:6379";
  std::string stream = "clicks";
  std::string output;
  int connections = 4;
  int capacity = 100;
  int64_t timeoutMs = 5000;
  int retries = 3;
  bool bounded = false;
};

int runRedisEnrich(const JobOptions& options, const Settings& s) {
  if (s.connections < 1) throw Error(ErrorCode::kInvalidArgument, "--connections must be at least 1");
  if (s.retries < 1) throw Error(ErrorCode::kInvalidArgument, "--retries must be at least 1");
  const auto colon = s.redis.rfind(':');
  if (colon == std::string::npos) throw Error(ErrorCode::kInvalidArgument, "--redis must be host:port, not '" + s.redis + "'");
  const std::string host = s.redis.substr(0, colon);
  const int port = std::atoi(s.redis.c_str() + colon + 1);
  if (port <= 0 || port > 65535) throw Error(ErrorCode::kInvalidArgument, "--redis has no valid port: '" + s.redis + "'");

  StreamExecutionEnvironment env;
  env.setParallelism(1);
  options.applyTo(env);
  auto source = RedisStreamSource<Click>::builder()
                    .setAddress(s.redis)
                    .setStreams({s.stream})
                    .setDeserializer([](const RedisStreamEntry& e) {
                      const std::string* user = e.field("user");
                      if (user == nullptr) throw SerializationError("no field 'user'");
                      return Click{*user};
                    });
  if (s.bounded) source.setBounded();
  auto clicks = env.fromSource(source.build(), WatermarkStrategy<Click>::forMonotonousTimestamps(), "clicks").uid("clicks");
  auto retry = AsyncRetryStrategies::FixedDelayRetryStrategyBuilder<EnrichedClick>(s.retries, 100)
                   .ifException(RetryPredicates::HAS_EXCEPTION_PREDICATE)
                   .build();
  auto enriched = AsyncDataStream::unorderedWaitWithRetry(clicks, LookupCountry(host, port, s.connections),
                                                          std::chrono::milliseconds(s.timeoutMs), s.capacity, retry)
                      .name("country of the user")
                      .uid("country-lookup");
  if (s.output.empty()) enriched.print();
  else enriched.sinkTo(FileSink<EnrichedClick>::forRowFormat(s.output, EnrichedLine()).build()).name("enriched clicks");
  auto client = env.executeAsync("redis enrich");
  cancelOnInterrupt(client);
  client.wait();
  return 0;
}

}  // namespace

Example redisEnrichExample() {
  return {"redis-enrich", "Enrich clicks from a Redis stream with each user's country, looked up in Redis by async I/O",
          [](JobOptions& app) {
            auto s = std::make_shared<Settings>();
            app.addOption("--redis", s->redis, "The Redis server, host:port (default 127.0.0.1:6379)");
            app.addOption("--stream", s->stream, "The stream of clicks, entries with a 'user' field (default clicks)");
            app.addOption("--output", s->output, "The folder of the part files (default: print to stdout)");
            app.addOption("--connections", s->connections, "Redis connections per subtask (default 4)");
            app.addOption("--capacity", s->capacity, "Lookups in flight per subtask at most (default 100)");
            app.addOption("--timeout", s->timeoutMs, "ms a lookup may take, retries included (default 5000)");
            app.addOption("--retries", s->retries, "Attempts after a failed lookup, 100 ms apart (default 3)");
            app.addFlag("--bounded", s->bounded, "Stop at the stream's end as it is when the job starts");
            return [s](const JobOptions& options) { return runRedisEnrich(options, *s); };
          }};
}

}  // namespace weir::cli
