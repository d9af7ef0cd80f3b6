// The stream task: one parallel instance of a vertex (an operator chain), run by its own
// thread (Flink's StreamTask). A source task polls its source; any other task reads its
// input channels in turn, combines their watermarks in its watermark valve, and lets its
// barrier handler decide when it takes each checkpoint. Everything else reaches the task
// through its mailbox, so its operators and their state are touched by its thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_coordinator.h"
#include "runtime/channel_state.h"
#include "runtime/checkpointable_task.h"
#include "runtime/mailbox.h"
#include "time/watermark_valve.h"
#include "weir/checkpoint_config.h"
#include "weir/clock.h"
#include "weir/detail/core/counting_output.h"
#include "weir/detail/operators/source_operator.h"
#include "weir/detail/operators/stream_operator.h"
#include "weir/detail/runtime/channel.h"
#include "weir/detail/runtime/channel_input.h"
#include "weir/detail/core/mailbox_executor.h"
#include "weir/detail/runtime/record_writer.h"
#include "weir/detail/time/processing_time_service.h"
#include "weir/runtime_context.h"

namespace weir::runtime {

class StreamTask final : public CheckpointableTask, public detail::MailboxExecutor {
 public:
  StreamTask() : mailbox(&signal), operatorMail(&signal) {}

  // A source task: polls the source until its input ends or stop() is asked for.
  void runSource();
  // Any other task: the records in flight of a restored unaligned checkpoint first, then
  // its inputs until all ended. Reads an input only while every output has a credit, so
  // a back-pressured task still takes checkpoints at once.
  void runInputs();
  // Waits until the checkpoints this task took are written.
  void awaitUploads();
  // Takes checkpoint `id` and acknowledges it at once (a source, or a task past its
  // input, which no barrier reaches).
  void performCheckpoint(int64_t id, int64_t timestamp, int64_t alignmentNanos);

  // CheckpointableTask (subtask_checkpoint.cc).
  std::shared_ptr<TakenSnapshot> takeSnapshot(int64_t id) override;
  void acknowledgeSnapshot(std::shared_ptr<TakenSnapshot> snapshot, int64_t alignmentNanos, bool unaligned,
                           std::vector<std::string> channelState) override;
  std::optional<int64_t> checkpointTriggeredAt(int64_t id) const override;
  int64_t lastCheckpointTaken() const override { return lastSnapshotId.load(); }
  bool isSavepoint(int64_t id) const override;

  // MailboxExecutor: what the chain's operators use to wait on other threads.
  void execute(std::function<void()> action) override { operatorMail.put(std::move(action)); }
  void yieldUntil(std::chrono::steady_clock::time_point deadline) override;
  void holdInput(bool hold) override { inputHolds += hold ? 1 : -1; }

  int vertex = 0;
  int index = 0;
  int parallelism = 1;
  int maxParallelism = 128;
  detail::TaskSignal signal;
  Mailbox mailbox;
  // The operators' mail (async I/O's answers): it may emit records, so it waits while the
  // task is suspended after a stop-with-savepoint's snapshot.
  Mailbox operatorMail;
  detail::TaskMetrics metrics;
  detail::ProcessingTimeService processingTime;  // the chain's processing-time timers
  std::vector<std::unique_ptr<RuntimeContext>> contexts;
  std::vector<std::unique_ptr<detail::StreamOperator>> operators;  // in chain order
  std::vector<std::string> operatorIds;                            // per operator: its id in checkpoints
  std::vector<std::unique_ptr<detail::OutputBase>> outputs;        // fan-outs, counting outputs, channel writers
  std::deque<detail::EmittedCounts> emitted;  // what each operator's outputs emitted (its metrics)
  // By (node, side-output tag; -1 the main output); a fused run's by its tail.
  std::map<std::pair<int, int>, const detail::EmittedCounts*> emittedBy;
  std::vector<detail::ChannelWriterBase*> writers;                 // where barriers leave
  detail::SourceOperatorBase* source = nullptr;                    // set for source chains
  bool stopRequested = false;                                      // source: end input now
  int inputHolds = 0;      // operators that can take no input now (async I/O at capacity)
  bool suspended = false;  // took a stop-with-savepoint's snapshot: no source poll, no timer until resumed
  detail::OutputBase* headInput = nullptr;                         // set for chains fed by channels
  std::vector<std::unique_ptr<detail::ChannelInputBase>> inputs;
  std::vector<InputOrigin> inputOrigins;               // per input
  std::unique_ptr<time::WatermarkValve> valve;         // combines the inputs' watermarks
  std::vector<detail::ChannelBase*> inputChannels;
  // Records in flight to replay first, with the old subtask that held them.
  std::vector<std::pair<int, std::string>> restoredChannelState;
  bool channelStateRescaled = false;  // taken at another parallelism: replay a share
  std::thread thread;

  // Checkpoints; the coordinator is null when checkpointing is off.
  checkpoint::CheckpointCoordinator* coordinator = nullptr;
  const CheckpointConfig* checkpointConfig = nullptr;
  const Clock* checkpointClock = nullptr;  // the coordinator's: trigger times, alignment timeouts
  std::atomic<int64_t> lastSnapshotId{0};  // the newest checkpoint it took part in
  std::atomic<bool> inputEnded{false};     // it is past its input: checkpoints are triggered here
  bool drained = false;                    // every task's input ended (task thread)
  std::mutex uploadMutex;
  std::condition_variable uploadCv;
  int pendingUploads = 0;  // guarded by uploadMutex: snapshots still being written

  // Partly filled output buffers (see setBufferTimeout).
  std::chrono::milliseconds bufferTimeout{100};

 private:
  // Whether every output channel has a credit.
  bool outputAvailable() const;
  // Before the task waits: sends partly filled buffers where a credit allows.
  void flushOutputs();
  // After a batch: sends them when the buffer timeout has passed (0: always). `now` is
  // the steady clock, when the caller has just read it.
  void flushIfDue(std::optional<std::chrono::steady_clock::time_point> now = std::nullopt);
  void replayChannelState();
  std::shared_ptr<TakenSnapshot> takeSnapshot(int64_t id, int64_t timestamp);

  std::chrono::steady_clock::time_point nextFlush_{};
  mutable int64_t kindAskedFor_ = -1;     // isSavepoint's last answer (task thread)
  mutable bool askedIsSavepoint_ = false;
};

}  // namespace weir::runtime
