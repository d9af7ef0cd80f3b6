// `weir transactions list|abort|commit`: the transactions an exactly-once sink of a
// stopped job left open (Kafka's under its checkpoint directory, PostgreSQL's prepared
// on the server), shown and resolved.
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

// Prints the prepared transactions on the PostgreSQL server `connection` whose ids start
// with `prefix` (all when empty). Exit code 0, 1 when the server cannot be asked.
int listPostgresTransactions(const std::string& connection, const std::string& prefix);

// COMMIT PREPARED (`commit`) or ROLLBACK PREPARED the transactions `ids`, or with none,
// every one whose id starts with `prefix` (which is then required). Exit code 0 when all
// were resolved, 1 when one could not be, 2 when an id is not prepared there or neither
// ids nor a prefix were given.
int resolvePostgresTransactions(const std::string& connection, const std::vector<std::string>& ids,
                                const std::string& prefix, bool commit);

}  // namespace weir::cli
