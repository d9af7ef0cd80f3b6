#include "cli/transaction_commands.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "weir/detail/connectors/kafka_producer.h"
#include "weir/detail/connectors/postgres_writer.h"
#include "weir/error.h"

namespace weir::cli {

namespace {

constexpr int kFailed = 1;
constexpr int kUsage = 2;

bool isFolder(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

// What a state means to someone deciding what to do.
const char* meaning(const std::string& state) {
  if (state == "open") return "open: no checkpoint holds it; abort it, or restore the job, which aborts it";
  if (state == "committing")
    return "committing: a completed checkpoint holds its records; restoring the job settles it (abort loses them)";
  if (state == "committed") return "committed";
  return "aborted";
}

}  // namespace

int listTransactions(const std::string& checkpointDir, bool all) {
  if (!isFolder(checkpointDir)) {
    std::fprintf(stderr, "weir: '%s' is not a checkpoint directory\n", checkpointDir.c_str());
    return kUsage;
  }
  try {
    size_t shown = 0;
    for (const auto& t : detail::findKafkaTransactions(checkpointDir)) {
      if (!all && t.state != "open" && t.state != "committing") continue;
      std::printf("kafka  %s  %s\n", t.transactionalId.c_str(), meaning(t.state));
      ++shown;
    }
    if (shown == 0) std::printf("no %stransactions under %s\n", all ? "" : "unsettled ", checkpointDir.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return kFailed;
  }
}

int abortTransactions(const std::string& checkpointDir, const std::string& bootstrapServers,
                      const std::vector<std::string>& ids) {
  if (!isFolder(checkpointDir)) {
    std::fprintf(stderr, "weir: '%s' is not a checkpoint directory\n", checkpointDir.c_str());
    return kUsage;
  }
  try {
    const auto found = detail::findKafkaTransactions(checkpointDir);
    std::vector<detail::KafkaTransactionMarker> chosen;
    for (const std::string& id : ids) {
      auto it = std::find_if(found.begin(), found.end(), [&](const auto& t) { return t.transactionalId == id; });
      if (it == found.end() || it->state == "committed" || it->state == "aborted") {
        std::fprintf(stderr, "weir: no unsettled transaction '%s' under %s\n", id.c_str(), checkpointDir.c_str());
        return kUsage;
      }
      chosen.push_back(*it);
    }
    if (ids.empty())
      for (const auto& t : found)
        if (t.state == "open") chosen.push_back(t);
    for (const auto& t : chosen) {
      // librdkafka quiet: a failure is the one line below.
      detail::abortKafkaTransaction(bootstrapServers, {{"log_level", "0"}}, t);
      std::printf("aborted %s\n", t.transactionalId.c_str());
    }
    if (chosen.empty()) std::printf("no open transactions under %s\n", checkpointDir.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return kFailed;
  }
}

int listPostgresTransactions(const std::string& connection, const std::string& prefix) {
  try {
    // A sink's prefix: its ids are <prefix>-<subtask>-<n>.
    const auto found = detail::findPostgresTransactions(connection, prefix.empty() ? "" : prefix + "-");
    for (const auto& t : found)
      std::printf("postgres  %s  prepared %s in database %s: restoring its job commits it if a completed checkpoint "
                  "holds it and rolls it back if not\n",
                  t.transactionId.c_str(), t.prepared.c_str(), t.database.c_str());
    if (found.empty()) std::printf("no prepared transactions%s\n", prefix.empty() ? "" : (" starting with " + prefix).c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return kFailed;
  }
}

int resolvePostgresTransactions(const std::string& connection, const std::vector<std::string>& ids,
                                const std::string& prefix, bool commit) {
  if (ids.empty() && prefix.empty()) {
    std::fprintf(stderr, "weir: name the transactions to %s, or give --prefix for every one of a sink\n",
                 commit ? "commit" : "abort");
    return kUsage;
  }
  try {
    const auto found = detail::findPostgresTransactions(connection, ids.empty() ? prefix + "-" : "");
    std::vector<detail::PostgresPreparedTransaction> chosen;
    for (const std::string& id : ids) {
      auto it = std::find_if(found.begin(), found.end(), [&](const auto& t) { return t.transactionId == id; });
      if (it == found.end()) {
        std::fprintf(stderr, "weir: no prepared transaction '%s' on the server\n", id.c_str());
        return kUsage;
      }
      chosen.push_back(*it);
    }
    if (ids.empty()) chosen = found;
    // Every one is checked before any is resolved.
    for (const auto& t : chosen)
      if (!t.inThisDatabase) {
        std::fprintf(stderr, "weir: prepared transaction '%s' is in database '%s': connect to that one (dbname=%s)\n",
                     t.transactionId.c_str(), t.database.c_str(), t.database.c_str());
        return kUsage;
      }
    for (const auto& t : chosen) {
      detail::resolvePostgresTransaction(connection, t.transactionId, commit);
      std::printf("%s %s\n", commit ? "committed" : "aborted", t.transactionId.c_str());
    }
    if (chosen.empty()) std::printf("no prepared transactions starting with %s\n", prefix.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return kFailed;
  }
}

}  // namespace weir::cli
