#include "runtime/stream_task.h"

#include <algorithm>

#include "runtime/barrier_handler.h"
#include "weir/key_group.h"

namespace weir::runtime {

using namespace weir::detail;

bool StreamTask::outputAvailable() const {
  for (const auto* w : writers)
    if (!w->available()) return false;
  return true;
}

void StreamTask::flushOutputs() {
  for (auto* w : writers) w->flush(false);
}

void StreamTask::flushIfDue(std::optional<std::chrono::steady_clock::time_point> now) {
  if (writers.empty() || bufferTimeout.count() < 0) return;
  if (bufferTimeout.count() == 0) {
    flushOutputs();
    return;
  }
  if (!now) now = std::chrono::steady_clock::now();
  if (*now < nextFlush_) return;
  flushOutputs();
  nextFlush_ = *now + bufferTimeout;
}

void StreamTask::yieldUntil(std::chrono::steady_clock::time_point deadline) {
  if (!mailbox.hasMail() && !operatorMail.hasMail()) {
    flushOutputs();  // what the operator emitted so far goes out while it waits
    signal.waitUntil(deadline);
  }
  mailbox.runPending();
  if (!suspended) operatorMail.runPending();
}

void StreamTask::awaitUploads() {
  std::unique_lock lock(uploadMutex);
  uploadCv.wait(lock, [&] { return pendingUploads == 0; });
}

// Polls the source; the processing-time timers of the chain (an
// assignTimestampsAndWatermarks with idleness, say) fire between polls.
void StreamTask::runSource() {
  const Clock& clock = *contexts.front()->clock();
  while (true) {
    mailbox.runPending();
    if (!suspended) operatorMail.runPending();
    if (stopRequested) break;
    if (suspended) {  // until the savepoint completes (the task ends) or fails (it goes on)
      flushOutputs();
      metrics.idle([&] { signal.wait(); });
      continue;
    }
    if (!processingTime.empty()) processingTime.fireDue(clock.currentTimeMillis());
    if (!outputAvailable()) {  // checkpoint triggers and mail go on meanwhile
      flushOutputs();
      metrics.backPressured([&] { signal.wait(); });
      continue;
    }
    if (inputHolds > 0) {  // an operator waits for results (async I/O): they come as mail
      flushOutputs();
      if (processingTime.empty()) signal.wait();
      else signal.waitUntil(std::chrono::steady_clock::now() + clock.sleepUntil(processingTime.nextDue()));
      continue;
    }
    InputStatus status = source->emitNext();
    const auto now = std::chrono::steady_clock::now();
    auto nextWatermark = source->onTime(now);
    if (status == InputStatus::END_OF_INPUT) break;
    if (status == InputStatus::NOTHING_AVAILABLE) {
      flushOutputs();
      auto wake = std::min(source->nextPollTime(), nextWatermark);
      if (!processingTime.empty()) wake = std::min(wake, now + clock.sleepUntil(processingTime.nextDue()));
      metrics.idle([&] { signal.waitUntil(wake); });
    } else {
      flushIfDue(now);
    }
  }
  processingTime.quiesce();
  source->endInput();
}

// Reads the inputs in turn; the barrier handler decides when the task takes each
// checkpoint and which inputs wait meanwhile. Watermarks and idleness go to the valve,
// which hands the combined watermark to the head operator.
void StreamTask::runInputs() {
  const size_t n = inputs.size();
  replayChannelState();
  std::vector<ChannelInputBase*> polled;
  std::vector<bool> overtakes;  // forward and broadcast edges stay aligned, as in Flink
  for (size_t i = 0; i < n; ++i) {
    polled.push_back(inputs[i].get());
    overtakes.push_back(sharedOutOnRescale(inputOrigins[i].partitioner));
  }
  static const CheckpointConfig kNoCheckpoints;
  static const SystemClock kSystemClock;
  const Clock& barrierClock = checkpointClock ? *checkpointClock : kSystemClock;
  BarrierHandler barriers(std::move(polled), std::move(overtakes), checkpointConfig ? *checkpointConfig : kNoCheckpoints,
                          *this, barrierClock);
  const Clock& clock = *contexts.front()->clock();
  while (!barriers.allEnded()) {
    mailbox.runPending();
    if (!suspended) operatorMail.runPending();
    if (!processingTime.empty() && !suspended) processingTime.fireDue(clock.currentTimeMillis());
    barriers.poll();
    bool progress = false;
    const bool writable = outputAvailable();
    const bool held = inputHolds > 0;  // an operator waits for results (async I/O): they come as mail
    for (size_t i = 0; writable && !held && i < n; ++i) {
      if (barriers.ended(i) || barriers.blocked(i)) continue;
      const int input = static_cast<int>(i);
      switch (inputs[i]->pollOnce()) {
        case ChannelInputBase::Poll::kEmpty: continue;
        case ChannelInputBase::Poll::kProcessed: break;
        case ChannelInputBase::Poll::kWatermark: valve->inputWatermark(input, inputs[i]->watermark()); break;
        case ChannelInputBase::Poll::kIdle: valve->inputIdleness(input, true); break;
        case ChannelInputBase::Poll::kActive: valve->inputIdleness(input, false); break;
        case ChannelInputBase::Poll::kEnded: barriers.onEnded(i); break;
        case ChannelInputBase::Poll::kBarrier: barriers.onBarrier(i, inputs[i]->barrierId()); break;
      }
      progress = true;
    }
    if (progress) {
      flushIfDue();
    } else {
      flushOutputs();
      std::optional<std::chrono::steady_clock::time_point> wake;
      if (auto deadline = barriers.deadline())
        wake = std::chrono::steady_clock::now() + barrierClock.sleepUntil(*deadline);
      if (!processingTime.empty() && !suspended) {
        auto due = std::chrono::steady_clock::now() + clock.sleepUntil(processingTime.nextDue());
        wake = wake ? std::min(*wake, due) : due;
      }
      auto wait = [&] {
        if (wake) signal.waitUntil(*wake);
        else signal.wait();
      };
      if (!writable) metrics.backPressured(wait);
      else if (held) wait();  // busy, as Flink counts an operator waiting in its mailbox
      else metrics.idle(wait);
    }
  }
  processingTime.quiesce();  // timers still pending do not fire after the end of input
  headInput->endInput();
}

// The records in flight of a restored unaligned checkpoint, before anything new, each
// through an input of the edge it came by (checked when the attempt was built). At
// another parallelism the task takes its share of every old subtask's: on a keyBy edge
// the records of the key groups it now owns, on rebalance and shuffle edges (any subtask
// may take them) those of old subtask i when i % parallelism is its index.
void StreamTask::replayChannelState() {
  const KeyGroupRange owned = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, index);
  const std::string& name = operators.front()->name();
  for (const auto& [oldSubtask, element] : restoredChannelState) {
    InFlight f = parseInFlight(inputOrigins, name, element, channelStateRescaled);
    auto& input = *inputs[f.input];
    if (!channelStateRescaled) {
      input.replay(f.records, {});
    } else if (f.sentBy == PartitionerKind::kKeyGroup) {
      const auto& keyGroupOf = inputOrigins[f.input].keyGroupOf;
      input.replay(f.records, [&](const void* r) { return owned.contains(keyGroupOf(r, maxParallelism)); });
    } else if (oldSubtask % parallelism == index) {
      input.replay(f.records, {});
    }
  }
  restoredChannelState.clear();
}

}  // namespace weir::runtime
