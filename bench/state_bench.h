// Benchmarks of keyed state on the heap and RocksDB backends.
#pragma once

namespace weir::bench {

// ValueState read + update per record (`value_state`).
void valueState(int runs);

}  // namespace weir::bench
