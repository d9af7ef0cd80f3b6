// Benchmarks of sinks.
#pragma once

namespace weir::bench {

// FileSink (row format, SimpleStringEncoder, a checkpoint every second) against writing
// the same lines with fwrite in a plain loop (`file_sink`).
void fileSink(int runs);

}  // namespace weir::bench
