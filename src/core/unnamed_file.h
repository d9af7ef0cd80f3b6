// A file without a name, for data a job spills to local disk and reads back itself
// (sorted runs, blocking partitions): it has no path, so nothing is left behind when the
// process ends or dies (on a file system without unnamed files, it has a name for the
// moment between its creation and its unlink).
#pragma once

#include <string>
#include <system_error>

namespace weir::core {

// Opens a new, empty file without a name in `directory` for reading and writing
// (O_TMPFILE; on a file system without unnamed files, a named one unlinked at once).
// Returns its descriptor, which the caller closes; -1 with `ec` set when it cannot.
int openUnnamedFile(const std::string& directory, std::error_code& ec);

}  // namespace weir::core
