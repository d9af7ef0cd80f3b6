// JobOptions: the command line, configuration file, dynamic properties and environment
// of a job that is its own program, against Flink's key names and precedence.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "api/config_values.h"
#include "weir/job_options.h"
#include "weir/weir.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// Parses `args` (argv[0] first) into `options`, returning what tryParseArgs does.
bool parseInto(JobOptions& options, std::vector<std::string> args) {
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  return options.tryParseArgs(static_cast<int>(argv.size()), argv.data());
}

// The message of the weir::Error that parsing `args` throws ("" when none).
std::string parseError(std::vector<std::string> args) {
  JobOptions options;
  try {
    parseInto(options, std::move(args));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("weir-job-options-" + std::to_string(::getpid()) + "-" +
                                                   std::to_string(counter_++))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return path_ / name;
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// Sets an environment variable for the test's scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

TEST(JobOptions, TheCommandLineSetsUpTheEnvironment) {
  TempDir dir;
  JobOptions options;
  ASSERT_TRUE(parseInto(options, {"job", "-p", "3", "--max-parallelism", "64", "--checkpoint-interval", "250",
                                  "--checkpointing-mode", "at-least-once", "--checkpoint-dir", dir.path().string(),
                                  "--retained-checkpoints", "2", "--checkpoint-timeout", "9000", "--min-pause", "20",
                                  "--tolerable-checkpoint-failures", "4", "--retain-on-cancellation", "--state-backend",
                                  "rocksdb", "--incremental-checkpoints", "--rest-port", "0", "--network-memory", "64",
                                  "--savepoint-dir", (dir.path() / "sp").string()}));
  StreamExecutionEnvironment env;
  options.applyTo(env);
  EXPECT_EQ(env.getParallelism(), 3);
  EXPECT_EQ(options.parallelism(), 3);
  EXPECT_EQ(env.getMaxParallelism(), 64);
  EXPECT_EQ(env.getNetworkMemory(), int64_t{64} << 20);
  const CheckpointConfig& c = env.getCheckpointConfig();
  EXPECT_EQ(c.getCheckpointInterval(), milliseconds(250));
  EXPECT_EQ(c.getCheckpointingMode(), CheckpointingMode::AT_LEAST_ONCE);
  EXPECT_EQ(c.getCheckpointStorage(), dir.path().string());
  EXPECT_EQ(c.getNumRetainedCheckpoints(), 2);
  EXPECT_EQ(c.getCheckpointTimeout(), milliseconds(9000));
  EXPECT_EQ(c.getMinPauseBetweenCheckpoints(), milliseconds(20));
  EXPECT_EQ(c.getTolerableCheckpointFailureNumber(), 4);
  EXPECT_EQ(c.getExternalizedCheckpointCleanup(), ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
  EXPECT_EQ(c.getDefaultSavepointDirectory(), (dir.path() / "sp").string());
  auto* rocks = dynamic_cast<const EmbeddedRocksDBStateBackend*>(&env.getStateBackend());
  ASSERT_NE(rocks, nullptr) << env.getStateBackend().getName();
  EXPECT_TRUE(rocks->isIncrementalCheckpointsEnabled());
  EXPECT_TRUE(env.getRestOptions().enabled);
  EXPECT_EQ(env.getRestOptions().port, 0);
  EXPECT_FALSE(options.restores());
}

TEST(JobOptions, NothingGivenLeavesTheEnvironmentsDefaultsButServesRest) {
  JobOptions options;
  ASSERT_TRUE(parseInto(options, {"job"}));
  StreamExecutionEnvironment env;
  env.setParallelism(5);
  options.applyTo(env);
  EXPECT_EQ(env.getParallelism(), 5);  // the program's own default stays
  EXPECT_EQ(options.parallelism(), 0);
  EXPECT_EQ(env.getMaxParallelism(), -1);
  EXPECT_FALSE(env.getCheckpointConfig().isCheckpointingEnabled());
  EXPECT_EQ(env.getStateBackend().getName(), "hashmap");
  EXPECT_TRUE(env.getRestOptions().enabled);
  EXPECT_EQ(env.getRestOptions().port, 8081);
  EXPECT_EQ(env.getRestOptions().prometheusPrefix, "weir");
  EXPECT_TRUE(env.getConfig().hasJobBanner());
}

// Flink's precedence: the configuration file, then dynamic properties, then the options
// of the command line.
TEST(JobOptions, FlagsBeatDynamicPropertiesWhichBeatTheConfigFile) {
  TempDir dir;
  auto file = dir.write("config.yaml",
                        "# Flink's config.yaml: nested keys\n"
                        "parallelism:\n"
                        "  default: 2\n"
                        "execution:\n"
                        "  checkpointing:\n"
                        "    interval: 10 s\n"
                        "    timeout: 1 min\n"
                        "    mode: AT_LEAST_ONCE\n"
                        "state.backend.type: hashmap\n"
                        "weir.metrics.prometheus.prefix: flink\n"
                        "rest.port: 0\n");
  JobOptions options;
  ASSERT_TRUE(parseInto(options, {"job", "--config", file.string(), "-D", "execution.checkpointing.interval=5s",
                                  "-Dparallelism.default=4", "-D", "execution.checkpointing.timeout=2 min",
                                  "--checkpoint-timeout", "30000"}));
  StreamExecutionEnvironment env;
  options.applyTo(env);
  EXPECT_EQ(env.getParallelism(), 4);
  EXPECT_EQ(env.getCheckpointConfig().getCheckpointInterval(), milliseconds(5000));
  EXPECT_EQ(env.getCheckpointConfig().getCheckpointTimeout(), milliseconds(30000));
  EXPECT_EQ(env.getCheckpointConfig().getCheckpointingMode(), CheckpointingMode::AT_LEAST_ONCE);
  EXPECT_EQ(env.getRestOptions().port, 0);
  EXPECT_EQ(env.getRestOptions().prometheusPrefix, "flink");
  EXPECT_EQ(options.get("execution.checkpointing.interval"), "5s");
  EXPECT_EQ(options.get("rest.port"), "0");
  EXPECT_EQ(options.get("state.checkpoints.dir"), std::nullopt);

  JobOptions flagWins;
  ASSERT_TRUE(parseInto(flagWins, {"job", "-D", "parallelism.default=4", "-p", "5"}));
  EXPECT_EQ(flagWins.parallelism(), 5);
}

// $WEIR_CONF_DIR is Flink's FLINK_CONF_DIR (config.yaml, else the flat flink-conf.yaml),
// $WEIR_PROPERTIES the docker image's FLINK_PROPERTIES: over the files, under -D.
TEST(JobOptions, TheEnvironmentsConfigurationFolderAndProperties) {
  TempDir dir;
  dir.write("flink-conf.yaml",
            "parallelism.default: 2\n"
            "execution.checkpointing.interval: 1 min\n"
            "state.checkpoints.num-retained: 3\n"
            "pipeline.auto-watermark-interval: 50 ms\n");
  auto file = dir.write("job.yaml", "state.checkpoints.num-retained: 4\nexecution.checkpointing.interval: 2 min\n");
  ScopedEnv confDir("WEIR_CONF_DIR", dir.path().string());
  ScopedEnv properties("WEIR_PROPERTIES", "execution.checkpointing.interval: 3 min\nrest.port: 0\n");
  JobOptions options;
  ASSERT_TRUE(parseInto(options, {"job", "--config", file.string(), "-D", "parallelism.default=6"}));
  StreamExecutionEnvironment env;
  options.applyTo(env);
  EXPECT_EQ(env.getParallelism(), 6);                                                    // -D over the folder
  EXPECT_EQ(env.getCheckpointConfig().getNumRetainedCheckpoints(), 4);                   // --config over the folder
  EXPECT_EQ(env.getCheckpointConfig().getCheckpointInterval(), milliseconds(180000));    // properties over --config
  EXPECT_EQ(env.getRestOptions().port, 0);

  ScopedEnv missing("WEIR_CONF_DIR", (dir.path() / "nowhere").string());
  EXPECT_NE(parseError({"job"}).find("WEIR_CONF_DIR"), std::string::npos);
}

// Flink's own key names of 2.0 name the same settings as 1.x's.
TEST(JobOptions, TheKeysOfEitherFlinkGenerationWork) {
  TempDir dir;
  JobOptions options;
  ASSERT_TRUE(parseInto(options, {"job", "-D", "execution.checkpointing.dir=" + dir.path().string(), "-D",
                                  "execution.checkpointing.interval=1s", "-D", "execution.checkpointing.num-retained=5",
                                  "-D", "state.backend=rocksdb", "-D", "execution.checkpointing.incremental=true"}));
  StreamExecutionEnvironment env;
  options.applyTo(env);
  EXPECT_EQ(env.getCheckpointConfig().getCheckpointStorage(), dir.path().string());
  EXPECT_EQ(env.getCheckpointConfig().getNumRetainedCheckpoints(), 5);
  auto* rocks = dynamic_cast<const EmbeddedRocksDBStateBackend*>(&env.getStateBackend());
  ASSERT_NE(rocks, nullptr);
  EXPECT_TRUE(rocks->isIncrementalCheckpointsEnabled());
  EXPECT_EQ(options.get("state.checkpoints.dir"), dir.path().string());
}

// Flink's state.backend.rocksdb.metrics.* keys, one per native metric, reach the RocksDB
// backend's options; they need that backend.
TEST(JobOptions, RocksDBNativeMetricKeys) {
  JobOptions options;
  ASSERT_TRUE(parseInto(options, {"job", "--state-backend", "rocksdb", "-D",
                                  "state.backend.rocksdb.metrics.estimate-num-keys=true", "-D",
                                  "state.backend.rocksdb.metrics.block-cache-usage=true", "-D",
                                  "state.backend.rocksdb.metrics.num-running-flushes=false", "-D",
                                  "state.backend.rocksdb.metrics.column-family-as-variable=true"}));
  StreamExecutionEnvironment env;
  options.applyTo(env);
  auto* rocks = dynamic_cast<const EmbeddedRocksDBStateBackend*>(&env.getStateBackend());
  ASSERT_NE(rocks, nullptr);
  EXPECT_EQ(rocks->options().nativeMetrics, (std::vector<std::string>{"estimate-num-keys", "block-cache-usage"}));
  EXPECT_TRUE(rocks->options().metricsColumnFamilyAsVariable);
  EXPECT_EQ(EmbeddedRocksDBStateBackend::nativeMetricNames().size(), 26u);
  std::string e = parseError({"job", "-D", "state.backend.rocksdb.metrics.estimate-num-keys=true"});
  EXPECT_NE(e.find("-D state.backend.rocksdb.metrics.estimate-num-keys needs --state-backend rocksdb"), std::string::npos)
      << e;
  e = parseError({"job", "--state-backend", "rocksdb", "-D", "state.backend.rocksdb.metrics.estimate-num-keyz=true"});
  EXPECT_NE(e.find("unknown configuration key 'state.backend.rocksdb.metrics.estimate-num-keyz'"), std::string::npos)
      << e;
}

TEST(JobOptions, BadKeysAndValuesAreOneLineNamingThemAndWhereTheyWereSet) {
  TempDir dir;
  auto typo = dir.write("typo.yaml", "execution.checkpointing.intervall: 10 s\n");
  std::string e = parseError({"job", "--config", typo.string()});
  EXPECT_NE(e.find("unknown configuration key 'execution.checkpointing.intervall'"), std::string::npos) << e;
  EXPECT_NE(e.find(typo.string()), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'execution.checkpointing.interval'"), std::string::npos) << e;

  e = parseError({"job", "-D", "execution.checkpointing.interval=often"});
  EXPECT_NE(e.find("-D execution.checkpointing.interval: 'often' is not a duration"), std::string::npos) << e;
  e = parseError({"job", "-D", "no.such.key=1"});
  EXPECT_NE(e.find("unknown configuration key 'no.such.key'"), std::string::npos) << e;
  e = parseError({"job", "-D", "parallelism.default"});
  EXPECT_NE(e.find("is not KEY=VALUE"), std::string::npos) << e;
  e = parseError({"job", "--rest-port", "70000"});
  EXPECT_NE(e.find("--rest-port must be between 0 and 65535"), std::string::npos) << e;
  e = parseError({"job", "--checkpoint-interval", "-5"});
  EXPECT_NE(e.find("--checkpoint-interval must be positive"), std::string::npos) << e;
  auto list = dir.write("list.yaml", "rest.port: [1, 2]\n");
  e = parseError({"job", "--config", list.string()});
  EXPECT_NE(e.find("rest.port in " + list.string() + " is a list"), std::string::npos) << e;
  auto broken = dir.write("broken.yaml", "rest.port: 1\n  : : [\n");
  e = parseError({"job", "--config", broken.string()});
  EXPECT_NE(e.find(broken.string()), std::string::npos) << e;
  e = parseError({"job", "--config", (dir.path() / "absent.yaml").string()});
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
  e = parseError({"job", "--rocksdb-local-dir", dir.path().string()});
  EXPECT_NE(e.find("--rocksdb-local-dir needs --state-backend rocksdb"), std::string::npos) << e;
  e = parseError({"job", "--unaligned", "--checkpointing-mode", "at-least-once"});
  EXPECT_NE(e.find("--unaligned needs --checkpointing-mode exactly-once"), std::string::npos) << e;
  e = parseError({"job", "-D", "restart-strategy.type=sometimes"});
  EXPECT_NE(e.find("-D restart-strategy.type: 'sometimes' is not one of"), std::string::npos) << e;
  e = parseError({"job", "-D", "weir.metrics.prometheus.prefix=prom"});
  EXPECT_NE(e.find("-D weir.metrics.prometheus.prefix: 'prom' is not one of"), std::string::npos) << e;
  e = parseError({"job", "--restore", "latest"});
  EXPECT_NE(e.find("--restore latest needs --checkpoint-dir"), std::string::npos) << e;
  e = parseError({"job", "--no-such-option"});
  EXPECT_NE(e.find("--no-such-option"), std::string::npos) << e;
  EXPECT_THROW(JobOptions().set("rest.prot", "1"), Error);
  EXPECT_THROW(JobOptions().set("rest.port", "http"), Error);
}

TEST(JobOptions, OddInputIsRefusedOrHarmless) {
  // A flag cannot be turned off by =false: it would do the opposite of what it says.
  EXPECT_NE(parseError({"job", "--no-rest=false"}), "");
  EXPECT_NE(parseError({"job", "--unaligned=false"}), "");
  // Durations that timed waits could not hold are refused, not wrapped around.
  std::string e = parseError({"job", "-D", "restart-strategy.fixed-delay.delay=300000d"});
  EXPECT_NE(e.find("-D restart-strategy.fixed-delay.delay must not be negative and at most"), std::string::npos) << e;
  e = parseError({"job", "-p", "99999999999999999999999"});
  EXPECT_NE(e.find("--parallelism must be between 1 and 32768"), std::string::npos) << e;
  e = parseError({"job", "-D", "state.backend.rocksdb.writebuffer.size=1kb"});
  EXPECT_NE(e.find("must be between 65536 bytes and"), std::string::npos) << e;
  // Restart strategy settings that do not fit together name both.
  e = parseError({"job", "--restart-strategy", "exponential-delay:5000:1000"});
  EXPECT_NE(e.find("restart-strategy.exponential-delay.max-backoff"), std::string::npos) << e;
  EXPECT_NE(e.find("must not be below"), std::string::npos) << e;
  EXPECT_NE(parseError({"job", "--config", ""}), "");
  // Flink's "not set" for the max parallelism.
  JobOptions unset;
  ASSERT_TRUE(parseInto(unset, {"job", "-D", "pipeline.max-parallelism=-1"}));
  StreamExecutionEnvironment env;
  unset.applyTo(env);
  EXPECT_EQ(env.getMaxParallelism(), -1);
  // No arguments at all.
  JobOptions none;
  EXPECT_TRUE(none.tryParseArgs(0, nullptr));
}

// A configuration file may hold settings for other jobs: one that has no effect here is
// ignored, as Flink does; the same setting on the command line is an error.
TEST(JobOptions, SettingsWithoutEffectAreErrorsOnlyOnTheCommandLine) {
  TempDir dir;
  auto file = dir.write("shared.yaml",
                        "state.backend.rocksdb.localdir: " + dir.path().string() +
                            "\nexecution.checkpointing.aligned-checkpoint-timeout: 0\n"
                            "execution.savepoint.ignore-unclaimed-state: false\nrest.address: jobmanager\n");
  JobOptions options;
  EXPECT_TRUE(parseInto(options, {"job", "--config", file.string()}));
  EXPECT_EQ(options.get("rest.address"), "jobmanager");
  std::string e = parseError({"job", "-D", "state.backend.rocksdb.localdir=" + dir.path().string()});
  EXPECT_NE(e.find("-D state.backend.rocksdb.localdir needs --state-backend rocksdb"), std::string::npos) << e;
  JobOptions loaded;
  loaded.loadConfigFile(file.string());
  ASSERT_TRUE(parseInto(loaded, {"job"}));
  try {
    loaded.set("execution.checkpointing.mode", "at-least-once").set("execution.checkpointing.unaligned", "true");
    StreamExecutionEnvironment env;
    loaded.applyTo(env);
    FAIL() << "unaligned checkpoints need exactly-once";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("execution.checkpointing.unaligned needs execution.checkpointing.mode"),
              std::string::npos)
        << error.what();
  }
}

TEST(JobOptions, TheProgramsOwnOptionsAreParsedBesideWeirs) {
  std::string input;
  int64_t count = 10;
  bool verbose = false;
  {
    JobOptions options("my job");
    options.addOption("-i,--input", input, "The input").required();
    options.addOption("--count", count, "How many");
    options.addFlag("-v,--verbose", verbose, "Say more");
    ASSERT_TRUE(parseInto(options, {"job", "--input", "a.txt", "--count", "7", "-v", "-p", "2"}));
    EXPECT_EQ(input, "a.txt");
    EXPECT_EQ(count, 7);
    EXPECT_TRUE(verbose);
    EXPECT_EQ(options.parallelism(), 2);
  }
  JobOptions missing("my job");
  missing.addOption("-i,--input", input, "The input").required();
  try {
    parseInto(missing, {"job"});
    FAIL() << "a required option is missing";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--input"), std::string::npos) << e.what();
  }
  int clash = 0;
  JobOptions taken("my job");
  try {
    taken.addOption("-p,--pages", clash, "Pages");
    FAIL() << "-p is weir's";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("-p,--pages"), std::string::npos) << e.what();
  }
  JobOptions rounding("my job");
  rounding.addOption("--count", count, "How many");
  try {
    parseInto(rounding, {"job", "--count", "1e20"});
    FAIL() << "1e20 is not a whole number";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--count"), std::string::npos) << e.what();
  }
}

TEST(JobOptions, HelpListsWeirsOptionsAndTheProgramsAndParsesNothing) {
  std::string input;
  JobOptions options("Counts words");
  options.addOption("-i,--input", input, "The file to read").required();
  testing::internal::CaptureStdout();
  const bool parsed = parseInto(options, {"wordcount", "--help"});
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_FALSE(parsed);
  for (const char* word : {"Counts words", "wordcount", "--input", "--parallelism", "--checkpoint-interval", "--config",
                           "-D", "--from-savepoint", "--state-backend", "--rest-port"})
    EXPECT_NE(help.find(word), std::string::npos) << word << " missing from:\n" << help;
}

// Flink's TimeUtils#parseDuration and MemorySize#parse, by their documented examples.
TEST(JobOptions, DurationsAndMemorySizesReadAsFlinkReadsThem) {
  EXPECT_EQ(api::parseDuration("1 min"), milliseconds(60000));
  EXPECT_EQ(api::parseDuration("10s"), milliseconds(10000));
  EXPECT_EQ(api::parseDuration("500 ms"), milliseconds(500));
  EXPECT_EQ(api::parseDuration("2 hours"), milliseconds(7200000));
  EXPECT_EQ(api::parseDuration("1d"), milliseconds(86400000));
  EXPECT_EQ(api::parseDuration("100"), milliseconds(100));
  EXPECT_EQ(api::parseDuration("3 seconds"), milliseconds(3000));
  EXPECT_THROW(api::parseDuration("12 parsecs"), std::invalid_argument);
  EXPECT_THROW(api::parseDuration("1.5 s"), std::invalid_argument);
  EXPECT_EQ(api::parseMemorySize("64mb"), int64_t{64} << 20);
  EXPECT_EQ(api::parseMemorySize("1 g"), int64_t{1} << 30);
  EXPECT_EQ(api::parseMemorySize("512 kb"), int64_t{512} << 10);
  EXPECT_EQ(api::parseMemorySize("1024"), 1024);
  EXPECT_THROW(api::parseMemorySize("-1 mb"), std::invalid_argument);
  EXPECT_THROW(api::parseMemorySize("99999999999 tb"), std::invalid_argument);
  EXPECT_EQ(api::parseEnum("exactly-once", {"EXACTLY_ONCE", "AT_LEAST_ONCE"}), "EXACTLY_ONCE");
  EXPECT_EQ(api::parseEnum("At_Least_Once", {"EXACTLY_ONCE", "AT_LEAST_ONCE"}), "AT_LEAST_ONCE");
}

TEST(JobOptions, RestoringFromACheckpointOrSavepoint) {
  TempDir dir;
  JobOptions options;
  ASSERT_TRUE(parseInto(options, {"job", "-s", (dir.path() / "savepoint-1").string(), "-n", "--restore-mode", "claim"}));
  StreamExecutionEnvironment env;
  options.applyTo(env);
  EXPECT_TRUE(options.restores());
  EXPECT_EQ(options.get("execution.savepoint.path"), (dir.path() / "savepoint-1").string());
  EXPECT_NE(parseError({"job", "-n"}).find("needs a snapshot to resume from"), std::string::npos);
  EXPECT_NE(parseError({"job", "-s", "x", "--restore", "latest", "--checkpoint-dir", dir.path().string()}).find("not both"),
            std::string::npos);
  // Nothing under the folder yet: starts from scratch, and says so.
  JobOptions latest;
  testing::internal::CaptureStderr();
  ASSERT_TRUE(parseInto(latest, {"job", "--restore", "latest", "--checkpoint-dir", dir.path().string()}));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("no checkpoint under"), std::string::npos);
  EXPECT_FALSE(latest.restores());
}

// A job that is its own program: fromArgs, and the lines it prints when it starts and ends.
TEST(JobOptions, AJobFromArgsRunsAndAnnouncesItsIdAndRestAddress) {
  std::vector<const char*> argv{"job", "-p", "2", "--rest-port", "0", "--checkpoint-interval", "20"};
  StreamExecutionEnvironment env = StreamExecutionEnvironment::fromArgs(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(env.getParallelism(), 2);
  EXPECT_TRUE(env.getCheckpointConfig().isCheckpointingEnabled());
  CollectSink<int64_t> sink;
  env.fromSource(DataGeneratorSource([](int64_t i) { return i * 2; }, 1000), WatermarkStrategy<int64_t>::noWatermarks(),
                 "gen")
      .sinkTo(sink);
  testing::internal::CaptureStderr();
  JobClient client = env.executeAsync("from args");
  const std::string id = client.getJobID();
  client.wait();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(sink.getResults().size(), 1000u);
  EXPECT_TRUE(std::regex_search(err, std::regex("weir: job 'from args' started with id " + id +
                                                 "; REST API and Web UI at http://127\\.0\\.0\\.1:[1-9][0-9]*")))
      << err;
  // Once it ended, it says that the API stays (the program may go on).
  EXPECT_TRUE(std::regex_search(err, std::regex("weir: job " + id + " ended FINISHED; its REST API and Web UI stay at "
                                                 "http://127\\.0\\.0\\.1:[1-9][0-9]* until this process exits\n")))
      << err;
}

// Who may drive the job through its REST API: TLS from PEM files, a token from a file or
// $WEIR_REST_TOKEN (never from a command line, where ps shows it), and the insecure flag.
TEST(JobOptions, TheRestApisTlsTokenAndInsecureFlag) {
  TempDir dir;
  auto token = dir.write("token", "s3cret \n");
  // A token file others may read is taken, with a warning, as ssh says of an open key.
  std::filesystem::permissions(token, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                          std::filesystem::perms::others_read);
  ::testing::internal::CaptureStderr();
  JobOptions open;
  EXPECT_TRUE(parseInto(open, {"job", "--rest-token-file", token.string()}));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "job: warning: --rest-token-file '" + token.string() + "' is open to others (mode 0604); chmod 600 it\n");
  std::filesystem::permissions(token, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ::testing::internal::CaptureStderr();
  JobOptions options;
  ASSERT_TRUE(parseInto(options, {"job", "--rest-ssl-certificate", "/c.pem", "--rest-ssl-private-key", "/k.pem",
                                  "--rest-token-file", token.string(), "--rest-insecure"}));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  StreamExecutionEnvironment env;
  options.applyTo(env);
  EXPECT_EQ(env.getRestOptions().sslCertificate, "/c.pem");
  EXPECT_EQ(env.getRestOptions().sslPrivateKey, "/k.pem");
  EXPECT_EQ(env.getRestOptions().authenticationToken, "s3cret");
  EXPECT_TRUE(env.getRestOptions().insecure);

  ::setenv("WEIR_REST_TOKEN", "from-the-environment", 1);
  JobOptions fromEnvironment;
  ASSERT_TRUE(parseInto(fromEnvironment, {"job"}));
  StreamExecutionEnvironment env2;
  fromEnvironment.applyTo(env2);
  ::unsetenv("WEIR_REST_TOKEN");
  EXPECT_EQ(env2.getRestOptions().authenticationToken, "from-the-environment");
  EXPECT_FALSE(env2.getRestOptions().insecure);

  std::string e = parseError({"job", "-D", "rest.authentication.token=s3cret"});
  EXPECT_NE(e.find("rest.authentication.token is not a key"), std::string::npos) << e;
  EXPECT_EQ(e.find("s3cret"), std::string::npos) << "the token is not repeated: " << e;
  e = parseError({"job", "--rest-ssl-certificate", "/c.pem"});
  EXPECT_NE(e.find("--rest-ssl-certificate needs --rest-ssl-private-key"), std::string::npos) << e;
  e = parseError({"job", "--rest-token-file", (dir.path() / "absent").string()});
  EXPECT_NE(e.find("--rest-token-file '" + (dir.path() / "absent").string() + "' cannot be read"), std::string::npos) << e;
  e = parseError({"job", "--rest-token-file", dir.write("empty", "\n").string()});
  EXPECT_NE(e.find("holds no token"), std::string::npos) << e;
}

// docs/configuration.md lists every key JobOptions knows.
TEST(JobOptions, EveryKeyIsDocumented) {
  std::ifstream in(std::string(WEIR_DOCS_DIR) + "/configuration.md");
  ASSERT_TRUE(in) << WEIR_DOCS_DIR;
  std::stringstream text;
  text << in.rdbuf();
  for (const auto& key : JobOptions::keys())
    EXPECT_NE(text.str().find("`" + key + "`"), std::string::npos) << key << " is not in docs/configuration.md";
}

}  // namespace
}  // namespace weir
