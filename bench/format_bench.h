// Benchmarks of source formats.
#pragma once

namespace weir::bench {

// FileSource reading JSON Lines (`json_decode`) and CSV (`csv_decode`) records into a
// struct, against a plain loop that reads the same file line by line and makes the same
// library calls (nlohmann-json's parse and get; weir's CSV split and from_chars).
void jsonDecode(int runs);
void csvDecode(int runs);

}  // namespace weir::bench
