// The operator at the end of a chain that writes into a TwoPhaseCommittingSink: the
// sink's writer prepares committables at each barrier, they go into the checkpoint with
// the operator state, and the sink's committer commits them when the checkpoint has
// completed. Restored committables are committed again when the subtask starts.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "weir/detail/sink/sink_operator.h"
#include "weir/two_phase_committing_sink.h"

namespace weir::detail {

template <class T, class CommT>
class CommittingSinkOperator final : public SinkOperator<T> {
 public:
  // The operator state that holds the committables not committed yet. Split among the
  // subtasks when the job is rescaled, as Flink's committer state is.
  static constexpr const char* kStateName = "weir.sink.committables";
  // How often a committable that asks to be retried is tried at the end of a bounded
  // job, where no later checkpoint will come, before the job fails.
  static constexpr int kFinalCommitAttempts = 10;

  explicit CommittingSinkOperator(std::shared_ptr<const TwoPhaseCommittingSink<T, CommT>> sink)
      : SinkOperator<T>(sink), committingSink_(std::move(sink)) {}

  void open() override {
    SinkOperator<T>::open();
    precommitting_ = dynamic_cast<PrecommittingSinkWriter<T, CommT>*>(this->writer_.get());
    if (precommitting_ == nullptr)
      this->callUser([&] {
        throw Error(ErrorCode::kInvalidJob,
                    "the sink is a TwoPhaseCommittingSink<T, CommT>, but its createWriter() returned a writer that "
                    "is not a PrecommittingSinkWriter<T, CommT>");
      });
    committer_ = this->callUser([&] { return committingSink_->createCommitter(*this->context_); });
    state_ = &this->context_->operatorState().list(ListStateDescriptor<CommT>(kStateName),
                                                    OperatorStateMode::kSplitDistribute);
    // What the restored checkpoint prepared is committed: that checkpoint completed.
    for (CommT& c : state_->get()) pending_.push_back({0, std::move(c), 0});
    state_->clear();
    if (!pending_.empty()) commitUpTo(0, false);
  }

  void snapshotState(int64_t checkpointId, int64_t timestamp, OperatorSnapshot& out) override {
    this->callUser([&] {
      this->writer_->flush(false);
      prepare(checkpointId);
    });
    lastSnapshot_ = checkpointId;
    std::vector<CommT> held;
    held.reserve(pending_.size());
    for (const auto& p : pending_) held.push_back(p.committable);
    state_->update(std::move(held));
    this->snapshotWriter(checkpointId, timestamp, out);
  }

  void notifyCheckpointComplete(int64_t checkpointId) override {
    SinkOperator<T>::notifyCheckpointComplete(checkpointId);
    // The notice after every checkpoint this subtask took is the one a bounded job sends
    // when it has finished: nothing will come after it.
    commitUpTo(checkpointId, checkpointId > lastSnapshot_);
  }

  // The last records: the writer ends them, and the job's final notice commits them
  // (or a checkpoint taken before that, which holds them, does). In BATCH that notice
  // comes once every subtask of the sink's stage ended its input, so a stage re-run
  // after a failure commits nothing twice. Otherwise, without checkpoints, no notice
  // comes: they are committed now (as Flink's committer does at the end of input).
  void endInput() override {
    this->callUser([&] {
      this->writer_->flush(true);
      prepare(lastSnapshot_ + 1);
    });
    if (!this->context_->isCheckpointingEnabled() && !this->context_->isBatch()) commitUpTo(lastSnapshot_ + 1, true);
  }

  void close() override {
    SinkOperator<T>::close();
    if (committer_) this->callUser([&] { committer_->close(); });
  }

 private:
  struct Pending {
    int64_t checkpointId;  // prepared at its barrier; 0: restored
    CommT committable;
    int retries;
  };

  void prepare(int64_t checkpointId) {
    for (CommT& c : precommitting_->prepareCommit()) pending_.push_back({checkpointId, std::move(c), 0});
  }

  // Commits what was prepared at or before `checkpointId`. `final`: no later checkpoint
  // will come, so a committable that asks to be retried is retried here, a few times.
  void commitUpTo(int64_t checkpointId, bool final) {
    for (int attempt = 1;; ++attempt) {
      size_t due = 0;
      while (due < pending_.size() && pending_[due].checkpointId <= checkpointId) ++due;
      if (due == 0) return;
      std::vector<CommitRequest<CommT>> requests;
      requests.reserve(due);
      for (size_t i = 0; i < due; ++i) requests.emplace_back(std::move(pending_[i].committable), pending_[i].retries);
      try {
        committer_->commit(requests);
      } catch (...) {
        for (size_t i = 0; i < due; ++i) pending_[i].committable = std::move(requests[i].committable());
        this->rethrowAsOperatorFailure();
      }
      std::vector<Pending> kept;
      for (size_t i = 0; i < due; ++i) {
        auto& r = requests[i];
        using Outcome = typename CommitRequest<CommT>::Outcome;
        switch (r.outcome()) {
          case Outcome::kCommitted:
          case Outcome::kAlreadyCommitted: break;
          case Outcome::kRetryLater:
            kept.push_back({pending_[i].checkpointId, std::move(r.committable()), pending_[i].retries + 1});
            break;
          case Outcome::kFailedKnownReason:
            std::fprintf(stderr, "weir: %s dropped a committable it cannot commit: %s\n",
                         this->context_->getTaskNameWithSubtasks().c_str(), r.reason().c_str());
            break;
          case Outcome::kFailedUnknownReason:
            this->callUser([&] { throw Error(ErrorCode::kIo, "cannot commit: " + r.reason()); });
        }
      }
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(due));
      pending_.insert(pending_.begin(), std::make_move_iterator(kept.begin()), std::make_move_iterator(kept.end()));
      if (kept.empty() || !final) return;
      if (attempt == kFinalCommitAttempts)
        this->callUser([&] {
          throw Error(ErrorCode::kIo, std::to_string(kept.size()) + " committables still ask to be retried after " +
                                          std::to_string(attempt) + " attempts at the end of the job");
        });
      std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
    }
  }

  std::shared_ptr<const TwoPhaseCommittingSink<T, CommT>> committingSink_;
  PrecommittingSinkWriter<T, CommT>* precommitting_ = nullptr;  // the writer, as what it is
  std::unique_ptr<Committer<CommT>> committer_;
  ListState<CommT>* state_ = nullptr;
  std::vector<Pending> pending_;  // prepared, not committed yet; oldest first
  int64_t lastSnapshot_ = 0;      // the last checkpoint this subtask took part in
};

}  // namespace weir::detail
