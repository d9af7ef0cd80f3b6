// State backends: where keyed state lives. Chosen per job with
// env.setStateBackend(...) or `weir run --state-backend heap|rocksdb`; the heap is the
// default. Both behave the same to a function; they differ in speed and memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weir {

class StateBackend {
 public:
  virtual ~StateBackend() = default;
  // "hashmap" or "rocksdb", as Flink names them.
  virtual std::string getName() const = 0;
};

// Keeps state as live objects in hash tables on the heap: the fastest backend, bounded
// by memory.
class HashMapStateBackend final : public StateBackend {
 public:
  std::string getName() const override { return "hashmap"; }
};

// Keeps state in an embedded RocksDB instance per keyed operator subtask (Debian's
// librocksdb): state larger than memory spills to local disk. Every instance in the
// process shares one block cache, which also accounts for the write buffers, so
// `blockCacheSize` bounds RocksDB's memory in the whole process.
class EmbeddedRocksDBStateBackend final : public StateBackend {
 public:
  enum class CompactionStyle { LEVEL, UNIVERSAL };

  struct Options {
    // Folder under which each instance makes its own folder, removed on shutdown.
    // Empty (the default): $TMPDIR, or /tmp. The folder must exist.
    std::string localDirectory;
    // The process-wide block cache, in bytes: the memory budget of all instances.
    // The first instance to open sizes it; it lives while any instance does.
    // Default 256 MiB.
    int64_t blockCacheSize = 256ll << 20;
    // Share of the budget that write buffers (memtables) may take. Default 0.5.
    double writeBufferRatio = 0.5;
    // Size of one write buffer (memtable) per state, in bytes. Default 64 MiB.
    int64_t writeBufferSize = 64ll << 20;
    // Write buffers per state before writes stall on flushes. Default 2.
    int maxWriteBufferNumber = 2;
    // Default LEVEL.
    CompactionStyle compactionStyle = CompactionStyle::LEVEL;
    // Incremental checkpoints: each checkpoint is RocksDB's own files, and uploads only
    // the SST files that earlier retained checkpoints did not already store in the
    // checkpoint directory's shared/ folder. Off (the default): each checkpoint writes
    // every entry. Also `weir run --incremental-checkpoints`.
    bool incrementalCheckpoints = false;
    // RocksDB's own figures to show as gauges of each keyed operator, one per state
    // (column family): `<operator>.<state>.rocksdb.<name>`, names as Flink's
    // state.backend.rocksdb.metrics.<name> keys give them ("estimate-num-keys",
    // "block-cache-usage"; nativeMetricNames() lists them). Each costs a property read
    // per metrics sample. Default: none.
    std::vector<std::string> nativeMetrics;
    // Shows the state as the variable column_family (a Prometheus label) instead of a
    // group in each name (Flink's state.backend.rocksdb.metrics.column-family-as-variable).
    // Default false.
    bool metricsColumnFamilyAsVariable = false;
  };

  EmbeddedRocksDBStateBackend() = default;
  // Throws weir::Error (kInvalidArgument) for a native metric it does not know.
  explicit EmbeddedRocksDBStateBackend(Options options);
  // The RocksDB properties Options::nativeMetrics may name.
  static const std::vector<std::string>& nativeMetricNames();
  // Flink's constructor: default options, incremental checkpoints on or off.
  explicit EmbeddedRocksDBStateBackend(bool enableIncrementalCheckpointing) {
    options_.incrementalCheckpoints = enableIncrementalCheckpointing;
  }
  std::string getName() const override { return "rocksdb"; }
  const Options& options() const { return options_; }
  bool isIncrementalCheckpointsEnabled() const { return options_.incrementalCheckpoints; }

 private:
  Options options_;
};

// The backend named `name`: "heap" or "hashmap", or "rocksdb" (with default options).
// Throws weir::Error for any other name.
std::shared_ptr<StateBackend> stateBackendFromName(std::string_view name);

}  // namespace weir
