// Benchmarks of the Redis connectors, against a server the benchmark starts itself
// (tests/support/redis_server.h).
#pragma once

namespace weir::bench {

// RedisStreamSource (bounded, 4 streams, 1 M entries) -> RedisSink (AT_LEAST_ONCE, one HSET per
// record) at p = 1 and 2, against one plain hiredis connection reading the same streams
// with XREAD and sending the same HSETs in pipelined batches of the sink's size
// (`redis_pipeline`); and EXACTLY_ONCE against AT_LEAST_ONCE at p = 1 with a checkpoint
// every second (`redis_pipeline_exactly_once`).
void redisPipeline(int runs);

}  // namespace weir::bench
