#include "redis_bench.h"

#include <hiredis/hiredis.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness.h"
#include "support/redis_server.h"
#include "weir/redis_sink.h"
#include "weir/redis_stream_source.h"
#include "weir/weir.h"

namespace weir::bench {

namespace {

// 4 streams, so that each of 2 readers has two to read; 1 M records, so that the
// exactly-once job spans several checkpoints.
constexpr int kStreams = 4;
constexpr int64_t kPerStream = 250'000;
constexpr int64_t kRecords = kStreams * kPerStream;
// The sink's default batch, and the source's XREAD COUNT.
const int kBatch = detail::RedisSinkConfig{}.batchSize;

std::string streamName(int s) { return "in:" + std::to_string(s); }

// An entry's key ("<stream>:<n>", unique over the streams) and value (20 bytes).
struct Record {
  std::string key;
  std::string value;
};
WEIR_STRUCT(Record, key, value);

std::string valueOf(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "value-%014lld", static_cast<long long>(n));
  return buf;
}

void fill(test::RedisClient& redis) {
  for (int s = 0; s < kStreams; ++s) {
    std::vector<std::vector<std::pair<std::string, std::string>>> entries;
    entries.reserve(kPerStream);
    for (int64_t i = 0; i < kPerStream; ++i)
      entries.push_back({{"k", std::to_string(s) + ":" + std::to_string(i)}, {"v", valueOf(s * kPerStream + i)}});
    redis.xaddMany(streamName(s), entries);
  }
}

// The baseline: one connection that reads every stream with XREAD COUNT kBatch (no
// BLOCK: a nil reply is the end) and sends HSET <out> <k> <v> for each entry, pipelined
// in batches of kBatch, each batch's replies read before the next goes out.
void plainLoop(int port, const std::string& out) {
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err) throw std::runtime_error("redis_pipeline: cannot connect: " + std::string(c ? c->errstr : "?"));
  std::vector<std::string> positions(kStreams, "0");
  int pending = 0;
  auto drain = [&] {
    for (; pending > 0; --pending) {
      void* r = nullptr;
      if (redisGetReply(c, &r) != REDIS_OK) throw std::runtime_error("redis_pipeline: " + std::string(c->errstr));
      const bool error = static_cast<redisReply*>(r)->type == REDIS_REPLY_ERROR;
      freeReplyObject(r);
      if (error) throw std::runtime_error("redis_pipeline: an HSET was refused");
    }
  };
  std::vector<const char*> argv;
  std::vector<size_t> lengths;
  const std::string count = std::to_string(kBatch);
  for (;;) {
    argv = {"XREAD", "COUNT", count.c_str(), "STREAMS"};
    std::vector<std::string> names;
    for (int s = 0; s < kStreams; ++s) names.push_back(streamName(s));
    for (int s = 0; s < kStreams; ++s) argv.push_back(names[s].c_str());
    for (int s = 0; s < kStreams; ++s) argv.push_back(positions[s].c_str());
    lengths.clear();
    for (const char* a : argv) lengths.push_back(std::strlen(a));
    auto* reply = static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    if (reply == nullptr) throw std::runtime_error("redis_pipeline: " + std::string(c->errstr));
    if (reply->type == REDIS_REPLY_NIL) {
      freeReplyObject(reply);
      break;
    }
    if (reply->type != REDIS_REPLY_ARRAY) throw std::runtime_error("redis_pipeline: XREAD failed");
    for (size_t s = 0; s < reply->elements; ++s) {
      const redisReply* stream = reply->element[s];
      const std::string name(stream->element[0]->str, stream->element[0]->len);
      const redisReply* list = stream->element[1];
      for (size_t e = 0; e < list->elements; ++e) {
        const redisReply* entry = list->element[e];
        const redisReply* fields = entry->element[1];
        const char* args[] = {"HSET", out.c_str(), fields->element[1]->str, fields->element[3]->str};
        const size_t sizes[] = {4, out.size(), fields->element[1]->len, fields->element[3]->len};
        redisAppendCommandArgv(c, 4, args, sizes);
        if (++pending == kBatch) drain();
      }
      if (list->elements > 0) {
        const redisReply* last = list->element[list->elements - 1]->element[0];
        positions[std::stoi(name.substr(3))].assign(last->str, last->len);
      }
    }
    freeReplyObject(reply);
    drain();  // the next XREAD's reply comes after these
  }
  redisFree(c);
}

