// One libpq connection as PostgresSink uses it: made with a bounded connect timeout,
// non-blocking underneath so that every wait for the server is bounded too, and able to
// send a whole batch of one prepared statement in pipeline mode (the batching JDBC's
// executeBatch does) and tell which execution failed.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace weir::detail {

// What the server (or the connection) said when something failed.
struct PostgresFailure {
  std::string message;   // one line: the server's primary message, or libpq's
  std::string sqlState;  // five characters, empty when the connection failed
  bool connectionLost = false;

  // Worth trying again on a new connection: the connection failed, or the server
  // reported a condition that passes (class 08, a serialization failure or deadlock,
  // a shutdown, too many connections).
  bool transient() const;
};

// Thrown by PostgresConnection's calls.
struct PostgresException {
  PostgresFailure failure;
};

// The parameters of the executions of one batch: `rows` rows of `width` values each.
struct PostgresRows {
  int width = 0;
  size_t rows = 0;
  std::vector<std::string> values;  // rows × width
  std::vector<char> nulls;          // rows × width: 1 for SQL NULL
  size_t bytes = 0;                 // of the values, for numBytesOut

  void clear() {
    rows = 0;
    values.clear();
    nulls.clear();
    bytes = 0;
  }
  // Removes row `row`; the rows after it move up.
  void erase(size_t row) {
    const auto first = static_cast<std::ptrdiff_t>(row * static_cast<size_t>(width));
    for (int i = 0; i < width; ++i) bytes -= values[static_cast<size_t>(first) + static_cast<size_t>(i)].size();
    values.erase(values.begin() + first, values.begin() + first + width);
    nulls.erase(nulls.begin() + first, nulls.begin() + first + width);
    --rows;
  }
};

class PostgresConnection {
 public:
  // Connects (waiting at most `connectTimeout`); every later wait for the server is at
  // most `requestTimeout`, after which the connection counts as lost.
  PostgresConnection(const std::string& connectionString, std::chrono::seconds connectTimeout,
                     std::chrono::milliseconds requestTimeout);
  ~PostgresConnection();
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  // Runs one or more statements; the rows of the last result, as text (null as empty).
  std::vector<std::vector<std::string>> run(const std::string& sql);
  // Prepares `statement` as weir's statement and returns its number of parameters.
  int prepare(const std::string& statement);
  // Executes the prepared statement once per row, pipelined: the index of the first row
  // the server refused and why, or nothing when all ran. Rows after a refused one are
  // not executed; outside a transaction block none of the batch is kept then.
  std::optional<std::pair<size_t, PostgresFailure>> executeBatch(const PostgresRows& rows);

  // "host:port/db", for messages.
  std::string address() const;

 private:
  // Waits until the socket is readable (or writable too when `write`); throws when the
  // request timeout passes or the connection fails.
  void wait(bool write);
  void flushAll();
  // The next result, waiting for it; null between the results of two queries.
  PGresult* nextResult();
  [[noreturn]] void lost(const std::string& what);

  PGconn* conn_ = nullptr;
  std::chrono::milliseconds requestTimeout_;
};

// A failed result as a PostgresFailure.
PostgresFailure failureOf(const PGresult* result, PGconn* conn);

}  // namespace weir::detail
