// Page views per page in event-time windows, from Kafka to Kafka exactly once: reads
// JSON events from a topic, counts them per page in tumbling event-time windows (their
// own timestamps, up to --out-of-orderness late), and writes one JSON result per page
// and window to a topic in Kafka transactions, visible to read_committed readers when
// the checkpoint that covers them completes.
//
//   {"page": "/home", "user": 42, "timestamp": 1700000000123}          in --input-topic
//   {"page": "/home", "window_start": 1700000000000,
//    "window_end": 1700000010000, "views": 17}                         out --output-topic
//
//   weir run kafka-windows --bootstrap-servers localhost:9092 --input-topic views --output-topic view-counts --window 10000 --checkpoint-interval 1000
//
// Exactly-once output commits at checkpoints, so --checkpoint-interval is required. An
// event that is not such JSON fails the job, naming its partition and offset (the
// source's bad-record policy, docs/formats.md).
#include <cstdio>

#include "cli/interrupt.h"
#include "cli/examples.h"
#include "weir/json_format.h"
#include "weir/kafka_sink.h"
#include "weir/kafka_source.h"
#include "weir/weir.h"

namespace weir::cli {

namespace {

struct PageView {
  std::string page;
  int64_t user = 0;
  int64_t timestamp = 0;  // ms since the epoch
};
WEIR_STRUCT(PageView, page, user, timestamp);

struct PageViews {
  std::string page;
  int64_t window_start = 0;
  int64_t window_end = 0;
  int64_t views = 0;
};
WEIR_STRUCT(PageViews, page, window_start, window_end, views);

struct CountViews : AggregateFunction<PageView, int64_t, int64_t> {
  int64_t createAccumulator() override { return 0; }
  int64_t add(const PageView&, int64_t count) override { return count + 1; }
  int64_t getResult(const int64_t& count) override { return count; }
  int64_t merge(int64_t a, const int64_t& b) override { return a + b; }
};

// The window's count with its page and bounds.
struct WithWindow : ProcessWindowFunction<int64_t, PageViews, std::string> {
  void process(const std::string& page, Context& ctx, std::span<const int64_t> counts,
               Collector<PageViews>& out) override {
    out.collect({page, ctx.window().start, ctx.window().end, counts.front()});
  }
};

struct PageOf : SerializationSchema<PageViews> {
  std::string serialize(const PageViews& v) override { return v.page; }
};

struct Settings {
  std::string bootstrapServers;
  std::string inputTopic;
  std::string outputTopic;
  std::string transactionalIdPrefix = "kafka-windows";
  int64_t windowMs = 10000;
  int64_t outOfOrdernessMs = 1000;
  bool bounded = false;
};

int runKafkaWindows(const JobOptions& options, const Settings& s) {
  if (s.windowMs <= 0) throw Error(ErrorCode::kInvalidArgument, "--window must be a positive number of ms");
  if (s.outOfOrdernessMs < 0) throw Error(ErrorCode::kInvalidArgument, "--out-of-orderness must not be negative");
  StreamExecutionEnvironment env;
  env.setParallelism(1);
  options.applyTo(env);

  auto source = KafkaSource<PageView>::builder()
                    .setBootstrapServers(s.bootstrapServers)
                    .setTopics({s.inputTopic})
                    .setStartingOffsets(OffsetsInitializer::earliest())
                    .setValueOnlyDeserializer(JsonDeserializationSchema<PageView>());
  if (s.bounded) source.setBounded(OffsetsInitializer::latest());
  // Watermarks per partition, from the events' own times.
  auto watermarks = WatermarkStrategy<PageView>::forBoundedOutOfOrderness(std::chrono::milliseconds(s.outOfOrdernessMs))
                        .withTimestampAssigner([](const PageView& v, int64_t) { return v.timestamp; });
  env.fromSource(source.build(), watermarks, "page views")
      .uid("page-views")
      .keyBy([](const PageView& v) { return v.page; })
      .window(TumblingEventTimeWindows::of(std::chrono::milliseconds(s.windowMs)))
      .aggregate(CountViews{}, WithWindow{})
      .name("views per page and window")
      .uid("views-per-window")
      .sinkTo(KafkaSink<PageViews>::builder()
                  .setBootstrapServers(s.bootstrapServers)
                  .setRecordSerializer(KafkaRecordSerializationSchema<PageViews>::builder()
                                           .setTopic(s.outputTopic)
                                           .setKeySerializationSchema(PageOf())
                                           .setValueSerializationSchema(JsonSerializationSchema<PageViews>())
                                           .build())
                  .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
                  .setTransactionalIdPrefix(s.transactionalIdPrefix)
                  .build())
      .name("view counts topic")
      .uid("view-counts-topic");
  auto client = env.executeAsync("kafka window count");
  cancelOnInterrupt(client);
  if (!client.getWebInterfaceURL().empty()) std::fprintf(stderr, "Web UI: %s\n", client.getWebInterfaceURL().c_str());
  client.wait();
  return 0;
}

}  // namespace

Example kafkaWindowCountExample() {
  return {"kafka-windows",
          "Count JSON page views per page in event-time windows, from a Kafka topic to one, exactly once",
          [](JobOptions& app) {
            auto s = std::make_shared<Settings>();
            app.addOption("--bootstrap-servers", s->bootstrapServers, "The Kafka cluster, host:port[,...]").required();
            app.addOption("--input-topic", s->inputTopic,
                           "The topic of JSON page views: {\"page\": ..., \"user\": ..., \"timestamp\": ms}")
                .required();
            app.addOption("--output-topic", s->outputTopic,
                           "The topic of the counts: {\"page\", \"window_start\", \"window_end\", \"views\"}")
                .required();
            app.addOption("--window", s->windowMs, "The windows' length in ms (default 10000)");
            app.addOption("--out-of-orderness", s->outOfOrdernessMs,
                           "How late (ms) an event may come after a later one and still count (default 1000)");
            app.addOption("--transactional-id-prefix", s->transactionalIdPrefix,
                           "The prefix of the output's transactional ids (default kafka-windows)");
            app.addFlag("--bounded", s->bounded, "Read each partition up to its end at the start, then finish");
            return [s](const JobOptions& options) { return runKafkaWindows(options, *s); };
          }};
}

}  // namespace weir::cli
