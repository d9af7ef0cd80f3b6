// The RocksDB options an EmbeddedRocksDBStateBackend opens its databases with; the
// benchmarks open their raw-RocksDB baseline with the same ones.
#pragma once

#include <rocksdb/options.h>

#include "weir/state_backend.h"

namespace weir::state {

struct RocksDBOptions {
  rocksdb::DBOptions db;
  rocksdb::ColumnFamilyOptions column;  // of every state's column family
};

// Options drawing on the process-wide block cache. Throws weir::Error for bad values.
RocksDBOptions rocksDBOptions(const EmbeddedRocksDBStateBackend::Options& options);

}  // namespace weir::state
