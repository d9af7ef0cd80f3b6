// Clicks per user in event-time windows, from a Redis stream to PostgreSQL exactly once
// (or to Redis, or to files): reads entries with a `user` field from a stream, counts
// them per user in tumbling windows of the entries' own times (their IDs' milliseconds),
// and writes one row per user and window.
//
//   XADD clicks * user alice                                         in --stream
//   (user_id, window_start, window_end, clicks) = ('alice', 1700000000000,
//                                                  1700000001000, 3)  into --table
//
//   CREATE TABLE click_counts (user_id text, window_start bigint, window_end bigint, clicks bigint);
//   weir run redis-clicks --redis localhost:6379 --stream clicks
//       --postgres 'host=localhost dbname=weir user=weir' --table click_counts
//       --checkpoint-interval 1000
//
// Exactly once (the default) needs checkpoints and a server with max_prepared_transactions
// above 0: each checkpoint's rows are one prepared transaction, committed when the
// checkpoint completes (docs/postgres.md). --sink redis adds each count to a hash
// clicks:<window_start> with HINCRBY in the checkpoint's MULTI/EXEC (docs/redis.md);
// --sink file writes "user,window_start,clicks" lines under --output.
#include <chrono>
#include <cstdio>
#include <thread>

#include "cli/interrupt.h"
#include "cli/examples.h"
#include "weir/file_sink.h"
#include "weir/postgres_sink.h"
#include "weir/redis_sink.h"
#include "weir/redis_stream_source.h"
#include "weir/weir.h"

