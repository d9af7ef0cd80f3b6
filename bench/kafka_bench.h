// Benchmarks of the Kafka connectors.
#pragma once

namespace weir::bench {

// KafkaSource -> map -> KafkaSink through librdkafka's mock cluster (in this process),
// p = 1 and 2, against a plain librdkafka consume-and-produce loop on the same topics
// (`kafka_pipeline`).
void kafkaPipeline(int runs);

}  // namespace weir::bench
