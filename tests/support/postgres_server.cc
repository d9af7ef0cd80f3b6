#include "support/postgres_server.h"

#include "support/free_port.h"

#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

namespace weir::test {

namespace fs = std::filesystem;

namespace {

// The newest installed server's programs (/usr/lib/postgresql/<version>/bin).
std::string findBinDir() {
  std::string best;
  int bestVersion = 0;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql")) {
    const int version = std::atoi(entry.path().filename().c_str());
    if (version > bestVersion && fs::exists(entry.path() / "bin" / "postgres")) {
      bestVersion = version;
      best = (entry.path() / "bin").string();
    }
  }
  if (best.empty()) throw std::runtime_error("no PostgreSQL server under /usr/lib/postgresql: run scripts/setup");
  return best;
}

bool root() { return ::geteuid() == 0; }

// The user the server runs as: postgres when we are root (it refuses to run as root),
// else ourselves. Looked up before any fork: a child of a process with threads may only
// make async-signal-safe calls.
struct RunAs {
  bool change = false;
  uid_t uid = 0;
  gid_t gid = 0;
  // Linux sends the parent-death signal when the forking *thread* ends: only a fork from
  // the main thread, which lives as long as the process, may ask for it.
  bool dieWithParent = false;
};
RunAs runAs() {
  RunAs r;
  r.dieWithParent = ::gettid() == ::getpid();
  if (!root()) return r;
  passwd* pw = ::getpwnam("postgres");
  if (pw == nullptr) throw std::runtime_error("no postgres user: run scripts/setup");
  r.change = true;
  r.uid = pw->pw_uid;
  r.gid = pw->pw_gid;
  return r;
}

// Execs `command` in a child, as `as`, with SIGKILL when the test process dies (so that
// a test killed by a timeout leaves no server behind; see RunAs). Becoming the user here, not
// through runuser, keeps the server's pid the one a test signals.
[[noreturn]] void execAs(const RunAs& as, char* const* argv) {
  if (as.change && (::setgroups(1, &as.gid) != 0 || ::setgid(as.gid) != 0 || ::setuid(as.uid) != 0)) ::_exit(126);
  if (as.dieWithParent) ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // after setuid, which clears it
  ::execv(argv[0], argv);
  ::_exit(127);
}

// `command` as execv takes it (pointing into `command`), made before the fork.
std::vector<char*> argvOf(std::vector<std::string>& command) {
  std::vector<char*> argv;
  for (auto& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

PostgresServer::PostgresServer(Options options) : options_(options), binDir_(findBinDir()) {
  char pattern[] = "/tmp/weir-postgres-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("cannot make a folder for the server");
  root_ = pattern;
  fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                             fs::perms::others_read | fs::perms::others_exec);
  { std::ofstream(root_ / "password") << "secret\n"; }
  const RunAs as = runAs();
  if (as.change)
    for (const auto& p : {root_, root_ / "password"})
      if (::chown(p.c_str(), as.uid, as.gid) != 0) throw std::runtime_error("cannot chown " + p.string());
  run({binDir_ + "/initdb", "-D", (root_ / "data").string(), "-U", "weir", "--pwfile=" + (root_ / "password").string(),
       "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--no-instructions"});
  port_ = freeLoopbackPort();
  start();
}

PostgresServer::~PostgresServer() {
  try {
    if (running()) stop();
  } catch (...) {
  }
  std::error_code ec;
  fs::remove_all(root_, ec);
}

std::string PostgresServer::connectionString(const std::string& database) const {
  return "host=127.0.0.1 port=" + std::to_string(port_) + " user=weir password=secret dbname=" + database;
}

void PostgresServer::run(const std::vector<std::string>& command) const {
  const RunAs as = runAs();
  const std::string logPath = (root_ / "setup.log").string();
  std::vector<std::string> args = command;
  const std::vector<char*> argv = argvOf(args);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int log = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(log, 1);
    ::dup2(log, 2);
    execAs(as, argv.data());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ifstream in(root_ / "setup.log");
    std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    throw std::runtime_error(command[0] + " failed: " + log);
  }
}

void PostgresServer::start() {
  const RunAs as = runAs();
  const std::string logPath = (root_ / "server.log").string();
  std::vector<std::string> command{binDir_ + "/postgres", "-D", (root_ / "data").string(), "-p", std::to_string(port_),
                                   "-k", root_.string(), "-c", "listen_addresses=127.0.0.1", "-c",
                                   "max_prepared_transactions=" + std::to_string(options_.maxPreparedTransactions),
                                   "-c", std::string("fsync=") + (options_.durable ? "on" : "off"), "-c",
                                   "max_connections=60"};
  const std::vector<char*> argv = argvOf(command);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: kill9() reaches every backend
    const int log = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(log, 1);
    ::dup2(log, 2);
    execAs(as, argv.data());
  }
  pid_ = pid;
  const std::string ping = "host=127.0.0.1 port=" + std::to_string(port_) + " dbname=postgres connect_timeout=2";
  for (int i = 0; i < 300; ++i) {
    if (PQping(ping.c_str()) == PQPING_OK) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::ifstream in(root_ / "server.log");
  std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  kill9();
  throw std::runtime_error("the PostgreSQL server did not start within 30 s: " + log);
}

void PostgresServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGINT);  // fast shutdown
  int status = 0;
  for (int i = 0; i < 300 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (::waitpid(pid_, &status, WNOHANG) == 0) kill9();
  pid_ = -1;
}

void PostgresServer::kill9() {
  if (pid_ <= 0) return;
  ::killpg(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  // The backends were in the group too; wait until none holds the data folder.
  for (int i = 0; i < 100 && ::killpg(pid_, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  pid_ = -1;
}

std::vector<std::vector<std::string>> PostgresServer::sql(const std::string& sql, const std::string& database) const {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(connectionString(database).c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK)
    throw std::runtime_error(std::string("cannot connect: ") + PQerrorMessage(conn.get()));
  PQsetNoticeProcessor(conn.get(), [](void*, const char*) {}, nullptr);  // "does not exist, skipping"
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn.get(), sql.c_str()), &PQclear);
  const ExecStatusType status = PQresultStatus(r.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
    throw std::runtime_error(sql + ": " + PQresultErrorMessage(r.get()));
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    auto& row = rows.emplace_back();
    for (int j = 0; j < PQnfields(r.get()); ++j)
      row.push_back(PQgetisnull(r.get(), i, j) ? "NULL" : PQgetvalue(r.get(), i, j));
  }
  return rows;
}

std::string PostgresServer::value(const std::string& query, const std::string& database) const {
  auto rows = sql(query, database);
  if (rows.empty() || rows[0].empty()) throw std::runtime_error(query + ": no value");
  return rows[0][0];
}

}  // namespace weir::test
