// Writes to Kafka (Flink's KafkaSink) through librdkafka, with Flink's three delivery
// guarantees:
//
//   auto sink = KafkaSink<Count>::builder()
//                   .setBootstrapServers("localhost:9092")
//                   .setRecordSerializer(KafkaRecordSerializationSchema<Count>::builder()
//                                            .setTopic("counts")
//                                            .setValueSerializationSchema(JsonSerializationSchema<Count>())
//                                            .build())
//                   .setDeliveryGuarantee(DeliveryGuarantee::EXACTLY_ONCE)
//                   .setTransactionalIdPrefix("word-counts")
//                   .build();
//   counts.sinkTo(sink);
//
// AT_LEAST_ONCE waits at each barrier until the broker acknowledged every record;
// EXACTLY_ONCE writes each checkpoint's records in a Kafka transaction committed when
// the checkpoint completes (docs/kafka.md says how a crash in between is handled).
#pragma once

#include <chrono>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "weir/checkpointed_function.h"
#include "weir/delivery_guarantee.h"
#include "weir/detail/connectors/kafka_producer.h"
#include "weir/error.h"
#include "weir/kafka_record_serialization_schema.h"
#include "weir/two_phase_committing_sink.h"

namespace weir {

template <class T>
class KafkaSink final : public TwoPhaseCommittingSink<T, KafkaCommittable> {
  using MakeSerializer = std::function<std::unique_ptr<KafkaRecordSerializationSchema<T>>()>;

 public:
  class Builder {
   public:
    Builder& setBootstrapServers(std::string servers) {
      config_.bootstrapServers = std::move(servers);
      return *this;
    }
    // A KafkaRecordSerializationSchema<T> (KafkaRecordSerializationSchema<T>::builder()
    // builds one). Required.
    template <class Schema>
    Builder& setRecordSerializer(Schema schema) {
      static_assert(std::is_base_of_v<KafkaRecordSerializationSchema<T>, Schema>,
                    "setRecordSerializer(s): s must derive from KafkaRecordSerializationSchema<T>");
      makeSerializer_ = [schema] { return std::make_unique<Schema>(schema); };
      return *this;
    }
    // Default: NONE, as Flink's.
    Builder& setDeliveryGuarantee(DeliveryGuarantee guarantee) {
      config_.guarantee = guarantee;
      return *this;
    }
    // EXACTLY_ONCE: the transactional ids are <prefix>-<subtask>-<n>. Required then, and
    // it must differ between jobs writing to the same cluster (a job aborts the open
    // transactions of its prefix when it starts).
    Builder& setTransactionalIdPrefix(std::string prefix) {
      config_.transactionalIdPrefix = std::move(prefix);
      return *this;
    }
    // Any librdkafka producer property ("compression.type", "linger.ms", ...), checked
    // at build(). "transaction.timeout.ms" defaults to 900000 (a broker's default
    // transaction.max.timeout.ms); "transactional.id" is weir's to set.
    Builder& setProperty(const std::string& key, std::string value) {
      if (key == "transaction.timeout.ms") config_.transactionTimeout = std::chrono::milliseconds(std::atoll(value.c_str()));
      config_.properties[key] = std::move(value);
      return *this;
    }
    // Throws weir::Error (kInvalidArgument) naming what is missing or wrong.
    KafkaSink build() const {
      if (!makeSerializer_) throw Error(ErrorCode::kInvalidArgument, "kafka sink: setRecordSerializer(...) is required");
      auto config = std::make_shared<detail::KafkaSinkConfig>(config_);
      config->validate();
      return KafkaSink(std::move(config), makeSerializer_);
    }

   private:
    detail::KafkaSinkConfig config_;
    MakeSerializer makeSerializer_;
  };

  static Builder builder() { return Builder(); }

  std::unique_ptr<SinkWriter<T>> createWriter(RuntimeContext& context) const override {
    return std::make_unique<Writer>(config_, context, makeSerializer_());
  }
  std::unique_ptr<Committer<KafkaCommittable>> createCommitter(RuntimeContext& context) const override {
    return detail::makeKafkaCommitter(config_, context);
  }
  void checkSettings(const CheckpointConfig& checkpoints, const RestartStrategy& restarts,
                     RuntimeExecutionMode mode) const override {
    config_->checkSettings(checkpoints, restarts, mode);
  }

 private:
  KafkaSink(std::shared_ptr<const detail::KafkaSinkConfig> config, MakeSerializer make)
      : config_(std::move(config)), makeSerializer_(std::move(make)) {}

  class Writer final : public PrecommittingSinkWriter<T, KafkaCommittable>, public CheckpointedFunction {
   public:
    Writer(std::shared_ptr<const detail::KafkaSinkConfig> config, RuntimeContext& context,
           std::unique_ptr<KafkaRecordSerializationSchema<T>> serializer)
        : producer_(std::move(config), context),
          serializer_(std::move(serializer)),
          context_{context.getIndexOfThisSubtask(), context.getNumberOfParallelSubtasks()} {}

    void write(const T& record) override { producer_.write(serializer_->serialize(record, context_)); }
    void writeBatch(std::span<T> records) override {
      for (const T& r : records) producer_.write(serializer_->serialize(r, context_));
    }
    void flush(bool endOfInput) override { producer_.flush(endOfInput); }
    std::vector<KafkaCommittable> prepareCommit() override { return producer_.prepareCommit(); }
    void initializeState(FunctionInitializationContext& context) override { producer_.initializeState(context); }
    void snapshotState(const FunctionSnapshotContext& context) override { producer_.snapshotState(context); }
    void close() override { producer_.close(); }

   private:
    detail::KafkaProducerWriter producer_;
    std::unique_ptr<KafkaRecordSerializationSchema<T>> serializer_;
    KafkaSinkContext context_;
  };

  std::shared_ptr<const detail::KafkaSinkConfig> config_;
  MakeSerializer makeSerializer_;
};

}  // namespace weir