namespace weir::cli {

namespace {

struct Click {
  std::string user;
};
WEIR_STRUCT(Click, user);

struct UserClicks {
  std::string user;
  int64_t window_start = 0;
  int64_t window_end = 0;
  int64_t clicks = 0;
};
WEIR_STRUCT(UserClicks, user, window_start, window_end, clicks);

struct CountClicks : AggregateFunction<Click, int64_t, int64_t> {
  int64_t createAccumulator() override { return 0; }
  int64_t add(const Click&, int64_t count) override { return count + 1; }
  int64_t getResult(const int64_t& count) override { return count; }
  int64_t merge(int64_t a, const int64_t& b) override { return a + b; }
};

struct WithWindow : ProcessWindowFunction<int64_t, UserClicks, std::string> {
  void process(const std::string& user, Context& ctx, std::span<const int64_t> counts,
               Collector<UserClicks>& out) override {
    out.collect({user, ctx.window().start, ctx.window().end, counts.front()});
  }
};

// Passes clicks on at most `rate` a second (per subtask): for runs under load and faults.
struct Throttle : RichMapFunction<Click, Click> {
  explicit Throttle(int64_t rate) : rate_(rate) {}
  void open() override { start_ = std::chrono::steady_clock::now(); }
  Click map(const Click& c) override {
    if (++passed_ % 1000 == 0) std::this_thread::sleep_until(start_ + std::chrono::microseconds(passed_ * 1'000'000 / rate_));
    return c;
  }
  int64_t rate_;
  int64_t passed_ = 0;
  std::chrono::steady_clock::time_point start_;
};

struct CountLine : Encoder<UserClicks> {
  void encode(const UserClicks& c, std::string& out) override {
    out += c.user + "," + std::to_string(c.window_start) + "," + std::to_string(c.clicks) + "\n";
  }
};

struct Settings {
  std::string redis = "127.0.0.1:6379";
  std::string stream = "clicks";
  std::string sink = "postgres";
  std::string postgres;
  std::string table = "click_counts";
  std::string output;
  std::string guarantee = "exactly-once";
  bool plainInserts = false;
  std::string transactionIdPrefix = "redis-clicks";
  int64_t windowMs = 1000;
  int64_t maxRate = 0;  // clicks per second; 0: no limit
  int batchSize = 0;    // 0: the sink's default
  bool bounded = false;
};

DeliveryGuarantee guaranteeOf(const std::string& name) {
  if (name == "exactly-once") return DeliveryGuarantee::EXACTLY_ONCE;
  if (name == "at-least-once") return DeliveryGuarantee::AT_LEAST_ONCE;
  throw Error(ErrorCode::kInvalidArgument,
              "--delivery-guarantee must be exactly-once or at-least-once, not '" + name + "'");
}

int runRedisClicks(const JobOptions& options, const Settings& s) {
  if (s.windowMs <= 0) throw Error(ErrorCode::kInvalidArgument, "--window must be a positive number of ms");
  if (s.maxRate < 0) throw Error(ErrorCode::kInvalidArgument, "--max-rate must not be negative");
  if (s.batchSize < 0) throw Error(ErrorCode::kInvalidArgument, "--batch-size must not be negative");
  const DeliveryGuarantee guarantee = guaranteeOf(s.guarantee);
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
  // The stream's IDs only grow: its entries come in event-time order.
  auto clicks = env.fromSource(source.build(), WatermarkStrategy<Click>::forMonotonousTimestamps(), "clicks").uid("clicks");
  if (s.maxRate > 0) clicks = clicks.map(Throttle(s.maxRate)).name("throttle").uid("throttle");
  auto counts = clicks.keyBy([](const Click& c) { return c.user; })
                    .window(TumblingEventTimeWindows::of(std::chrono::milliseconds(s.windowMs)))
                    .aggregate(CountClicks{}, WithWindow{})
                    .name("clicks per user and window")
                    .uid("clicks-per-window");
  if (s.sink == "postgres") {
    if (s.postgres.empty()) throw Error(ErrorCode::kInvalidArgument, "--sink postgres needs --postgres CONNECTION");
    const bool upsert = guarantee != DeliveryGuarantee::EXACTLY_ONCE && !s.plainInserts;
    counts
        .sinkTo(PostgresSink<UserClicks>::builder()
                    .setConnectionString(s.postgres)
                    .setSql("INSERT INTO " + s.table + " (user_id, window_start, window_end, clicks) VALUES (?, ?, ?, ?)" +
                            (upsert ? " ON CONFLICT (user_id, window_start) DO UPDATE SET clicks = EXCLUDED.clicks" : ""))
                    .setStatementBuilder([](PreparedStatement& ps, const UserClicks& c) {
                      ps.setString(1, c.user);
                      ps.setLong(2, c.window_start);
                      ps.setLong(3, c.window_end);
                      ps.setLong(4, c.clicks);
                    })
                    .setExecutionOptions(JdbcExecutionOptions::builder()
                                             .withBatchSize(s.batchSize > 0 ? s.batchSize
                                                                            : JdbcExecutionOptions::kDefaultBatchSize)
                                             .build())
                    .setDeliveryGuarantee(guarantee)
                    .setTransactionIdPrefix(s.transactionIdPrefix)
                    .build())
        .name("click counts table")
        .uid("click-counts-table");
  } else if (s.sink == "redis") {
    auto sink = RedisSink<UserClicks>::builder();
    if (s.batchSize > 0) sink.setBatchSize(s.batchSize);
    counts
        .sinkTo(sink
                    .setAddress(s.redis)
                    .setCommandBuilder([](const UserClicks& c, RedisCommands& out) {
                      out.add({"HINCRBY", "clicks:" + std::to_string(c.window_start), c.user, std::to_string(c.clicks)});
                    })
                    .setDeliveryGuarantee(guarantee)
                    .setTransactionIdPrefix(s.transactionIdPrefix)
                    .build())
        .name("click counts hashes")
        .uid("click-counts-hashes");
  } else if (s.sink == "file") {
    if (s.output.empty()) throw Error(ErrorCode::kInvalidArgument, "--sink file needs --output FOLDER");
    counts.sinkTo(FileSink<UserClicks>::forRowFormat(s.output, CountLine()).build())
        .name("click counts files")
        .uid("click-counts-files");
  } else {
    throw Error(ErrorCode::kInvalidArgument, "--sink must be postgres, redis or file, not '" + s.sink + "'");
  }
  auto client = env.executeAsync("redis click count");
  cancelOnInterrupt(client);
  if (!client.getWebInterfaceURL().empty()) std::fprintf(stderr, "Web UI: %s\n", client.getWebInterfaceURL().c_str());
  client.wait();
  return 0;
}

}  // namespace

Example redisClickCountExample() {
  return {"redis-clicks",
          "Count clicks per user in event-time windows, from a Redis stream to PostgreSQL (or Redis, or files), exactly "
          "once",
          [](JobOptions& app) {
            auto s = std::make_shared<Settings>();
            app.addOption("--redis", s->redis, "The Redis server, host:port (default 127.0.0.1:6379)");
            app.addOption("--stream", s->stream, "The stream of clicks, entries with a 'user' field (default clicks)");
            app.addOption("--sink", s->sink, "postgres (default), redis or file");
            app.addOption("--postgres", s->postgres, "--sink postgres: the server, as libpq's connection string");
            app.addOption("--table", s->table,
                           "--sink postgres: the table, with columns user_id, window_start, window_end, clicks "
                           "(default click_counts)");
            app.addOption("--output", s->output, "--sink file: the folder of the part files");
            app.addOption("--delivery-guarantee", s->guarantee, "exactly-once (default) or at-least-once");
            app.addFlag("--plain-inserts", s->plainInserts,
                         "at-least-once into PostgreSQL: plain INSERTs instead of upserts on (user_id, window_start)");
            app.addOption("--transaction-id-prefix", s->transactionIdPrefix,
                           "Names the sink's transactions (PostgreSQL) or fence keys (Redis); default redis-clicks");
            app.addOption("--window", s->windowMs, "The windows' length in ms (default 1000)");
            app.addFlag("--bounded", s->bounded, "Read the stream up to its last entry at the start, then finish");
            app.addOption("--max-rate", s->maxRate, "Read at most this many clicks a second (default: no limit)");
            app.addOption("--batch-size", s->batchSize,
                           "Rows (postgres) or commands (redis) sent at once, at least once (default 5000 / 1000)");
            return [s](const JobOptions& options) { return runRedisClicks(options, *s); };
          }};
}

}  // namespace weir::cli
