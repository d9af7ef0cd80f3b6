// Word count from Kafka to Kafka: reads lines from a topic, counts words with a rolling
// sum, and writes each updated count to a topic (key: the word, value: its count), or
// to files.
//
//   weir run kafka-wordcount --bootstrap-servers localhost:9092 --input-topic lines \
//       --output-topic counts --delivery-guarantee exactly-once --checkpoint-interval 1000
//
// The offsets read are in the checkpoints; with exactly-once, the counts of a checkpoint
// become visible to read_committed readers when it completes (docs/kafka.md).
#include <cctype>
#include <cstdio>

#include "cli/interrupt.h"
#include "cli/examples.h"
#include "weir/kafka_sink.h"
#include "weir/kafka_source.h"
#include "tokenizer.h"
#include "weir/weir.h"

namespace weir::cli {

namespace {

struct WordOf : SerializationSchema<WordCount> {
  std::string serialize(const WordCount& wc) override { return wc.first; }
};
struct CountOf : SerializationSchema<WordCount> {
  std::string serialize(const WordCount& wc) override { return std::to_string(wc.second); }
};

struct Settings {
  std::string bootstrapServers;
  std::string inputTopic;
  std::string outputTopic;
  std::string output;  // a folder instead of a topic
  std::string guarantee = "at-least-once";
  std::string transactionalIdPrefix = "kafka-wordcount";
  bool bounded = false;
};

DeliveryGuarantee guaranteeOf(const std::string& name) {
  if (name == "none") return DeliveryGuarantee::NONE;
  if (name == "at-least-once") return DeliveryGuarantee::AT_LEAST_ONCE;
  if (name == "exactly-once") return DeliveryGuarantee::EXACTLY_ONCE;
  throw Error(ErrorCode::kInvalidArgument,
              "--delivery-guarantee must be none, at-least-once or exactly-once, got '" + name + "'");
}

int runKafkaWordCount(const JobOptions& options, const Settings& s) {
  if (s.outputTopic.empty() == s.output.empty())
    throw Error(ErrorCode::kInvalidArgument, "give one of --output-topic and --output");
  const DeliveryGuarantee guarantee = guaranteeOf(s.guarantee);
  StreamExecutionEnvironment env;
  env.setParallelism(1);
  options.applyTo(env);

  auto source = KafkaSource<std::string>::builder()
                    .setBootstrapServers(s.bootstrapServers)
                    .setTopics({s.inputTopic})
                    .setStartingOffsets(OffsetsInitializer::earliest())
                    .setValueOnlyDeserializer(SimpleStringSchema());
  if (s.bounded) source.setBounded(OffsetsInitializer::latest());
  auto counts =
      countWords(env.fromSource(source.build(), WatermarkStrategy<std::string>::noWatermarks(), "lines").uid("lines"));
  if (!s.outputTopic.empty()) {
    counts
        .sinkTo(KafkaSink<WordCount>::builder()
                    .setBootstrapServers(s.bootstrapServers)
                    .setRecordSerializer(KafkaRecordSerializationSchema<WordCount>::builder()
                                             .setTopic(s.outputTopic)
                                             .setKeySerializationSchema(WordOf())
                                             .setValueSerializationSchema(CountOf())
                                             .build())
                    .setDeliveryGuarantee(guarantee)
                    .setTransactionalIdPrefix(s.transactionalIdPrefix)
                    .build())
        .name("counts topic")
        .uid("counts-topic");
  } else {
    countsIntoFiles(counts, s.output);
  }
  auto client = env.executeAsync("kafka word count");
  cancelOnInterrupt(client);
  if (!client.getWebInterfaceURL().empty()) std::fprintf(stderr, "Web UI: %s\n", client.getWebInterfaceURL().c_str());
  client.wait();
  return 0;
}

}  // namespace

Example kafkaWordCountExample() {
  return {"kafka-wordcount", "Count the words of the lines in a Kafka topic, into a topic or files",
          [](JobOptions& app) {
            auto s = std::make_shared<Settings>();
            app.addOption("--bootstrap-servers", s->bootstrapServers, "The Kafka cluster, host:port[,...]").required();
            app.addOption("--input-topic", s->inputTopic, "The topic of lines to read").required();
            app.addOption("--output-topic", s->outputTopic, "The topic the counts go to (key: word, value: count)");
            app.addOption("--output", s->output, "A folder for the counts instead (part files, exactly once)");
            app.addOption("--delivery-guarantee", s->guarantee,
                           "Of the output topic: none, at-least-once (default) or exactly-once");
            app.addOption("--transactional-id-prefix", s->transactionalIdPrefix,
                           "With exactly-once: the prefix of the transactional ids (default kafka-wordcount)");
            app.addFlag("--bounded", s->bounded, "Read each partition up to its end at the start, then finish");
            return [s](const JobOptions& options) { return runKafkaWordCount(options, *s); };
          }};
}

}  // namespace weir::cli
