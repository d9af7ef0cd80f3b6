// The second phase of a two-phase-commit sink (Flink's Sink V2 Committer): after a
// checkpoint completes, the committables its writers prepared are committed.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir {

// One committable to commit, and how the attempt ended. A committer that says nothing
// about a request has committed it. Commits must be idempotent: after a failure the
// committables of the restored checkpoint are committed again, and some of them may
// have been committed before.
template <class CommT>
class CommitRequest {
 public:
  enum class Outcome {
    kCommitted,         // done now
    kAlreadyCommitted,  // done before (a commit repeated after a restore)
    kRetryLater,        // not now: tried again at the next completed checkpoint
    kFailedKnownReason,    // cannot be committed and is dropped; the job goes on (stderr says so)
    kFailedUnknownReason,  // cannot be committed; the job fails
  };

  explicit CommitRequest(CommT committable, int retries = 0)
      : committable_(std::move(committable)), retries_(retries) {}

  const CommT& getCommittable() const { return committable_; }
  // How often this committable was retried (retryLater) before.
  int getNumberOfRetries() const { return retries_; }

  // The committable cannot be committed, for a reason the sink understands (the
  // transaction expired, say): it is dropped, and the job goes on.
  void signalFailedWithKnownReason(std::string_view reason) { end(Outcome::kFailedKnownReason, reason); }
  // The committable cannot be committed, and the job must not go on: it fails, naming
  // the sink and `reason`, and restarts from its latest checkpoint as its restart
  // strategy allows.
  void signalFailedWithUnknownReason(std::string_view reason) { end(Outcome::kFailedUnknownReason, reason); }
  // Not now: the committable is kept and tried again at the next completed checkpoint.
  void retryLater() { end(Outcome::kRetryLater, ""); }
  // As retryLater, with a changed committable.
  void updateAndRetryLater(CommT committable) {
    committable_ = std::move(committable);
    retryLater();
  }
  // It was committed before; nothing was done now.
  void signalAlreadyCommitted() { end(Outcome::kAlreadyCommitted, ""); }

  Outcome outcome() const { return outcome_; }
  const std::string& reason() const { return reason_; }
  CommT& committable() { return committable_; }

 private:
  void end(Outcome outcome, std::string_view reason) {
    outcome_ = outcome;
    reason_ = reason;
  }

  CommT committable_;
  int retries_;
  Outcome outcome_ = Outcome::kCommitted;
  std::string reason_;
};

// Commits the committables of completed checkpoints. One per sink subtask, called only
// by that subtask's thread.
template <class CommT>
class Committer {
 public:
  virtual ~Committer() = default;
  // Commits every request (in the order given: oldest checkpoint first), telling each
  // request how it went when it did not simply commit. An exception thrown here fails
  // the job as signalFailedWithUnknownReason would.
  virtual void commit(std::vector<CommitRequest<CommT>>& requests) = 0;
  virtual void close() {}
};

}  // namespace weir
