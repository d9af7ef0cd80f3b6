#include "connectors/postgres/postgres_connection.h"

#include <poll.h>

#include <cstring>

namespace weir::detail {

namespace {

constexpr const char* kStatement = "weir_statement";

// libpq's messages end in a newline and may span lines; messages here are one line.
std::string oneLine(const char* text) {
  std::string s = text ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

}  // namespace

bool PostgresFailure::transient() const {
  if (connectionLost) return true;
  return sqlState.rfind("08", 0) == 0 || sqlState == "40001" || sqlState == "40P01" || sqlState == "57P01" ||
         sqlState == "57P02" || sqlState == "57P03" || sqlState == "53300";
}

PostgresFailure failureOf(const PGresult* result, PGconn* conn) {
  PostgresFailure f;
  const char* primary = result ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  f.message = oneLine(primary ? primary : PQerrorMessage(conn));
  const char* detail = result ? PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL) : nullptr;
  if (detail) f.message += " (" + oneLine(detail) + ")";
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  f.sqlState = state ? state : "";
  f.connectionLost = PQstatus(conn) != CONNECTION_OK || f.sqlState.empty();
  return f;
}

PostgresConnection::PostgresConnection(const std::string& connectionString, std::chrono::seconds connectTimeout,
                                       std::chrono::milliseconds requestTimeout)
    : requestTimeout_(requestTimeout) {
  // The user's string is expanded after weir's defaults, so its own settings win.
  const std::string timeout = std::to_string(connectTimeout.count());
  const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), "weir", connectionString.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, 1);
  if (conn_ == nullptr) throw PostgresException{{"out of memory", "", true}};
  if (PQstatus(conn_) != CONNECTION_OK) {
    PostgresFailure f{oneLine(PQerrorMessage(conn_)), "", true};
    // A refused password or an unknown database will not pass by trying again.
    if (f.message.find("password") != std::string::npos || f.message.find("does not exist") != std::string::npos ||
        f.message.find("no pg_hba.conf entry") != std::string::npos)
      f.connectionLost = false;
    PQfinish(conn_);
    conn_ = nullptr;
    throw PostgresException{std::move(f)};
  }
  if (PQsetnonblocking(conn_, 1) != 0) lost("cannot make the connection non-blocking");
}

PostgresConnection::~PostgresConnection() {
  if (conn_) PQfinish(conn_);
}

std::string PostgresConnection::address() const {
  return std::string(PQhost(conn_)) + ":" + PQport(conn_) + "/" + PQdb(conn_);
}

void PostgresConnection::lost(const std::string& what) {
  std::string message = what;
  const std::string libpq = oneLine(PQerrorMessage(conn_));
  if (!libpq.empty()) message += ": " + libpq;
  throw PostgresException{{message, "", true}};
}

void PostgresConnection::wait(bool write) {
  pollfd p{PQsocket(conn_), static_cast<short>(POLLIN | (write ? POLLOUT : 0)), 0};
  if (p.fd < 0) lost("the connection is closed");
  const int n = ::poll(&p, 1, static_cast<int>(requestTimeout_.count()));
  if (n == 0) lost("no answer within " + std::to_string(requestTimeout_.count()) + " ms");
  if (n < 0 && errno != EINTR) lost(std::string("poll failed: ") + std::strerror(errno));
  if ((p.revents & (POLLIN | POLLERR | POLLHUP)) && PQconsumeInput(conn_) == 0) lost("the connection failed");
}

void PostgresConnection::flushAll() {
  for (;;) {
    const int r = PQflush(conn_);
    if (r == 0) return;
    if (r < 0) lost("cannot send to the server");
    wait(true);
  }
}

PGresult* PostgresConnection::nextResult() {
  while (PQisBusy(conn_)) {
    if (PQstatus(conn_) != CONNECTION_OK) lost("the connection failed");
    wait(false);
  }
  return PQgetResult(conn_);
}

std::vector<std::vector<std::string>> PostgresConnection::run(const std::string& sql) {
  if (!PQsendQuery(conn_, sql.c_str())) lost("cannot send '" + sql + "'");
  flushAll();
  std::vector<std::vector<std::string>> rows;
  std::optional<PostgresFailure> failure;
  while (PGresult* r = nextResult()) {
    const ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_TUPLES_OK) {
      rows.clear();
      for (int i = 0; i < PQntuples(r); ++i) {
        auto& row = rows.emplace_back();
        for (int j = 0; j < PQnfields(r); ++j) row.emplace_back(PQgetvalue(r, i, j), PQgetlength(r, i, j));
      }
    } else if (status != PGRES_COMMAND_OK && !failure) {
      failure = failureOf(r, conn_);
    }
    PQclear(r);
  }
  if (failure) throw PostgresException{std::move(*failure)};
  return rows;
}

int PostgresConnection::prepare(const std::string& statement) {
  if (!PQsendPrepare(conn_, kStatement, statement.c_str(), 0, nullptr)) lost("cannot send the statement");
  flushAll();
  std::optional<PostgresFailure> failure;
  while (PGresult* r = nextResult()) {
    if (PQresultStatus(r) != PGRES_COMMAND_OK && !failure) failure = failureOf(r, conn_);
    PQclear(r);
  }
  if (failure) throw PostgresException{std::move(*failure)};
  if (!PQsendDescribePrepared(conn_, kStatement)) lost("cannot describe the statement");
  flushAll();
  int parameters = -1;
  while (PGresult* r = nextResult()) {
    if (PQresultStatus(r) == PGRES_COMMAND_OK) parameters = PQnparams(r);
    else if (!failure) failure = failureOf(r, conn_);
    PQclear(r);
  }
  if (failure) throw PostgresException{std::move(*failure)};
  return parameters;
}

std::optional<std::pair<size_t, PostgresFailure>> PostgresConnection::executeBatch(const PostgresRows& rows) {
  if (rows.rows == 0) return std::nullopt;
  if (!PQenterPipelineMode(conn_)) lost("cannot enter pipeline mode");
  std::vector<const char*> params(static_cast<size_t>(rows.width));
  for (size_t row = 0; row < rows.rows; ++row) {
    const size_t base = row * static_cast<size_t>(rows.width);
    for (size_t i = 0; i < params.size(); ++i)
      params[i] = rows.nulls[base + i] ? nullptr : rows.values[base + i].c_str();
    if (!PQsendQueryPrepared(conn_, kStatement, rows.width, params.data(), nullptr, nullptr, 0))
      lost("cannot send the batch");
    // Keep the bytes moving, and take in results, so that neither side's buffer fills.
    if (row % 256 == 255) {
      if (PQflush(conn_) < 0) lost("cannot send the batch");
      if (PQconsumeInput(conn_) == 0) lost("the connection failed");
    }
  }
  if (!PQpipelineSync(conn_)) lost("cannot send the batch");
  flushAll();
  std::optional<std::pair<size_t, PostgresFailure>> failure;
  size_t query = 0;
  for (;;) {
    PGresult* r = nextResult();
    if (r == nullptr) {  // the end of one execution's results
      if (PQstatus(conn_) != CONNECTION_OK || ++query > rows.rows) lost("the connection failed");
      continue;
    }
    const ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_PIPELINE_SYNC) {
      PQclear(r);
      break;
    }
    if (status == PGRES_FATAL_ERROR && !failure) failure.emplace(query, failureOf(r, conn_));
    PQclear(r);
    if (PQstatus(conn_) != CONNECTION_OK) lost("the connection failed");
  }
  if (!PQexitPipelineMode(conn_)) lost("cannot leave pipeline mode");
  return failure;
}

}  // namespace weir::detail
