// Benchmarks of checkpoints.
#pragma once

namespace weir::bench {

// Duration (synchronous part, asynchronous part, alignment) and size of a checkpoint of
// keyed state of about 10 MB and 100 MB (1 GB with WEIR_BENCH_LARGE=1), heap and
// RocksDB (`checkpoint_size`).
void checkpointSize(int runs);
// keyed_sum's throughput with a checkpoint every second against none
// (`checkpoint_overhead`).
void checkpointOverhead(int runs);

// Time from a failure to every subtask running again with its state restored, for keyed
// state of 100 MB (1 GB with WEIR_BENCH_LARGE=1), heap and RocksDB (`recovery`).
void recovery(int runs);

// Resuming a retained checkpoint of the same state taken at parallelism 1 at parallelism
// 2: time until both keyed subtasks are open with their state, and the peak RSS the
// restore added, heap and RocksDB (`rescale`).
void rescale(int runs);

// Stop-with-savepoint of the same state (1 M keys of 100 bytes; 10 M with
// WEIR_BENCH_LARGE=1) beside a full checkpoint of it in the same run, canonical on the
// heap and RocksDB and native on RocksDB: seconds, bytes, and the time to resume from it
// at parallelism 1 and 2 (`savepoint`).
void savepoint(int runs);

// Checkpoint duration under back-pressure (a sink that takes 5 us per record), aligned
// against unaligned (`alignment`).
void alignment(int runs);

}  // namespace weir::bench
