// Errors that end a task or a job. One model for all of weir: see docs/errors.md.
#pragma once

#include <stdexcept>
#include <string>

namespace weir {

// What kind of failure an Error is; callers branch on this, never on the text.
enum class ErrorCode {
  kInvalidArgument,   // a bad option or configuration, found before the job runs
  kInvalidJob,        // a job graph that cannot run (e.g. forward between unequal parallelism)
  kIo,                // a file or socket that cannot be read or written
  kSerialization,     // bytes that do not decode as the expected type
  kUserFunction,      // a user function threw while processing
  kState,             // state misused (wrong context, conflicting types) or unreadable
  kCheckpoint,        // a checkpoint that cannot be written or restored (missing, corrupt)
  kCancelled,         // the job was cancelled
  kInternal,          // a broken invariant inside weir
};

// The base of every exception weir throws. The message is one line: what, where, and
// what to do.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Bytes that do not decode as the expected type (truncated, corrupt or another schema).
class SerializationError : public Error {
 public:
  explicit SerializationError(const std::string& message)
      : Error(ErrorCode::kSerialization, message) {}
};

}  // namespace weir
