#include "weir/job_options.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <CLI/CLI.hpp>
#include <yaml-cpp/yaml.h>

#include "api/config_values.h"
#include "checkpoint/checkpoint_storage.h"
#include "core/secret_file.h"
#include "weir/error.h"
#include "weir/key_group.h"
#include "weir/stream_execution_environment.h"

namespace weir {

namespace {

using Millis = std::chrono::milliseconds;

enum class Type { kInt, kDuration, kMemory, kDecimal, kBool, kString, kEnum };

// One configuration key: Flink's name (and the names other Flink versions give it), its
// type and range, and the command-line option that sets it, if any.
struct Key {
  std::string name;
  std::vector<std::string> aliases;
  Type type;
  std::string flag;                   // the long option, for messages; "" when none
  int64_t min = 0, max = 0;           // kInt; kDuration (ms); kMemory (bytes)
  double dmin = 0, dmax = 0;          // kDecimal
  std::vector<std::string> values{};  // kEnum, upper case
};

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kForever = int64_t{1} << 40;  // ms: some 35 years, far below what timed waits overflow at

// Flink's state.backend.rocksdb.metrics.<name> keys: one per RocksDB native metric.
constexpr const char* kNativeMetricPrefix = "state.backend.rocksdb.metrics.";

std::vector<Key> withNativeMetricKeys(std::vector<Key> keys) {
  for (const auto& name : EmbeddedRocksDBStateBackend::nativeMetricNames())
    keys.push_back({kNativeMetricPrefix + name, {}, Type::kBool, ""});
  keys.push_back({std::string(kNativeMetricPrefix) + "column-family-as-variable", {}, Type::kBool, ""});
  return keys;
}

const std::vector<Key>& allKeys() {
  static const std::vector<Key> keys = withNativeMetricKeys({
      {"parallelism.default", {}, Type::kInt, "--parallelism", 1, kUpperBoundMaxParallelism},
      {"execution.runtime-mode", {}, Type::kEnum, "--execution-mode", 0, 0, 0, 0, {"STREAMING", "BATCH", "AUTOMATIC"}},
      {"execution.sorted-inputs.memory", {}, Type::kMemory, "", 64 << 10, int64_t{1} << 50},
      {"io.tmp.dirs", {}, Type::kString, ""},
      {"execution.batch-shuffle-mode", {}, Type::kEnum, "", 0, 0, 0, 0, {"ALL_EXCHANGES_BLOCKING", "ALL_EXCHANGES_PIPELINED"}},
      {"weir.batch-shuffle.memory", {}, Type::kMemory, "", 0, int64_t{1} << 50},
      {"pipeline.max-parallelism", {}, Type::kInt, "--max-parallelism", -1, kUpperBoundMaxParallelism},
      {"pipeline.auto-watermark-interval", {}, Type::kDuration, "", 1, kForever},
      {"pipeline.auto-generate-uids", {}, Type::kBool, ""},
      {"execution.buffer-timeout", {"execution.buffer-timeout.interval"}, Type::kDuration, "", -1, kForever},
      {"taskmanager.memory.network.max", {}, Type::kMemory, "--network-memory", 1 << 20, int64_t{1} << 50},
      {"taskmanager.network.memory.buffers-per-channel", {}, Type::kInt, "", 1, 1 << 16},
      {"rest.port", {}, Type::kInt, "--rest-port", 0, 65535},
      {"rest.bind-address", {}, Type::kString, "--rest-address"},
      {"rest.address", {}, Type::kString, ""},
      {"weir.rest.enabled", {}, Type::kBool, "--no-rest"},
      {"jobmanager.archive.fs.dir", {}, Type::kString, "--archive-dir"},
      {"weir.metrics.prometheus.prefix", {}, Type::kEnum, "", 0, 0, 0, 0, {"WEIR", "FLINK"}},
      {"weir.rest.ssl.certificate", {}, Type::kString, "--rest-ssl-certificate"},
      {"weir.rest.ssl.private-key", {}, Type::kString, "--rest-ssl-private-key"},
      {"weir.rest.authentication.token-file", {}, Type::kString, "--rest-token-file"},
      {"weir.rest.insecure", {}, Type::kBool, "--rest-insecure"},
      {"state.backend.type", {"state.backend"}, Type::kEnum, "--state-backend", 0, 0, 0, 0, {"HASHMAP", "ROCKSDB", "HEAP"}},
      {"state.backend.incremental", {"execution.checkpointing.incremental"}, Type::kBool, "--incremental-checkpoints"},
      {"state.backend.rocksdb.localdir", {}, Type::kString, "--rocksdb-local-dir"},
      {"state.backend.rocksdb.block.cache-size", {}, Type::kMemory, "", 1 << 20, int64_t{1} << 50},
      {"state.backend.rocksdb.memory.write-buffer-ratio", {}, Type::kDecimal, "", 0, 0, 0.01, 1},
      {"state.backend.rocksdb.writebuffer.size", {}, Type::kMemory, "", 64 << 10, int64_t{1} << 40},
      {"state.backend.rocksdb.writebuffer.count", {}, Type::kInt, "", 1, 64},
      {"state.backend.rocksdb.compaction.style", {}, Type::kEnum, "", 0, 0, 0, 0, {"LEVEL", "UNIVERSAL"}},
      {"execution.checkpointing.interval", {}, Type::kDuration, "--checkpoint-interval", 1, kForever},
      {"execution.checkpointing.mode", {}, Type::kEnum, "--checkpointing-mode", 0, 0, 0, 0, {"EXACTLY_ONCE", "AT_LEAST_ONCE"}},
      {"execution.checkpointing.timeout", {}, Type::kDuration, "--checkpoint-timeout", 1, kForever},
      {"execution.checkpointing.min-pause", {}, Type::kDuration, "--min-pause", 0, kForever},
      {"execution.checkpointing.max-concurrent-checkpoints", {}, Type::kInt, "--max-concurrent-checkpoints", 1, 1000},
      {"execution.checkpointing.tolerable-failed-checkpoints", {}, Type::kInt, "--tolerable-checkpoint-failures", 0, kIntMax},
      {"state.checkpoints.num-retained", {"execution.checkpointing.num-retained"}, Type::kInt, "--retained-checkpoints", 1, 1000000},
      {"execution.checkpointing.externalized-checkpoint-retention", {}, Type::kEnum, "--retain-on-cancellation", 0, 0, 0, 0,
       {"DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"}},
      {"execution.checkpointing.unaligned", {"execution.checkpointing.unaligned.enabled"}, Type::kBool, "--unaligned"},
      {"execution.checkpointing.aligned-checkpoint-timeout", {}, Type::kDuration, "--aligned-checkpoint-timeout", 0, kForever},
      {"state.checkpoints.dir", {"execution.checkpointing.dir"}, Type::kString, "--checkpoint-dir"},
      {"state.savepoints.dir", {"execution.checkpointing.savepoint-dir"}, Type::kString, "--savepoint-dir"},
      {"execution.savepoint.path", {"execution.state-recovery.path"}, Type::kString, "--from-savepoint"},
      {"execution.savepoint.ignore-unclaimed-state", {"execution.state-recovery.ignore-unclaimed-state"}, Type::kBool,
       "--allow-non-restored-state"},
      {"execution.savepoint-restore-mode", {"execution.state-recovery.claim-mode"}, Type::kEnum, "--restore-mode", 0, 0, 0, 0,
       {"NO_CLAIM", "CLAIM"}},
      {"weir.restore", {}, Type::kEnum, "--restore", 0, 0, 0, 0, {"LATEST"}},
      {"restart-strategy.type", {"restart-strategy"}, Type::kEnum, "--restart-strategy", 0, 0, 0, 0,
       {"NONE", "OFF", "DISABLE", "FIXED_DELAY", "FIXEDDELAY", "EXPONENTIAL_DELAY", "EXPONENTIALDELAY", "FAILURE_RATE",
        "FAILURERATE"}},
      {"restart-strategy.fixed-delay.attempts", {}, Type::kInt, "", 0, kIntMax},
      {"restart-strategy.fixed-delay.delay", {}, Type::kDuration, "", 0, kForever},
      {"restart-strategy.exponential-delay.initial-backoff", {}, Type::kDuration, "", 1, kForever},
      {"restart-strategy.exponential-delay.max-backoff", {}, Type::kDuration, "", 1, kForever},
      {"restart-strategy.exponential-delay.backoff-multiplier", {}, Type::kDecimal, "", 0, 0, 1, 1000},
      {"restart-strategy.exponential-delay.reset-backoff-threshold", {}, Type::kDuration, "", 1, kForever},
      {"restart-strategy.exponential-delay.jitter-factor", {}, Type::kDecimal, "", 0, 0, 0, 1},
      {"restart-strategy.failure-rate.max-failures-per-interval", {}, Type::kInt, "", 1, kIntMax},
      {"restart-strategy.failure-rate.failure-rate-interval", {}, Type::kDuration, "", 1, kForever},
      {"restart-strategy.failure-rate.delay", {}, Type::kDuration, "", 0, kForever},
  });
  return keys;
}

const Key* findKey(const std::string& name) {
  for (const auto& k : allKeys())
    if (k.name == name || std::find(k.aliases.begin(), k.aliases.end(), name) != k.aliases.end()) return &k;
  return nullptr;
}

const Key& key(const std::string& name) { return *findKey(name); }

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0]++;
    for (size_t j = 1; j <= b.size(); ++j)
      diagonal = std::exchange(row[j], std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])}));
  }
  return row[b.size()];
}

