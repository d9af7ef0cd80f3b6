// Ctrl-C and SIGTERM for `weir run`: the running job is cancelled and closes its
// operators, instead of the process dying mid-write.
#pragma once

#include "weir/job_client.h"

namespace weir::cli {

// Blocks SIGINT and SIGTERM in every thread and starts the thread that waits for them.
// Call first thing in main(), before any other thread exists.
void installInterruptHandler();

// What the first signal is said to do, on stderr: "cancelling the job" unless a command
// that runs no job (weir history) says otherwise before any signal can come.
void setInterruptAction(const char* action);

// The job that a signal cancels (one at a time).
void cancelOnInterrupt(const JobClient& client);

// Whether a signal asked to stop; `weir run` then exits with 130.
bool interrupted();

}  // namespace weir::cli
