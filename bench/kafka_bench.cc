#include "kafka_bench.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "harness.h"
#include "weir/kafka_sink.h"
#include "weir/kafka_source.h"
#include "weir/weir.h"

namespace weir::bench {

namespace {

using Handle = std::unique_ptr<rd_kafka_t, decltype(&rd_kafka_destroy)>;

Handle client(rd_kafka_type_t type, const std::map<std::string, std::string>& settings) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [key, value] : settings)
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), error, sizeof error) != RD_KAFKA_CONF_OK)
      throw std::runtime_error(error);
  rd_kafka_t* rk = rd_kafka_new(type, conf, error, sizeof error);
  if (rk == nullptr) throw std::runtime_error(error);
  return Handle(rk, &rd_kafka_destroy);
}

void produceOrWait(rd_kafka_t* producer, const char* topic, int32_t partition, const char* key, size_t keySize,
                   const char* value, size_t valueSize) {
  while (rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, keySize),
                           RD_KAFKA_V_VALUE(const_cast<char*>(value), valueSize), RD_KAFKA_V_END) ==
         RD_KAFKA_RESP_ERR__QUEUE_FULL)
    rd_kafka_poll(producer, 10);
}

// The baseline: one consumer assigned every partition of `in`, each record's value with
// its first byte changed (the job's map) produced to `out`, flushed at the end.
void plainLoop(const std::string& bootstrap, const std::string& in, int partitions, int64_t records,
               const std::string& out) {
  Handle consumer = client(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                              {"group.id", "bench-loop"},
                                              {"enable.auto.commit", "false"},
                                              {"log_level", "3"}});
  Handle producer = client(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap},
                                              {"partitioner", "murmur2_random"},
                                              {"log_level", "3"}});
  rd_kafka_topic_partition_list_t* assignment = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(assignment, in.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(consumer.get(), assignment);
  rd_kafka_topic_partition_list_destroy(assignment);
  std::string value;
  for (int64_t seen = 0; seen < records;) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer.get(), 1000);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      value.assign(static_cast<const char*>(m->payload), m->len);
      if (!value.empty()) value[0] = 'X';
      produceOrWait(producer.get(), out.c_str(), RD_KAFKA_PARTITION_UA, static_cast<const char*>(m->key),
                    m->key_len, value.data(), value.size());
      ++seen;
    }
    rd_kafka_message_destroy(m);
  }
  while (rd_kafka_outq_len(producer.get()) > 0) rd_kafka_flush(producer.get(), 100);
  rd_kafka_consumer_close(consumer.get());
}

// How many records `topic` holds: the sum of its partitions' end offsets.
int64_t recordsIn(const std::string& bootstrap, const std::string& topic, int partitions) {
  Handle reader = client(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap}, {"log_level", "3"}});
  int64_t total = 0;
  for (int p = 0; p < partitions; ++p) {
    int64_t low = 0, high = 0;
    if (rd_kafka_query_watermark_offsets(reader.get(), topic.c_str(), p, &low, &high, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
      throw std::runtime_error("kafka_pipeline: cannot read the end offsets of '" + topic + "'");
    total += high;
  }
  return total;
}

struct Record {
  std::string key;
  std::string value;
};
WEIR_STRUCT(Record, key, value);

struct RecordOf : KafkaRecordDeserializationSchema<Record> {
  void deserialize(const ConsumerRecord& r, Collector<Record>& out) override {
    out.collect({std::string(r.key.value_or("")), std::string(r.value.value_or(""))});
  }
};
struct ToKafka : KafkaRecordSerializationSchema<Record> {
  explicit ToKafka(std::string topic) : topic_(std::move(topic)) {}
  ProducerRecord serialize(const Record& r, const KafkaSinkContext&) override {
    ProducerRecord out;
    out.topic = topic_;
    out.key = r.key;
    out.value = r.value;
    return out;
  }
  std::string topic_;
};

}  // namespace

void kafkaPipeline(int runs) {
  // librdkafka's mock cluster keeps 5 MiB per partition (it drops the oldest batches
  // beyond): 1 M records of ~40 bytes fit in 16 partitions.
  constexpr int kPartitions = 16;
  constexpr int64_t kRecords = 1'000'000;
  constexpr size_t kValueBytes = 20;
  Handle host = client(RD_KAFKA_PRODUCER, {{"log_level", "3"}});
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(host.get(), 1);
  if (cluster == nullptr) throw std::runtime_error("kafka_pipeline: the mock cluster did not start");
  const std::string bootstrap = rd_kafka_mock_cluster_bootstraps(cluster);
  rd_kafka_mock_topic_create(cluster, "in", kPartitions, 1);
  {
    Handle producer = client(RD_KAFKA_PRODUCER, {{"bootstrap.servers", bootstrap}, {"log_level", "3"}});
    std::string value(kValueBytes, 'v');
    for (int64_t i = 0; i < kRecords; ++i) {
      const std::string key = "key-" + std::to_string(i % 10007);
      produceOrWait(producer.get(), "in", static_cast<int32_t>(i % kPartitions), key.data(), key.size(), value.data(),
                    value.size());
    }
    while (rd_kafka_outq_len(producer.get()) > 0) rd_kafka_flush(producer.get(), 100);
  }
  const double bytes = static_cast<double>(kRecords) * (kValueBytes + 9);
  int topic = 0;
  for (int parallelism : {1, 2}) {
    auto [engine, baseline] = medianSecondsInterleaved(
        runs,
        [&] {
          const std::string out = "out-" + std::to_string(++topic);
          rd_kafka_mock_topic_create(cluster, out.c_str(), kPartitions, 1);
          StreamExecutionEnvironment env;
          env.setParallelism(parallelism);
          env.fromSource(KafkaSource<Record>::builder()
                             .setBootstrapServers(bootstrap)
                             .setTopics({"in"})
                             .setBounded(OffsetsInitializer::latest())
                             .setDeserializer(RecordOf())
                             .build(),
                         WatermarkStrategy<Record>::noWatermarks(), "in")
              .map([](Record r) {
                if (!r.value.empty()) r.value[0] = 'X';
                return r;
              })
              .sinkTo(KafkaSink<Record>::builder().setBootstrapServers(bootstrap).setRecordSerializer(ToKafka(out)).build());
          env.execute("kafka_pipeline");
          if (const int64_t written = recordsIn(bootstrap, out, kPartitions); written != kRecords)
            throw std::runtime_error("kafka_pipeline: the job wrote " + std::to_string(written) + " records, not " +
                                     std::to_string(kRecords));
        },
        [&] {
          const std::string out = "out-" + std::to_string(++topic);
          rd_kafka_mock_topic_create(cluster, out.c_str(), kPartitions, 1);
          plainLoop(bootstrap, "in", kPartitions, kRecords, out);
        });
    const double e = static_cast<double>(kRecords) / engine, b = static_cast<double>(kRecords) / baseline;
    printFigure("kafka_pipeline", {{"parallelism", parallelism}, {"records", static_cast<double>(kRecords)},
                                   {"records_per_s", e}, {"mb_per_s", bytes / engine / 1e6},
                                   {"baseline_records_per_s", b}, {"baseline_mb_per_s", bytes / baseline / 1e6},
                                   {"ratio", b / e}});
  }
  rd_kafka_mock_cluster_destroy(cluster);
}

}  // namespace weir::bench