Error bad(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

std::string rangeText(const Key& k) {
  auto amount = [&](int64_t v) {
    return k.type == Type::kDuration ? std::to_string(v) + " ms"
           : k.type == Type::kMemory ? (v % (1 << 20) == 0 ? std::to_string(v >> 20) + " MiB" : std::to_string(v) + " bytes")
                                     : std::to_string(v);
  };
  if (k.type == Type::kDuration && k.max >= kForever)
    return std::string(k.min == 1 ? "must be positive" : k.min == 0 ? "must not be negative" : "must be at least " + amount(k.min)) +
           " and at most " + amount(k.max) + " (some 35 years)";
  if (k.name == "pipeline.max-parallelism") return "must be between 1 and " + amount(k.max) + " (or -1: not set)";
  return "must be between " + amount(k.min) + " and " + amount(k.max);
}

// Checks `value` against the key's type and range; throws naming `origin`.
void validate(const Key& k, const std::string& value, const std::string& origin) {
  try {
    switch (k.type) {
      case Type::kInt: {
        int64_t v = 0;
        try {
          v = api::parseWholeNumber(value, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
        } catch (const std::invalid_argument&) {
          // Beyond int64: out of the key's range, if it is a number at all.
          if (value.find_first_not_of(" -0123456789") == std::string::npos && !value.empty())
            throw bad(origin + " " + rangeText(k) + ", got " + value);
          throw;
        }
        if (v < k.min || v > k.max || (k.name == "pipeline.max-parallelism" && v == 0))
          throw bad(origin + " " + rangeText(k) + ", got " + value);
        return;
      }
      case Type::kDuration: {
        int64_t v = api::parseDuration(value).count();
        if (v < k.min || v > k.max) throw bad(origin + " " + rangeText(k) + ", got '" + value + "'");
        return;
      }
      case Type::kMemory: {
        int64_t v = api::parseMemorySize(value);
        if (v < k.min || v > k.max) throw bad(origin + " " + rangeText(k) + ", got '" + value + "'");
        return;
      }
      case Type::kDecimal: {
        double v = api::parseDecimal(value);
        if (v < k.dmin || v > k.dmax)
          throw bad(origin + " must be between " + CLI::detail::to_string(k.dmin) + " and " +
                    CLI::detail::to_string(k.dmax) + ", got " + value);
        return;
      }
      case Type::kBool: api::parseBoolean(value); return;
      case Type::kEnum: api::parseEnum(value, k.values); return;
      case Type::kString:
        if (value.empty()) throw bad(origin + " must not be empty");
        return;
    }
  } catch (const std::invalid_argument& e) {
    throw bad(origin + ": " + e.what());
  }
}

// A YAML document as key → value text: nested maps join their keys with '.'.
void flatten(const YAML::Node& node, const std::string& prefix, const std::string& where,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string name = entry.first.as<std::string>();
      flatten(entry.second, prefix.empty() ? name : prefix + "." + name, where, out);
    }
  } else if (node.IsScalar()) {
    out.emplace_back(prefix, node.Scalar());
  } else if (node.IsNull()) {
    if (!prefix.empty()) throw bad(prefix + " in " + where + " has no value");
  } else {
    throw bad(prefix + " in " + where + " is a list; weir's keys take one value");
  }
}

