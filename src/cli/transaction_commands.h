// `weir transactions list|abort CHECKPOINT_DIR`: the transactions an exactly-once sink
// of a stopped job left open, shown and resolved.
#pragma once

#include <string>
#include <vector>

namespace weir::cli {

// Prints the Kafka transactions under `checkpointDir` that are not settled (open or
// committing), or with `all` every one the sinks still keep a marker of. Exit code 0, 1
// when a marker cannot be read, 2 when `checkpointDir` is not a folder.
int listTransactions(const std::string& checkpointDir, bool all);

// Aborts on `bootstrapServers` the transactions `ids` (none: every open one) under
// `checkpointDir`. Exit code 0 when all were aborted, 1 when one could not be, 2 when
// `checkpointDir` is not a folder or an id is not there or already settled.
int abortTransactions(const std::string& checkpointDir, const std::string& bootstrapServers,
                      const std::vector<std::string>& ids);

}  // namespace weir::cli
