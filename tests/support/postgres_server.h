// A real PostgreSQL server of a test's own: initdb into a private folder, postgres on a
// free loopback port, stopped (and its folder removed) when the test is done. Run as
// root (CI's containers), the server runs as the `postgres` user, as it insists.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace weir::test {

class PostgresServer {
 public:
  struct Options {
    int maxPreparedTransactions = 16;
    bool durable = false;  // fsync; off keeps tests fast (a test kills the server, not the machine)
  };

  PostgresServer() : PostgresServer(Options{}) {}
  explicit PostgresServer(Options options);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  // libpq's connection string for the superuser `weir` (password `secret`) and `database`.
  std::string connectionString(const std::string& database = "postgres") const;

  // Stops the server (a fast shutdown: open transactions are rolled back, prepared ones
  // stay), or kills it and its backends with SIGKILL; start() brings it back on the same
  // port and data.
  void stop();
  void kill9();
  void start();
  bool running() const { return pid_ > 0; }

  // Runs `sql` on `database`; the rows of its last result, as text (NULL as "NULL").
  // Throws std::runtime_error with the server's message.
  std::vector<std::vector<std::string>> sql(const std::string& sql, const std::string& database = "postgres") const;
  // A single value: the first column of the first row.
  std::string value(const std::string& sql, const std::string& database = "postgres") const;

 private:
  void run(const std::vector<std::string>& command) const;

  Options options_;
  std::filesystem::path root_;  // data/, the socket and log
  std::string binDir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace weir::test