std::vector<std::pair<std::string, std::string>> readYaml(const std::string& text, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsNull() && !root.IsMap()) throw bad(where + " is not a map of keys to values");
    flatten(root, "", where, out);
  } catch (const YAML::Exception& e) {
    throw bad(where + ": " + e.what());
  }
  return out;
}

std::string readFile(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw bad(what + " '" + path + "' " + (std::filesystem::exists(path, ec) ? "is not a file" : "does not exist"));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw bad(what + " '" + path + "' cannot be read: " + std::strerror(errno));
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  return text;
}

// A command-line option of weir's that sets a key.
struct FlagBinding {
  std::string key;
  std::string flag;       // its long name, as messages show it
  bool boolean = false;   // a flag without a value
  std::string whenGiven;  // a flag's value
  CLI::Option* option = nullptr;
  std::string text;       // an option's value
};

// Accepts only whole numbers in range where CLI11 would round "1e20" or cap 2^63.
const CLI::Validator& wholeNumber() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        int64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc::result_out_of_range) return "'" + text + "' is out of range";
        if (ec != std::errc() || end != text.data() + text.size()) return "'" + text + "' is not a whole number";
        return {};
      },
      "", "whole number");
  return validator;
}

}  // namespace

struct JobOptions::Impl {
  struct Setting {
    std::string value;
    std::string origin;  // how messages name it: "--checkpoint-interval", "-D key", "key in FILE"
  };

  explicit Impl(std::string description) : app(std::move(description)) {
    app.set_help_flag("-h,--help", "Print this help and exit");
    weir = app.add_option_group("weir", "Options of the job (-D KEY=VALUE sets any configuration key)");
    bind("-p,--parallelism", "parallelism.default", "Default parallelism of the job's operators");
    bind("--max-parallelism", "pipeline.max-parallelism",
         "Number of key groups, at most 32768 (default: Flink's, min(max(2^ceil(log2(1.5 p)), 128), 32768) for the "
         "highest parallelism p, or a restored checkpoint's)");
    bind("--execution-mode", "execution.runtime-mode",
         "streaming (default), batch (bounded input, final results only; docs/batch.md) or automatic (batch when "
         "every source is bounded)");
    bind("--network-memory", "taskmanager.memory.network.max",
         "MiB all the job's channel buffers may take (default 512); a job whose channels cannot fit is refused at start");
    bind("--rest-port", "rest.port", "Port of the REST API and Web UI (default 8081; 0: any free port)");
    bind("--rest-address", "rest.bind-address", "Address the REST API listens on (default 127.0.0.1)");
    bindFlag("--no-rest", "weir.rest.enabled", "false", "Do not serve the REST API and Web UI");
    bind("--archive-dir", "jobmanager.archive.fs.dir",
         "Folder to archive the job's REST answers in when it ends, for `weir history`");
    bind("--rest-ssl-certificate", "weir.rest.ssl.certificate",
         "PEM certificate (chain) to serve the REST API over TLS with, beside --rest-ssl-private-key");
    bind("--rest-ssl-private-key", "weir.rest.ssl.private-key", "PEM private key of --rest-ssl-certificate");
    bind("--rest-token-file", "weir.rest.authentication.token-file",
         "File holding the token that cancelling, stopping and savepoints need (else $WEIR_REST_TOKEN; none: not asked)");
    bindFlag("--rest-insecure", "weir.rest.insecure", "true",
             "Allow a --rest-address beyond loopback without TLS and a token (anyone reaching it may cancel the job)");
    bind("--state-backend", "state.backend.type", "Where keyed state lives: hashmap (default; also heap) or rocksdb");
    bind("--rocksdb-local-dir", "state.backend.rocksdb.localdir",
         "Folder for RocksDB's files (default $TMPDIR or /tmp); each job makes its own folder in it");
    bindFlag("--incremental-checkpoints", "state.backend.incremental", "true",
             "With --state-backend rocksdb: checkpoints upload only the RocksDB files earlier ones did not");
    bind("--checkpoint-interval", "execution.checkpointing.interval",
         "Take a checkpoint every this long (ms, or with a unit: 10s; default: none)");
    bind("--checkpointing-mode", "execution.checkpointing.mode", "exactly-once (default) or at-least-once");
    bind("--checkpoint-dir", "state.checkpoints.dir", "Folder that keeps checkpoints (default: a temporary one)");
    bind("--checkpoint-timeout", "execution.checkpointing.timeout",
         "Discard a checkpoint not complete after this long (ms; default 600000)");
    bind("--min-pause", "execution.checkpointing.min-pause",
         "Least time between a checkpoint's end and the next's start (ms; default 0)");
    bind("--max-concurrent-checkpoints", "execution.checkpointing.max-concurrent-checkpoints",
         "Checkpoints in progress at once (default 1; a min pause implies 1)");
    bind("--tolerable-checkpoint-failures", "execution.checkpointing.tolerable-failed-checkpoints",
         "Failed checkpoints in a row before the job fails (default 0)");
    bind("--retained-checkpoints", "state.checkpoints.num-retained", "Completed checkpoints kept (default 1)");
    bindFlag("--retain-on-cancellation", "execution.checkpointing.externalized-checkpoint-retention",
             "RETAIN_ON_CANCELLATION", "Keep the checkpoints when the job is cancelled");
    bindFlag("--unaligned", "execution.checkpointing.unaligned", "true",
             "Unaligned checkpoints: barriers overtake records in flight (exactly-once)");
    bind("--aligned-checkpoint-timeout", "execution.checkpointing.aligned-checkpoint-timeout",
         "With --unaligned: start aligned, turn unaligned after this long (ms; default 0)");
    restartStrategy = weir->add_option(
        "--restart-strategy", restartSpec,
        "none | fixed-delay:ATTEMPTS:DELAY_MS | exponential-delay:INITIAL_MS:MAX_MS | "
        "failure-rate:MAX:INTERVAL_MS:DELAY_MS (default with checkpoints: exponential-delay:1000:60000, ending the job "
        "after 5 identical failures in a row)")->type_name("SPEC");
    bind("--restore", "weir.restore", "latest: resume from the newest checkpoint under --checkpoint-dir");
    bind("-s,--from-savepoint,--from-checkpoint", "execution.savepoint.path",
         "Resume from this savepoint or checkpoint (its folder or its _metadata)");
    bindFlag("-n,--allow-non-restored-state", "execution.savepoint.ignore-unclaimed-state", "true",
             "Resuming: leave behind the state of operators the job no longer has (by uid)");
    bind("--restore-mode", "execution.savepoint-restore-mode",
         "Resuming: no-claim (default: the snapshot stays yours) or claim (removed once the job's first checkpoint "
         "completes)");
    bind("--savepoint-dir", "state.savepoints.dir", "Where savepoints go when a request names no folder");
    configOption = weir->add_option("--config", configFile, "A YAML file of configuration keys (Flink's config.yaml)")
        ->type_name("FILE");
    weir->add_option("-D", dynamicProperties, "Sets a configuration key (repeatable; docs/configuration.md)")
        ->allow_extra_args(false)
        ->type_name("KEY=VALUE");
  }

