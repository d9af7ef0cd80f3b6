// The weir program: runs the bundled example jobs.
//
// Exit codes: 0 success, 1 the job failed while running, 2 bad command line or a job
// that cannot start (bad option, missing input). Errors are one line on stderr.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "api/plan_only.h"
#include "cli/checkpoint_commands.h"
#include "cli/examples.h"
#include "cli/history_command.h"
#include "cli/interrupt.h"
#include "cli/rest_commands.h"
#include "cli/transaction_commands.h"
#include "core/secret_file.h"
#include "core/sync_point.h"
#include "weir/job_client.h"

namespace {

constexpr int kUsageError = 2;

int usageError(const std::string& message) {
  std::fprintf(stderr, "weir: %s\n", message.c_str());
  return kUsageError;
}

std::string names(const std::vector<weir::cli::Example>& examples) {
  std::string out;
  for (auto& e : examples) out += (out.empty() ? "" : ", ") + e.name;
  return out;
}

// `weir run <example> [options]`: the example's own options and every option a job that
// is its own program gets from weir::JobOptions. `weir info` takes the same and prints
// the job's plan instead of running it.
int runExample(const std::vector<weir::cli::Example>& examples, int argc, char** argv) {
  const std::string command = argv[1];
  if (argc < 3 || argv[2][0] == '-') {
    const bool help = argc >= 3 && (std::strcmp(argv[2], "--help") == 0 || std::strcmp(argv[2], "-h") == 0);
    if (!help)
      return usageError("weir " + command + " needs an example: " + names(examples) + " (see weir " + command + " --help)");
    std::printf("Usage: weir %s <example> [options]\n\n%s Examples:\n", command.c_str(),
                command == "info" ? "Prints an example job's plan (Flink's JSON) without running it." : "Runs an example job.");
    for (auto& e : examples) std::printf("  %-16s %s\n", e.name.c_str(), e.description.c_str());
    std::printf("\nweir %s <example> --help lists the example's options and weir's.\n", command.c_str());
    return 0;
  }
  const weir::cli::Example& example =
      *std::find_if(examples.begin(), examples.end(), [&](const auto& e) { return e.name == argv[2]; });
  weir::JobOptions options(example.description);
  options.setProgramName("weir");
  auto runner = example.setup(options);
  const std::string usage = "weir " + command + " " + argv[2];
  std::vector<const char*> args{usage.c_str()};
  for (int i = 3; i < argc; ++i) args.push_back(argv[i]);
  try {
    if (!options.tryParseArgs(static_cast<int>(args.size()), args.data())) return 0;
  } catch (const weir::Error& e) {
    return usageError(std::string(e.what()) + " (see --help)");
  }
  // The examples never turn checkpoints on themselves: checkpoint options on the
  // command line without --checkpoint-interval are a mistake. (A configuration file may
  // hold them for other jobs.)
  if (!options.get("execution.checkpointing.interval")) {
    for (int i = 3; i < argc; ++i) {
      const std::string arg = argv[i];
      for (const char* flag : {"--checkpointing-mode", "--checkpoint-timeout", "--min-pause",
                               "--max-concurrent-checkpoints", "--tolerable-checkpoint-failures",
                               "--retained-checkpoints", "--retain-on-cancellation", "--unaligned", "--savepoint-dir"})
        if (arg == flag || arg.rfind(std::string(flag) + "=", 0) == 0)
          return usageError(std::string(flag) + " needs --checkpoint-interval: the example takes no checkpoints "
                            "without it");
    }
  }
  if (command == "info") {
    // What the example says goes to stderr: stdout is the plan alone, for jq and the like.
    std::fflush(stdout);
    FILE* plan = ::fdopen(::dup(STDOUT_FILENO), "w");
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    weir::api::printPlansInsteadOfRunning([plan](const std::string& json) {
      std::fprintf(plan, "%s\n", json.c_str());
      std::fflush(plan);
    });
  }
  try {
    return runner(options);
  } catch (const weir::api::PlanPrinted&) {
    return 0;
  } catch (const weir::JobExecutionError& e) {
    std::fprintf(stderr, "weir: %s\n", e.what());
    return 1;
  } catch (const weir::Error& e) {
    return usageError(e.what());
  }
}

int run(int argc, char** argv) {
  std::vector<weir::cli::Example> examples{weir::cli::wordCountExample(), weir::cli::clickCountExample(),
                                           weir::cli::kafkaWordCountExample(), weir::cli::kafkaWindowCountExample(),
                                           weir::cli::redisClickCountExample(), weir::cli::redisEnrichExample()};

  // Unknown commands and examples get a message that lists the known ones.
  const std::vector<std::string> commands{"run",       "info",       "list",         "status", "cancel",
                                          "stop",      "savepoint",  "checkpoint",   "transactions", "history"};
  if (argc >= 2 && argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    std::string known;
    for (const auto& c : commands) known += (known.empty() ? "" : ", ") + c;
    return usageError(std::string("unknown command '") + argv[1] + "'; the commands are: " + known + " (see weir --help)");
  }
  const bool runsExample = argc >= 2 && (std::strcmp(argv[1], "run") == 0 || std::strcmp(argv[1], "info") == 0);
  if (runsExample && argc >= 3 && argv[2][0] != '-') {
    bool known = false;
    for (auto& e : examples) known = known || e.name == argv[2];
    if (!known)
      return usageError(std::string("unknown example '") + argv[2] + "'; the examples are: " + names(examples));
  }

  if (runsExample) return runExample(examples, argc, argv);

  CLI::App app("weir: a stream processor with Flink's semantics, native C++.", "weir");
  app.require_subcommand(1);
  app.add_subcommand("run", "Run an example job: weir run <example> [options]; the examples are: " + names(examples) +
                                " (weir run <example> --help lists its options)");
  app.add_subcommand("info", "Print an example job's plan without running it: weir info <example> [options], "
                             "the plan as Flink's getExecutionPlan() JSON");

  // Job control through a running job's REST API.
  // $WEIR_REST_ADDRESS, when set, replaces --address's default on every call.
  const char* restAddress = std::getenv("WEIR_REST_ADDRESS");
  std::string address = restAddress != nullptr && *restAddress != '\0' ? restAddress : "127.0.0.1:8081";
  std::string jobId, tokenFile, caFile;
  std::function<int()> control;
  // The endpoint the flags and the environment name; nullopt after a one-line error.
  auto endpoint = [&address, &tokenFile, &caFile]() -> std::optional<weir::cli::RestEndpoint> {
    // A server that answers and closes before the whole request is sent (an https one
    // refusing it) must be an error of that call, not the end of the program. Only
    // here: `weir run … | head` still ends with its pipe.
    std::signal(SIGPIPE, SIG_IGN);
    weir::cli::RestEndpoint rest{address, weir::core::readSecretEnvironment("WEIR_REST_TOKEN"), caFile};
    if (!tokenFile.empty()) {
      rest.token = weir::core::readSecretFile(tokenFile).value_or("");
      if (rest.token.empty()) {
        usageError("--token-file '" + tokenFile + "' cannot be read or holds no token");
        return std::nullopt;
      }
      if (auto open = weir::core::secretFileExposure(tokenFile))
        std::fprintf(stderr, "weir: warning: --token-file '%s' %s\n", tokenFile.c_str(), open->c_str());
    }
    return rest;
  };
  auto addControl = [&](const char* name, const char* help, bool needsJob, auto action) {
    auto* sub = app.add_subcommand(name, help);
    sub->add_option("--address", address,
                    "host:port (or https://host:port) of the REST API (default $WEIR_REST_ADDRESS, else 127.0.0.1:8081)");
    sub->add_option("--token-file", tokenFile,
                    "File holding the token the REST API asks for to change a job (default $WEIR_REST_TOKEN)");
    sub->add_option("--ca-file", caFile, "PEM certificates to trust for an https address (default: the system's)");
    if (needsJob) sub->add_option("jobid", jobId, "The job's id, as `weir list` prints it")->required();
    sub->callback([&control, action, &endpoint, &jobId] {
      if (!control) control = [action, &endpoint, &jobId] {
        auto rest = endpoint();
        return rest ? action(*rest, jobId) : 2;
      };
    });
    return sub;
  };
  bool listRunning = false, listAll = false;
  auto* listCommand = addControl("list", "List the jobs a REST API serves that have not ended (-a: all of them)", false,
                                 [&listRunning, &listAll](const weir::cli::RestEndpoint& a, const std::string&) {
                                   return weir::cli::listJobs(a, listAll       ? weir::cli::ListFilter::kAll
                                                                 : listRunning ? weir::cli::ListFilter::kRunning
                                                                               : weir::cli::ListFilter::kNotEnded);
                                 });
  listCommand->add_flag("-r,--running", listRunning, "Only the running jobs");
  listCommand->add_flag("-a,--all", listAll, "Every job, ended ones too");
  addControl("status", "Show a job's state and its operators' throughput and backpressure", true, weir::cli::jobStatus);
  addControl("cancel", "Cancel a running job", true, weir::cli::cancelJob);
  weir::cli::StopOptions stop;
  auto* stopCommand = addControl(
      "stop",
      "Stop a running job: with --savepoint-path (or the job's --savepoint-dir) take a savepoint and end it, "
      "else let its sources end and every operator drain",
      true, [&stop](const weir::cli::RestEndpoint& a, const std::string& j) { return weir::cli::stopJob(a, j, stop); });
  stopCommand->add_option("-p,--savepoint-path", stop.savepointPath, "Folder to write the savepoint into");
  stopCommand->add_flag("-d,--drain", stop.drain,
                        "End the sources' input first: event time advances to its end, every timer and window fires");
  stopCommand->add_option("-t,--type", stop.type, "The savepoint's format: canonical (default) or native");

  // Savepoints: of a running job through its REST API, and on disk.
  std::string savepointDir, savepointType = "canonical", savepointPath;
  auto* savepointCommand = addControl(
      "savepoint",
      "Take a savepoint of a running job: weir savepoint <jobid> [dir]; or weir savepoint inspect|dump|dispose PATH", false,
      [&savepointDir, &savepointType, &jobId](const weir::cli::RestEndpoint& a, const std::string&) {
        if (jobId.empty()) return usageError("weir savepoint needs a job id, or inspect|dump|dispose PATH (see --help)");
        return weir::cli::triggerSavepoint(a, jobId, savepointDir, savepointType);
      });
  savepointCommand->add_option("jobid", jobId, "The job's id, as `weir list` prints it");
  savepointCommand->add_option("dir", savepointDir, "Folder to write it into (default: the job's --savepoint-dir)");
  savepointCommand->add_option("-t,--type", savepointType, "canonical (default: restores into any state backend) or "
                                                           "native (the state backend's own files)");
  auto* savepointInspect = savepointCommand->add_subcommand(
      "inspect", "Print a savepoint's operators, states, key groups and sizes, and verify every file's checksum");
  savepointInspect->add_option("path", savepointPath, "A savepoint folder or its _metadata file")->required();
  savepointInspect->callback([&control, &savepointPath] {
    control = [&savepointPath] { return weir::cli::inspectCheckpoint(savepointPath); };
  });
  std::string dumpOperator, dumpState;
  auto* dump = savepointCommand->add_subcommand(
      "dump", "Write one keyed state of one operator as JSON Lines: keyGroup, key, namespace, userKey, value");
  dump->add_option("path", savepointPath, "A savepoint or checkpoint folder, or its _metadata file")->required();
  dump->add_option("--operator", dumpOperator, "The operator's uid (or the id `savepoint inspect` shows)")->required();
  dump->add_option("--state", dumpState, "The keyed state's name")->required();
  dump->callback([&control, &savepointPath, &dumpOperator, &dumpState] {
    control = [&] { return weir::cli::dumpSavepointState(savepointPath, dumpOperator, dumpState); };
  });
  auto* dispose = savepointCommand->add_subcommand("dispose", "Remove a savepoint");
  dispose->add_option("path", savepointPath, "A savepoint folder or its _metadata file")->required();
  dispose->callback([&control, &savepointPath] {
    control = [&savepointPath] { return weir::cli::disposeSavepoint(savepointPath); };
  });

  // Checkpoints on disk.
  auto* checkpointCommand = app.add_subcommand("checkpoint", "Look at checkpoints: weir checkpoint inspect|clean PATH");
  checkpointCommand->require_subcommand(1);
  std::string checkpointPath;
  auto* inspect = checkpointCommand->add_subcommand(
      "inspect", "Print a checkpoint's operators, states, key groups and sizes, and verify every file's checksum");
  inspect->add_option("path", checkpointPath, "A chk-<n> folder or its _metadata file")->required();
  inspect->callback([&control, &checkpointPath] {
    control = [&checkpointPath] { return weir::cli::inspectCheckpoint(checkpointPath); };
  });
  bool dryRun = false;
  auto* clean = checkpointCommand->add_subcommand(
      "clean", "Remove what no complete checkpoint uses: shared files a killed job left, unfinished chk-<n> folders");
  clean->add_option("path", checkpointPath, "A job's checkpoint folder, or a checkpoint directory of job folders")
      ->required();
  clean->add_flag("--dry-run", dryRun, "Only list what would be removed");
  std::string cleanRocksDir;
  clean->add_option("--rocksdb-local-dir", cleanRocksDir,
                    "Also remove the RocksDB folders of dead runs here (default $TMPDIR or /tmp)");
  clean->callback([&control, &checkpointPath, &dryRun, &cleanRocksDir] {
    control = [&checkpointPath, &dryRun, &cleanRocksDir] {
      return weir::cli::cleanCheckpoints(checkpointPath, dryRun, cleanRocksDir);
    };
  });

  // Transactions a stopped job's exactly-once sinks left open: Kafka's under the
  // checkpoint directory, PostgreSQL's prepared on the server.
  auto* transactionsCommand = app.add_subcommand(
      "transactions",
      "Show, abort or commit the transactions a stopped job left: weir transactions list|abort|commit "
      "(CHECKPOINT_DIR | --postgres CONNECTION)");
  transactionsCommand->require_subcommand(1);
  std::string transactionsServers, transactionsPostgres, transactionsPrefix;
  std::vector<std::string> transactionArgs;
  bool allTransactions = false;
  auto* listTransactions = transactionsCommand->add_subcommand(
      "list", "List the open and committing transactions of the exactly-once Kafka sinks under a checkpoint directory, "
              "or the prepared transactions on a PostgreSQL server");
  listTransactions->add_option("dir", transactionArgs, "The job's checkpoint directory (--checkpoint-dir)")->expected(0, 1);
  listTransactions->add_flag("--all", allTransactions, "Also the committed and aborted ones still remembered");
  auto addPostgres = [&](CLI::App* command) {
    command->add_option("--postgres", transactionsPostgres,
                        "A PostgreSQL server, as libpq's connection string: its prepared transactions");
    command->add_option("--prefix", transactionsPrefix,
                        "Only the transactions of this sink prefix (setTransactionIdPrefix): <prefix>-<subtask>-<n>");
  };
  addPostgres(listTransactions);
  listTransactions->callback([&] {
    control = [&] {
      if (!transactionsPostgres.empty()) return weir::cli::listPostgresTransactions(transactionsPostgres, transactionsPrefix);
      if (transactionArgs.empty()) {
        std::fprintf(stderr, "weir: transactions list needs a checkpoint directory or --postgres\n");
        return 2;
      }
      return weir::cli::listTransactions(transactionArgs[0], allTransactions);
    };
  });
  auto* abortTransactions = transactionsCommand->add_subcommand(
      "abort", "Abort transactions: on the Kafka cluster the given ids, or every open one under CHECKPOINT_DIR; on "
               "PostgreSQL (ROLLBACK PREPARED) the given ids, or every one of --prefix");
  abortTransactions->add_option("args", transactionArgs,
                                "Kafka: CHECKPOINT_DIR [IDS...]; PostgreSQL: IDS..., as `weir transactions list` "
                                "prints them");
  abortTransactions->add_option("--bootstrap-servers", transactionsServers, "The Kafka cluster, host:port[,...]");
  addPostgres(abortTransactions);
  abortTransactions->callback([&] {
    control = [&] {
      if (!transactionsPostgres.empty())
        return weir::cli::resolvePostgresTransactions(transactionsPostgres, transactionArgs, transactionsPrefix, false);
      if (transactionArgs.empty() || transactionsServers.empty()) {
        std::fprintf(stderr, "weir: transactions abort needs CHECKPOINT_DIR and --bootstrap-servers, or --postgres\n");
        return 2;
      }
      return weir::cli::abortTransactions(transactionArgs[0], transactionsServers,
                                          {transactionArgs.begin() + 1, transactionArgs.end()});
    };
  });
  auto* commitTransactions = transactionsCommand->add_subcommand(
      "commit", "Commit prepared transactions on PostgreSQL (COMMIT PREPARED): the given ids, or every one of --prefix");
  commitTransactions->add_option("ids", transactionArgs, "Transaction ids, as `weir transactions list` prints them");
  addPostgres(commitTransactions);
  commitTransactions->callback([&] {
    control = [&] {
      if (transactionsPostgres.empty()) {
        std::fprintf(stderr, "weir: transactions commit needs --postgres (a Kafka transaction is settled by "
                             "restoring its job)\n");
        return 2;
      }
      return weir::cli::resolvePostgresTransactions(transactionsPostgres, transactionArgs, transactionsPrefix, true);
    };
  });

  // `weir history`: the archives of ended jobs (Flink's HistoryServer, its option names).
  std::string historyFolder, historyAddress = "127.0.0.1";
  int historyPort = 8082;
  int historyRefresh = 10000;
  auto* history = app.add_subcommand(
      "history", "Serve the archives of ended jobs (--archive-dir of weir run) with the REST API and Web UI");
  history->add_option("--archive-dir", historyFolder, "The folder jobs were archived to (jobmanager.archive.fs.dir)")
      ->required();
  history->add_option("--port", historyPort, "Port to listen on (default 8082; 0: any free port)")
      ->check(CLI::Range(0, 65535));
  history->add_option("--address", historyAddress, "Address to listen on (default 127.0.0.1)");
  history->add_option("--refresh-interval", historyRefresh, "Milliseconds between reads of the folder (default 10000)")
      ->check(CLI::Range(1, 86400000));
  history->callback([&] {
    control = [&] {
      return weir::cli::serveHistory(historyFolder, historyAddress, historyPort,
                                     std::chrono::milliseconds(historyRefresh));
    };
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = "bad command line";
    return usageError(what + " (see --help)");
  }

  return control ? control() : 0;
}

}  // namespace

// WEIR_CRASH_AT="<sync point>[@<n>]": the process kills itself with SIGKILL the n-th time
// (default 1) it passes that cold sync point (core/sync_point.h), as a machine that dies
// there would. For crash tests (tests/chaos/): unset, it costs nothing.
void crashAtSyncPointIfAsked() {
  const char* spec = std::getenv("WEIR_CRASH_AT");
  if (spec == nullptr || *spec == '\0') return;
  std::string point = spec;
  int hit = 1;
  if (const size_t at = point.find('@'); at != std::string::npos) {
    hit = std::max(1, std::atoi(point.c_str() + at + 1));
    point.resize(at);
  }
  auto hits = std::make_shared<std::atomic<int>>(0);
  weir::core::SyncPoints::instance().setCallback(point, [hits, hit, point](void*) {
    if (hits->fetch_add(1) + 1 != hit) return;
    std::fprintf(stderr, "weir: WEIR_CRASH_AT: killing the process at %s (pass %d)\n", point.c_str(), hit);
    std::fflush(stderr);
    ::raise(SIGKILL);
  });
}

int main(int argc, char** argv) {
  weir::cli::installInterruptHandler();
  crashAtSyncPointIfAsked();
  try {
    int code = run(argc, argv);
    return weir::cli::interrupted() ? 130 : code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weir: internal error: %s\n", e.what());
    return 1;
  }
}
