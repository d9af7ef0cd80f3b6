// Benchmarks of keyed state on the heap and RocksDB backends.
#pragma once

namespace weir::bench {

// ValueState read + update per record (`value_state`).
void valueState(int runs);
// MapState put + get (`map_state`) and ListState add and get (`list_state`).
void mapState(int runs);
void listState(int runs);
// Peak RSS of a job keeping 100 bytes for each of 10 million keys (`state_memory`), in a
// child process per backend; runs once.
void stateMemory(int runs);

}  // namespace weir::bench