  void bind(const std::string& names, const std::string& name, const std::string& help) {
    auto b = std::make_unique<FlagBinding>();
    b->key = name;
    b->option = weir->add_option(names, b->text, help);
    const Key& k = key(name);
    b->option->type_name(k.type == Type::kInt        ? "INT"
                         : k.type == Type::kDuration ? "MS"
                         : k.type == Type::kMemory   ? "MiB"
                         : k.type == Type::kEnum     ? "NAME"
                         : k.name == "rest.bind-address" ? "ADDRESS"
                                                     : "PATH");
    b->flag = b->option->get_name();
    flags.push_back(std::move(b));
  }
  void bindFlag(const std::string& names, const std::string& k, const std::string& value, const std::string& help) {
    auto b = std::make_unique<FlagBinding>();
    b->key = k;
    b->boolean = true;
    b->whenGiven = value;
    b->option = weir->add_flag(names, help)->disable_flag_override();
    b->flag = b->option->get_name();
    flags.push_back(std::move(b));
  }

  // Sets `name` (a key or an alias) from a source; throws naming the origin.
  void put(const std::string& name, const std::string& value, const std::string& origin, const std::string& where) {
    const Key* k = findKey(name);
    if (name == "rest.authentication.token" || name == "weir.rest.authentication.token")
      throw bad(name + " is not a key, so that no command line shows the token in ps: put it in a file named by "
                       "weir.rest.authentication.token-file, or in $WEIR_REST_TOKEN");
    if (k == nullptr) {
      std::string nearest;
      size_t best = 4;
      for (const auto& candidate : allKeys()) {
        const size_t d = editDistance(name, candidate.name);
        if (d < best) best = d, nearest = candidate.name;
      }
      throw bad("unknown configuration key '" + name + "'" + (where.empty() ? "" : " in " + where) +
                (nearest.empty() ? "" : "; did you mean '" + nearest + "'?") +
                " (docs/configuration.md lists the keys)");
    }
    validate(*k, value, origin);
    settings[k->name] = {value, origin};
    latestChecked = false;
    tokenFileChecked = false;
  }

  void putAll(const std::vector<std::pair<std::string, std::string>>& entries, const std::string& where) {
    for (const auto& [name, value] : entries) put(name, value, name + " in " + where, where);
  }

  // The restart strategy option's short form, as the keys it stands for.
  void putRestartSpec() {
    std::vector<std::string> parts;
    for (size_t from = 0;;) {
      size_t colon = restartSpec.find(':', from);
      parts.push_back(restartSpec.substr(from, colon == std::string::npos ? std::string::npos : colon - from));
      if (colon == std::string::npos) break;
      from = colon + 1;
    }
    const std::string& kind = parts[0];
    const std::string o = "--restart-strategy";
    auto field = [&](const char* k, size_t i) { put(k, parts[i], o + " (" + std::string(k) + ")", ""); };
    if (kind == "none" && parts.size() == 1) {
      put("restart-strategy.type", "none", o, "");
    } else if (kind == "fixed-delay" && parts.size() == 3) {
      put("restart-strategy.type", kind, o, "");
      field("restart-strategy.fixed-delay.attempts", 1);
      field("restart-strategy.fixed-delay.delay", 2);
    } else if (kind == "exponential-delay" && parts.size() == 3) {
      put("restart-strategy.type", kind, o, "");
      field("restart-strategy.exponential-delay.initial-backoff", 1);
      field("restart-strategy.exponential-delay.max-backoff", 2);
    } else if (kind == "failure-rate" && parts.size() == 4) {
      put("restart-strategy.type", kind, o, "");
      field("restart-strategy.failure-rate.max-failures-per-interval", 1);
      field("restart-strategy.failure-rate.failure-rate-interval", 2);
      field("restart-strategy.failure-rate.delay", 3);
    } else {
      throw bad("--restart-strategy '" + restartSpec + "' is not a restart strategy: none, fixed-delay:ATTEMPTS:DELAY_MS, "
                "exponential-delay:INITIAL_MS:MAX_MS or failure-rate:MAX:INTERVAL_MS:DELAY_MS");
    }
  }

