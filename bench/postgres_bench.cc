#include "postgres_bench.h"

#include <libpq-fe.h>

#include <charconv>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "support/postgres_server.h"
#include "weir/data_generator_source.h"
#include "weir/postgres_sink.h"
#include "weir/weir.h"

namespace weir::bench {

namespace {

constexpr int64_t kRecords = 300'000;
constexpr int kBatch = JdbcExecutionOptions::kDefaultBatchSize;
const char* kUpsert = "INSERT INTO bench (id, v) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v";

// The same upserts as the sink's, from one connection: prepared once, sent in pipelined
// batches of kBatch, each batch's results read before the next goes out.
void plainLoop(const std::string& connection) {
  PGconn* conn = PQconnectdb(connection.c_str());
  if (PQstatus(conn) != CONNECTION_OK) throw std::runtime_error(std::string("postgres_sink: ") + PQerrorMessage(conn));
  PQclear(PQprepare(conn, "upsert", kUpsert, 0, nullptr));
  char id[24], v[24];
  const char* params[] = {id, v};
  for (int64_t start = 0; start < kRecords; start += kBatch) {
    PQenterPipelineMode(conn);
    const int64_t end = std::min<int64_t>(start + kBatch, kRecords);
    for (int64_t i = start; i < end; ++i) {
      *std::to_chars(id, id + sizeof id - 1, i).ptr = 0;
      *std::to_chars(v, v + sizeof v - 1, i * 10).ptr = 0;
      PQsendQueryPrepared(conn, "upsert", 2, params, nullptr, nullptr, 0);
    }
    PQpipelineSync(conn);
    for (;;) {
      PGresult* r = PQgetResult(conn);
      if (r == nullptr) continue;
      const ExecStatusType status = PQresultStatus(r);
      PQclear(r);
      if (status == PGRES_PIPELINE_SYNC) break;
      if (status == PGRES_FATAL_ERROR) throw std::runtime_error(std::string("postgres_sink: ") + PQerrorMessage(conn));
    }
    PQexitPipelineMode(conn);
  }
  PQfinish(conn);
}

void runJob(const std::string& connection, int parallelism, DeliveryGuarantee guarantee, bool checkpoints) {
  StreamExecutionEnvironment env;
  env.setParallelism(parallelism);
  if (checkpoints) env.enableCheckpointing(std::chrono::seconds(1));
  env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, kRecords), WatermarkStrategy<int64_t>::noWatermarks(),
                 "numbers")
      .sinkTo(PostgresSink<int64_t>::builder()
                  .setConnectionString(connection)
                  .setSql(kUpsert)
                  .setStatementBuilder([](PreparedStatement& ps, const int64_t& i) {
                    ps.setLong(1, i);
                    ps.setLong(2, i * 10);
                  })
                  .setDeliveryGuarantee(guarantee)
                  .setTransactionIdPrefix("bench")
                  .build());
  env.execute("postgres_sink");
}

}  // namespace

void postgresSink(int runs) {
  test::PostgresServer server;
  const std::string connection = server.connectionString();
  server.sql("CREATE TABLE bench (id bigint PRIMARY KEY, v bigint)");
  auto check = [&] {
    const int64_t rows = std::stoll(server.value("SELECT count(*) FROM bench WHERE v = id * 10"));
    if (rows != kRecords) throw std::runtime_error("postgres_sink: the table holds " + std::to_string(rows) + " rows");
    server.sql("TRUNCATE bench");
  };
  for (int parallelism : {1, 2}) {
    auto [engine, baseline] = medianSecondsInterleaved(
        runs, [&] { runJob(connection, parallelism, DeliveryGuarantee::AT_LEAST_ONCE, false), check(); },
        [&] { plainLoop(connection), check(); });
    const double e = kRecords / engine, b = kRecords / baseline;
    printFigure("postgres_sink", {{"parallelism", parallelism}, {"records", static_cast<double>(kRecords)},
                                  {"records_per_s", e}, {"baseline_records_per_s", b}, {"ratio", b / e}});
  }
  auto [exactlyOnce, atLeastOnce] = medianSecondsInterleaved(
      runs, [&] { runJob(connection, 1, DeliveryGuarantee::EXACTLY_ONCE, true), check(); },
      [&] { runJob(connection, 1, DeliveryGuarantee::AT_LEAST_ONCE, true), check(); });
  const double e = kRecords / exactlyOnce, b = kRecords / atLeastOnce;
  printFigure("postgres_sink_exactly_once", {{"parallelism", 1}, {"records", static_cast<double>(kRecords)},
                                             {"records_per_s", e}, {"at_least_once_records_per_s", b}, {"ratio", b / e}});
}

}  // namespace weir::bench