void runJob(const std::string& address, const std::string& out, int parallelism, DeliveryGuarantee guarantee,
            bool checkpoints) {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism);
  if (checkpoints) env.enableCheckpointing(std::chrono::seconds(1));
  std::vector<std::string> streams;
  for (int s = 0; s < kStreams; ++s) streams.push_back(streamName(s));
  env.fromSource(RedisStreamSource<Record>::builder()
                     .setAddress(address)
                     .setStreams(streams)
                     .setBounded()
                     .setDeserializer([](const RedisStreamEntry& e) { return Record{e.fields[0].second, e.fields[1].second}; })
                     .build(),
                 WatermarkStrategy<Record>::noWatermarks(), "streams")
      .sinkTo(RedisSink<Record>::builder()
                  .setAddress(address)
                  .setCommandBuilder([out](const Record& r, RedisCommands& commands) {
                    commands.add({"HSET", out, r.key, r.value});
                  })
                  .setDeliveryGuarantee(guarantee)
                  // A fresh start removes the fences an earlier run left under this prefix.
                  .setTransactionIdPrefix("bench")
                  .build());
  env.execute("redis_pipeline");
}

}  // namespace

void redisPipeline(int runs) {
  test::RedisServer server;
  test::RedisClient redis(server.port());
  // The test server syncs its append-only file at every write: this measures the
  // clients, so the data stays in memory only.
  redis.command({"CONFIG", "SET", "appendonly", "no"});
  fill(redis);
  int run = 0;
  std::string out;
  auto next = [&] { out = "out:" + std::to_string(++run); };
  auto check = [&] {
    const test::RedisValue n = redis.command({"HLEN", out});
    const test::RedisValue sample = redis.command({"HGET", out, "3:" + std::to_string(kPerStream - 1)});
    if (n.text != std::to_string(kRecords) || sample.text != valueOf(kRecords - 1))
      throw std::runtime_error("redis_pipeline: " + out + " holds " + n.text + " fields");
    redis.command({"UNLINK", out});
  };
  for (int parallelism : {1, 2}) {
    auto [engine, baseline] = medianSecondsInterleaved(
        runs,
        [&] {
          next();
          runJob(server.address(), out, parallelism, DeliveryGuarantee::AT_LEAST_ONCE, false);
          check();
        },
        [&] {
          next();
          plainLoop(server.port(), out);
          check();
        });
    const double e = kRecords / engine, b = kRecords / baseline;
    printFigure("redis_pipeline", {{"parallelism", parallelism}, {"records", static_cast<double>(kRecords)},
                                   {"records_per_s", e}, {"baseline_records_per_s", b}, {"ratio", b / e}});
  }
  auto [exactlyOnce, atLeastOnce] = medianSecondsInterleaved(
      runs,
      [&] {
        next();
        runJob(server.address(), out, 1, DeliveryGuarantee::EXACTLY_ONCE, true);
        check();
      },
      [&] {
        next();
        runJob(server.address(), out, 1, DeliveryGuarantee::AT_LEAST_ONCE, true);
        check();
      });
  const double e = kRecords / exactlyOnce, b = kRecords / atLeastOnce;
  printFigure("redis_pipeline_exactly_once", {{"parallelism", 1}, {"records", static_cast<double>(kRecords)},
                                              {"records_per_s", e}, {"at_least_once_records_per_s", b}, {"ratio", b / e}});
}

}  // namespace weir::bench