  // Every source, weakest first.
  void collect() {
    settings.clear();
    if (const char* dir = std::getenv("WEIR_CONF_DIR"); dir != nullptr && *dir != '\0') {
      std::string path = std::string(dir) + "/config.yaml";
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) path = std::string(dir) + "/flink-conf.yaml";
      if (!std::filesystem::exists(path, ec))
        throw bad("WEIR_CONF_DIR is '" + std::string(dir) + "', but it holds no config.yaml (nor flink-conf.yaml)");
      putAll(readYaml(readFile(path, "configuration file"), path), path);
    }
    if (configOption->count() > 0) putAll(readYaml(readFile(configFile, "--config file"), configFile), configFile);
    if (const char* properties = std::getenv("WEIR_PROPERTIES"); properties != nullptr && *properties != '\0')
      putAll(readYaml(properties, "$WEIR_PROPERTIES"), "$WEIR_PROPERTIES");
    for (const auto& property : dynamicProperties) {
      const size_t eq = property.find('=');
      if (eq == std::string::npos || eq == 0) throw bad("-D '" + property + "' is not KEY=VALUE");
      const std::string name = property.substr(0, eq);
      put(name, property.substr(eq + 1), "-D " + name, "-D");
    }
    if (restartStrategy->count() > 0) putRestartSpec();
    for (const auto& b : flags) {
      if (b->option->count() == 0) continue;
      std::string value = b->boolean ? b->whenGiven : b->text;
      // --network-memory is in MiB; the key, a memory size.
      if (b->key == "taskmanager.memory.network.max" && !value.empty() &&
          value.find_first_not_of("0123456789") == std::string::npos)
        value += "m";
      put(b->key, value, b->flag, "");
    }
    for (const auto& [name, value, origin] : fromCode) put(name, value, origin, "");
  }

  const Setting* find(const std::string& name) const {
    auto it = settings.find(key(name).name);
    return it == settings.end() ? nullptr : &it->second;
  }
  bool given(const std::string& name) const { return find(name) != nullptr; }
  // How a message names a key: where it was set, else its option (or the key).
  std::string nameOf(const std::string& name) const {
    if (const Setting* s = find(name)) return s->origin;
    const Key& k = key(name);
    return k.flag.empty() ? k.name : k.flag;
  }

  // The value of `name` as `parse` reads it; nullopt when unset.
  template <class Parse>
  auto read(const std::string& name, Parse parse) const -> std::optional<decltype(parse(std::string()))> {
    const Setting* s = find(name);
    if (s == nullptr) return std::nullopt;
    return parse(s->value);
  }
  std::optional<int64_t> integer(const std::string& name) const {
    return read(name, [](const std::string& v) {
      return api::parseWholeNumber(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    });
  }
  std::optional<Millis> duration(const std::string& name) const { return read(name, api::parseDuration); }
  std::optional<int64_t> memory(const std::string& name) const { return read(name, api::parseMemorySize); }
  std::optional<double> decimal(const std::string& name) const { return read(name, api::parseDecimal); }
  std::optional<bool> boolean(const std::string& name) const { return read(name, api::parseBoolean); }
  std::optional<std::string> choice(const std::string& name) const {
    return read(name, [&](const std::string& v) { return api::parseEnum(v, key(name).values); });
  }
  std::optional<std::string> text(const std::string& name) const {
    return read(name, [](const std::string& v) { return v; });
  }

  // Whether `name` was set on the command line (an option or -D) or by the program: a
  // setting there that has no effect without another is a mistake worth an error; one in
  // a configuration file, which may serve other jobs too, is ignored as Flink does.
  bool explicitlySet(const std::string& name) const {
    const Setting* s = find(name);
    return s != nullptr && s->origin.find(" in ") == std::string::npos;
  }

  bool rocksdb() const {
    auto type = choice("state.backend.type");
    return type && *type == "ROCKSDB";
  }

  // The REST token: the first line of weir.rest.authentication.token-file, else
  // $WEIR_REST_TOKEN, else none.
  std::string restToken() const {
    if (auto file = text("weir.rest.authentication.token-file")) {
      auto token = core::readSecretFile(*file);
      if (!token) throw bad(nameOf("weir.rest.authentication.token-file") + " '" + *file + "' cannot be read");
      if (token->empty()) throw bad(nameOf("weir.rest.authentication.token-file") + " '" + *file + "' holds no token");
      return *token;
    }
    return core::readSecretEnvironment("WEIR_REST_TOKEN");
  }

  // Checks the settings together, and finds the checkpoint `--restore latest` means.
  void check() {
    if (choice("execution.runtime-mode") == "BATCH")
      for (const auto& k : allKeys())
        if ((k.name.starts_with("execution.checkpointing.") || k.name.starts_with("state.checkpoints.") ||
             k.name == "weir.restore" || k.name == "execution.savepoint.path") &&
            explicitlySet(k.name))
          throw bad(nameOf("execution.runtime-mode") + " batch takes no checkpoints and starts from scratch, but " +
                    nameOf(k.name) + " is given");
    if (auto p = integer("parallelism.default"), m = integer("pipeline.max-parallelism"); p && m && *m > 0 && *p > *m)
      throw bad(nameOf("parallelism.default") + " must be between 1 and the max parallelism (" + std::to_string(*m) +
                "), got " + std::to_string(*p));
    if (boolean("execution.checkpointing.unaligned").value_or(false) &&
        choice("execution.checkpointing.mode").value_or("EXACTLY_ONCE") != "EXACTLY_ONCE" &&
        (explicitlySet("execution.checkpointing.unaligned") || explicitlySet("execution.checkpointing.mode")))
      throw bad(nameOf("execution.checkpointing.unaligned") + " needs " + nameOf("execution.checkpointing.mode") +
                " exactly-once");
    if (explicitlySet("execution.checkpointing.aligned-checkpoint-timeout") &&
        !boolean("execution.checkpointing.unaligned").value_or(false))
      throw bad(nameOf("execution.checkpointing.aligned-checkpoint-timeout") + " needs " +
                nameOf("execution.checkpointing.unaligned"));
    for (const char* rocksKey : {"state.backend.incremental", "state.backend.rocksdb.localdir",
                                 "state.backend.rocksdb.block.cache-size", "state.backend.rocksdb.memory.write-buffer-ratio",
                                 "state.backend.rocksdb.writebuffer.size", "state.backend.rocksdb.writebuffer.count",
                                 "state.backend.rocksdb.compaction.style"})
      if (explicitlySet(rocksKey) && !rocksdb()) throw bad(nameOf(rocksKey) + " needs " + nameOf("state.backend.type") + " rocksdb");
    for (const auto& [name, setting] : settings)
      if (name.starts_with(kNativeMetricPrefix) && explicitlySet(name) && !rocksdb())
        throw bad(nameOf(name) + " needs " + nameOf("state.backend.type") + " rocksdb");
    if (auto dir = text("state.backend.rocksdb.localdir")) {
      std::error_code ec;
      if (!std::filesystem::is_directory(*dir, ec))
        throw bad(nameOf("state.backend.rocksdb.localdir") + " '" + *dir + "' " +
                  (std::filesystem::exists(*dir, ec) ? "is not a folder" : "does not exist"));
    }
    if (auto type = choice("restart-strategy.type"); type && (*type == "EXPONENTIAL_DELAY" || *type == "EXPONENTIALDELAY")) {
      const Millis initial = duration("restart-strategy.exponential-delay.initial-backoff").value_or(Millis(1000));
      const Millis max = duration("restart-strategy.exponential-delay.max-backoff").value_or(Millis(60000));
      if (max < initial)
        throw bad(nameOf("restart-strategy.exponential-delay.max-backoff") + " (" + std::to_string(max.count()) +
                  " ms) must not be below " + nameOf("restart-strategy.exponential-delay.initial-backoff") + " (" +
                  std::to_string(initial.count()) + " ms)");
    }
    if (given("weir.rest.ssl.certificate") != given("weir.rest.ssl.private-key"))
      throw bad(nameOf(given("weir.rest.ssl.certificate") ? "weir.rest.ssl.certificate"
                                                               : "weir.rest.ssl.private-key") +
                " needs " +
                nameOf(given("weir.rest.ssl.certificate") ? "weir.rest.ssl.private-key"
                                                               : "weir.rest.ssl.certificate"));
    restToken();  // a token file that cannot be read, or is empty, fails here
    if (auto file = text("weir.rest.authentication.token-file"); file && !tokenFileChecked) {
      if (auto open = core::secretFileExposure(*file))
        std::fprintf(stderr, "%s: warning: %s '%s' %s\n", programName.c_str(),
                     nameOf("weir.rest.authentication.token-file").c_str(), file->c_str(), open->c_str());
      tokenFileChecked = true;
    }
    const bool latest = given("weir.restore");
    if (latest && given("execution.savepoint.path"))
      throw bad("use " + nameOf("weir.restore") + " or " + nameOf("execution.savepoint.path") + ", not both");
    if (!latest && !given("execution.savepoint.path") &&
        (explicitlySet("execution.savepoint.ignore-unclaimed-state") ||
         explicitlySet("execution.savepoint-restore-mode")))
      throw bad(nameOf(given("execution.savepoint-restore-mode") ? "execution.savepoint-restore-mode"
                                                                  : "execution.savepoint.ignore-unclaimed-state") +
                " needs a snapshot to resume from (" + nameOf("execution.savepoint.path") + " PATH)");
    if (latest && !latestChecked) {
      auto dir = text("state.checkpoints.dir");
      if (!dir)
        throw bad(nameOf("weir.restore") + " latest needs " + nameOf("state.checkpoints.dir") +
                  ", where it looks for checkpoints");
      latestPath = checkpoint::findLatestCheckpoint(*dir);
      if (latestPath.empty())
        std::fprintf(stderr, "%s: no checkpoint under '%s' yet; starting from the beginning\n", programName.c_str(),
                     dir->c_str());
      else
        std::fprintf(stderr, "%s: resuming from checkpoint '%s'\n", programName.c_str(), latestPath.c_str());
      latestChecked = true;
    }
  }

  RestartStrategy restartStrategyOf() const {
    auto type = choice("restart-strategy.type");
    if (!type) return RestartStrategy::fallback().stopAfterIdenticalFailures(5);
    auto ms = [&](const char* k, Millis fallback) { return duration(k).value_or(fallback); };
    if (*type == "NONE" || *type == "OFF" || *type == "DISABLE") return RestartStrategy::noRestart();
    if (*type == "FIXED_DELAY" || *type == "FIXEDDELAY")
      return RestartStrategy::fixedDelayRestart(static_cast<int>(integer("restart-strategy.fixed-delay.attempts").value_or(1)),
                                                ms("restart-strategy.fixed-delay.delay", Millis(1000)));
    if (*type == "FAILURE_RATE" || *type == "FAILURERATE")
      return RestartStrategy::failureRateRestart(
          static_cast<int>(integer("restart-strategy.failure-rate.max-failures-per-interval").value_or(1)),
          ms("restart-strategy.failure-rate.failure-rate-interval", Millis(60000)),
          ms("restart-strategy.failure-rate.delay", Millis(1000)));
    return RestartStrategy::exponentialDelayRestart(
        ms("restart-strategy.exponential-delay.initial-backoff", Millis(1000)),
        ms("restart-strategy.exponential-delay.max-backoff", Millis(60000)),
        decimal("restart-strategy.exponential-delay.backoff-multiplier").value_or(1.5),
        ms("restart-strategy.exponential-delay.reset-backoff-threshold", Millis(3600000)),
        decimal("restart-strategy.exponential-delay.jitter-factor").value_or(0.1));
  }

  CLI::App app;
  CLI::Option_group* weir = nullptr;
  std::vector<std::unique_ptr<FlagBinding>> flags;
  CLI::Option* restartStrategy = nullptr;
  CLI::Option* configOption = nullptr;
  std::string restartSpec;
  std::string configFile;
  std::vector<std::string> dynamicProperties;
  std::vector<std::tuple<std::string, std::string, std::string>> fromCode;  // set(), loadConfigFile(): name, value, origin
  std::map<std::string, Setting> settings;                    // by the key's name
  std::string programName = "weir";
  bool programNamed = false;
  bool latestChecked = false;
  bool tokenFileChecked = false;  // its permissions were judged
  std::string latestPath;
};

