// Benchmarks of the PostgreSQL sink, against a server the benchmark starts itself
// (tests/support/postgres_server.h).
#pragma once

namespace weir::bench {

// generator -> PostgresSink (AT_LEAST_ONCE upserts) at p = 1 and 2, against a plain libpq
// loop sending the same statements in pipelined batches of the same size
// (`postgres_sink`); and EXACTLY_ONCE against AT_LEAST_ONCE with a checkpoint every
// second (`postgres_sink_exactly_once`).
void postgresSink(int runs);

}  // namespace weir::bench