JobOptions::JobOptions(std::string description) : impl_(std::make_unique<Impl>(std::move(description))) {}
JobOptions::JobOptions(JobOptions&&) noexcept = default;
JobOptions& JobOptions::operator=(JobOptions&&) noexcept = default;
JobOptions::~JobOptions() = default;

JobOptions JobOptions::parse(int argc, const char* const* argv) {
  JobOptions options;
  options.parseArgs(argc, argv);
  return options;
}

JobOptions::Option& JobOptions::Option::required() {
  static_cast<CLI::Option*>(option_)->required();
  return *this;
}

namespace {
// Adds one of the program's options; a name weir's options (or the program's) already
// use is a weir::Error naming it.
template <class Add>
CLI::Option* addUserOption(CLI::App& weirs, const std::string& names, Add add) {
  auto taken = [&] {
    throw bad("the option '" + names + "' takes a name that is already used (weir's options are -p, -s, -n, -D, -h and "
              "those --help lists)");
  };
  for (size_t from = 0; from <= names.size();) {
    size_t comma = names.find(',', from);
    if (comma == std::string::npos) comma = names.size();
    const std::string name = names.substr(from, comma - from);
    if (!name.empty() && (weirs.get_option_no_throw(name) != nullptr || name == "-h" || name == "--help")) taken();
    from = comma + 1;
  }
  try {
    return add();
  } catch (const CLI::OptionAlreadyAdded&) {
    taken();
  }
  return nullptr;
}
}  // namespace

JobOptions::Option JobOptions::addOption(const std::string& names, std::string& value, const std::string& help) {
  return Option(addUserOption(*impl_->weir, names, [&] { return impl_->app.add_option(names, value, help); }));
}
JobOptions::Option JobOptions::addOption(const std::string& names, int& value, const std::string& help) {
  return Option(addUserOption(*impl_->weir, names, [&] { return impl_->app.add_option(names, value, help)->check(wholeNumber()); }));
}
JobOptions::Option JobOptions::addOption(const std::string& names, int64_t& value, const std::string& help) {
  return Option(addUserOption(*impl_->weir, names, [&] { return impl_->app.add_option(names, value, help)->check(wholeNumber()); }));
}
JobOptions::Option JobOptions::addOption(const std::string& names, double& value, const std::string& help) {
  return Option(addUserOption(*impl_->weir, names, [&] { return impl_->app.add_option(names, value, help); }));
}
JobOptions::Option JobOptions::addOption(const std::string& names, std::vector<std::string>& values,
                                         const std::string& help) {
  return Option(addUserOption(*impl_->weir, names, [&] { return impl_->app.add_option(names, values, help); }));
}
JobOptions::Option JobOptions::addFlag(const std::string& names, bool& value, const std::string& help) {
  return Option(addUserOption(*impl_->weir, names, [&] { return impl_->app.add_flag(names, value, help); }));
}

JobOptions& JobOptions::setProgramName(std::string name) {
  impl_->programName = std::move(name);
  impl_->programNamed = true;
  return *this;
}

bool JobOptions::tryParseArgs(int argc, const char* const* argv) {
  // The usage line shows argv[0]; messages start with the program's name.
  const std::string invoked = argc > 0 && argv[0] != nullptr ? std::filesystem::path(argv[0]).filename().string() : "";
  if (!impl_->programNamed && !invoked.empty()) impl_->programName = invoked;
  impl_->app.name(invoked.empty() ? impl_->programName : invoked);
  try {
    if (argc < 1) impl_->app.parse(std::vector<std::string>{});
    else impl_->app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(impl_->app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    throw bad(what.empty() ? "bad command line" : what);
  }
  impl_->collect();
  impl_->check();
  return true;
}

void JobOptions::parseArgs(int argc, const char* const* argv) {
  try {
    if (!tryParseArgs(argc, argv)) std::exit(0);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", impl_->programName.c_str(), e.what());
    std::exit(2);
  }
}

JobOptions& JobOptions::set(const std::string& name, const std::string& value) {
  impl_->put(name, value, name, "");
  impl_->fromCode.emplace_back(name, value, name);
  return *this;
}

JobOptions& JobOptions::loadConfigFile(const std::string& path) {
  for (const auto& [name, value] : readYaml(readFile(path, "configuration file"), path)) {
    impl_->put(name, value, name + " in " + path, path);
    impl_->fromCode.emplace_back(name, value, name + " in " + path);
  }
  return *this;
}

std::optional<std::string> JobOptions::get(const std::string& name) const {
  if (findKey(name) == nullptr) return std::nullopt;
  return impl_->text(name);
}

std::vector<std::string> JobOptions::keys() {
  std::vector<std::string> out;
  for (const auto& k : allKeys()) out.push_back(k.name);
  return out;
}

int JobOptions::parallelism() const { return static_cast<int>(impl_->integer("parallelism.default").value_or(0)); }

bool JobOptions::restores() const {
  return impl_->given("execution.savepoint.path") || (impl_->given("weir.restore") && !impl_->latestPath.empty());
}

void JobOptions::applyTo(StreamExecutionEnvironment& env) const {
  Impl& o = *impl_;
  o.check();
  if (auto v = o.integer("pipeline.max-parallelism"); v && *v > 0) env.setMaxParallelism(static_cast<int>(*v));
  if (auto v = o.integer("parallelism.default")) env.setParallelism(static_cast<int>(*v));
  if (auto v = o.memory("taskmanager.memory.network.max")) env.setNetworkMemory(*v);
  if (auto v = o.integer("taskmanager.network.memory.buffers-per-channel")) env.setBuffersPerChannel(static_cast<int>(*v));
  if (auto v = o.duration("execution.buffer-timeout")) env.setBufferTimeout(*v);
  if (auto v = o.duration("pipeline.auto-watermark-interval")) env.setAutoWatermarkInterval(*v);
  if (!o.boolean("pipeline.auto-generate-uids").value_or(true)) env.getConfig().disableAutoGeneratedUIDs();

  RestOptions rest = env.getRestOptions();
  rest.enabled = o.boolean("weir.rest.enabled").value_or(true);
  if (auto v = o.integer("rest.port")) rest.port = static_cast<int>(*v);
  if (auto v = o.text("rest.bind-address")) rest.address = *v;
  if (auto v = o.text("jobmanager.archive.fs.dir")) rest.archiveDir = *v;
  if (auto v = o.choice("weir.metrics.prometheus.prefix")) rest.prometheusPrefix = *v == "FLINK" ? "flink" : "weir";
  if (auto v = o.text("weir.rest.ssl.certificate")) rest.sslCertificate = *v;
  if (auto v = o.text("weir.rest.ssl.private-key")) rest.sslPrivateKey = *v;
  rest.authenticationToken = o.restToken();
  rest.insecure = o.boolean("weir.rest.insecure").value_or(false);
  env.setRestOptions(rest);

  if (o.rocksdb()) {
    EmbeddedRocksDBStateBackend::Options rocks;
    rocks.localDirectory = o.text("state.backend.rocksdb.localdir").value_or("");
    rocks.incrementalCheckpoints = o.boolean("state.backend.incremental").value_or(false);
    rocks.blockCacheSize = o.memory("state.backend.rocksdb.block.cache-size").value_or(rocks.blockCacheSize);
    rocks.writeBufferRatio = o.decimal("state.backend.rocksdb.memory.write-buffer-ratio").value_or(rocks.writeBufferRatio);
    rocks.writeBufferSize = o.memory("state.backend.rocksdb.writebuffer.size").value_or(rocks.writeBufferSize);
    rocks.maxWriteBufferNumber =
        static_cast<int>(o.integer("state.backend.rocksdb.writebuffer.count").value_or(rocks.maxWriteBufferNumber));
    if (o.choice("state.backend.rocksdb.compaction.style").value_or("LEVEL") == "UNIVERSAL")
      rocks.compactionStyle = EmbeddedRocksDBStateBackend::CompactionStyle::UNIVERSAL;
    for (const auto& name : EmbeddedRocksDBStateBackend::nativeMetricNames())
      if (o.boolean(kNativeMetricPrefix + name).value_or(false)) rocks.nativeMetrics.push_back(name);
    rocks.metricsColumnFamilyAsVariable =
        o.boolean(std::string(kNativeMetricPrefix) + "column-family-as-variable").value_or(false);
    env.setStateBackend(std::make_shared<EmbeddedRocksDBStateBackend>(rocks));
  } else if (o.given("state.backend.type")) {
    env.setStateBackend(std::make_shared<HashMapStateBackend>());
  }

  if (auto v = o.memory("execution.sorted-inputs.memory")) env.setSortedInputsMemory(*v);
  if (auto v = o.choice("execution.batch-shuffle-mode"))
    env.setBatchShuffleMode(*v == "ALL_EXCHANGES_PIPELINED" ? BatchShuffleMode::ALL_EXCHANGES_PIPELINED
                                                            : BatchShuffleMode::ALL_EXCHANGES_BLOCKING);
  if (auto v = o.memory("weir.batch-shuffle.memory")) env.setBatchShuffleMemory(*v);
  if (auto v = o.text("io.tmp.dirs")) env.setTmpDirectory(v->substr(0, v->find_first_of(",:")));  // the first
  if (auto v = o.choice("execution.runtime-mode"))
    env.setRuntimeMode(*v == "BATCH" ? RuntimeExecutionMode::BATCH
                                     : *v == "AUTOMATIC" ? RuntimeExecutionMode::AUTOMATIC : RuntimeExecutionMode::STREAMING);
  // A configuration file's checkpoint interval is for its streaming jobs: one that runs
  // in BATCH leaves it out (check() refused one given to this job explicitly).
  CheckpointConfig& c = env.getCheckpointConfig();
  if (auto v = o.duration("execution.checkpointing.interval")) {
    if (o.explicitlySet("execution.checkpointing.interval")) c.setCheckpointInterval(*v);
    else c.setCheckpointIntervalForStreaming(*v);
  }
  if (auto v = o.choice("execution.checkpointing.mode"))
    c.setCheckpointingMode(*v == "AT_LEAST_ONCE" ? CheckpointingMode::AT_LEAST_ONCE : CheckpointingMode::EXACTLY_ONCE);
  if (auto v = o.duration("execution.checkpointing.timeout")) c.setCheckpointTimeout(*v);
  if (auto v = o.duration("execution.checkpointing.min-pause")) c.setMinPauseBetweenCheckpoints(*v);
  if (auto v = o.integer("execution.checkpointing.max-concurrent-checkpoints"))
    c.setMaxConcurrentCheckpoints(static_cast<int>(*v));
  if (auto v = o.integer("execution.checkpointing.tolerable-failed-checkpoints"))
    c.setTolerableCheckpointFailureNumber(static_cast<int>(*v));
  if (auto v = o.integer("state.checkpoints.num-retained")) c.setNumRetainedCheckpoints(static_cast<int>(*v));
  if (auto v = o.choice("execution.checkpointing.externalized-checkpoint-retention"))
    c.setExternalizedCheckpointCleanup(*v == "RETAIN_ON_CANCELLATION" ? ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION
                                                                      : ExternalizedCheckpointCleanup::DELETE_ON_CANCELLATION);
  if (auto v = o.boolean("execution.checkpointing.unaligned")) c.enableUnalignedCheckpoints(*v);
  if (auto v = o.duration("execution.checkpointing.aligned-checkpoint-timeout")) c.setAlignedCheckpointTimeout(*v);
  if (auto v = o.text("state.checkpoints.dir")) c.setCheckpointStorage(*v);
  if (auto v = o.text("state.savepoints.dir")) c.setDefaultSavepointDirectory(*v);

  env.setRestartStrategy(o.restartStrategyOf());

  const std::string path = o.given("weir.restore") ? o.latestPath : o.text("execution.savepoint.path").value_or("");
  if (!path.empty())
    env.setSavepointRestoreSettings(SavepointRestoreSettings::forPath(
        path, o.boolean("execution.savepoint.ignore-unclaimed-state").value_or(false),
        o.choice("execution.savepoint-restore-mode").value_or("NO_CLAIM") == "CLAIM" ? RestoreMode::CLAIM
                                                                                      : RestoreMode::NO_CLAIM));
  env.getConfig().setJobBanner(true);
}

}  // namespace weir

// Here rather than in stream_execution_environment.cc: the environment's own file needs
// no command line.
weir::StreamExecutionEnvironment weir::StreamExecutionEnvironment::fromArgs(int argc, const char* const* argv) {
  StreamExecutionEnvironment env;
  JobOptions::parse(argc, argv).applyTo(env);
  return env;
}
