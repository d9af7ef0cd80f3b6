#include "runtime/barrier_handler.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace weir::runtime {

namespace {

int64_t nanosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

BarrierHandler::BarrierHandler(std::vector<detail::ChannelInputBase*> inputs, std::vector<bool> overtakes,
                               const CheckpointConfig& config, CheckpointableTask& task, const Clock& clock)
    : inputs_(std::move(inputs)),
      overtakes_(std::move(overtakes)),
      align_(config.getCheckpointingMode() == CheckpointingMode::EXACTLY_ONCE),
      unaligned_(align_ && config.isCheckpointingEnabled() && config.isUnalignedCheckpointsEnabled()),
      alignedTimeout_(config.getAlignedCheckpointTimeout()),
      task_(task),
      clock_(clock),
      ended_(inputs_.size(), false),
      announced_(inputs_.size(), 0) {
  assert(overtakes_.size() == inputs_.size());
}

bool BarrierHandler::blocked(size_t i) const {
  return align_ && !arriving_.empty() && arriving_.begin()->second.arrived[i];
}

BarrierHandler::Arriving& BarrierHandler::aligning(int64_t id) {
  auto [it, created] = arriving_.try_emplace(id);
  if (created) it->second = {std::vector<bool>(inputs_.size(), false), std::chrono::steady_clock::now()};
  return it->second;
}

bool BarrierHandler::unalignedNow(int64_t id) const {
  if (!unaligned_ || task_.isSavepoint(id)) return false;
  if (alignedTimeout_.count() == 0) return true;
  auto triggered = task_.checkpointTriggeredAt(id);
  return triggered && clock_.currentTimeMillis() >= *triggered + alignedTimeout_.count();
}

bool BarrierHandler::mayTakeUnaligned(int64_t id) const {
  if (!unalignedNow(id)) return false;
  auto it = arriving_.find(id);
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (!overtakes_[i] && !ended_[i] && (it == arriving_.end() || !it->second.arrived[i])) return false;
  return true;
}

void BarrierHandler::onBarrier(size_t i, int64_t id) {
  if (unaligned_) {
    announced_[i] = std::max(announced_[i], id);
    newestAnnounced_ = std::max(newestAnnounced_, id);
    finishRecordings(i, id, false);  // every record before the barrier was processed
  }
  if (id <= task_.lastCheckpointTaken() || id <= givenUp_) return;  // of a checkpoint taken or given up here
  // Exactly once, one checkpoint aligns at a time: a newer one means the one aligning
  // was given up elsewhere, and an older one's barrier is stale.
  if (align_ && !arriving_.empty()) {
    if (id < arriving_.begin()->first) return;
    if (id > arriving_.begin()->first) arriving_.clear();
  }
  aligning(id).arrived[i] = true;
  if (mayTakeUnaligned(id)) takeUnaligned(id);
  else takeIfAligned();
}

void BarrierHandler::onEnded(size_t i) {
  if (!ended_[i]) ++endedCount_;
  ended_[i] = true;
  for (auto& [id, r] : recordings_) {
    if (r.done[i]) continue;
    inputs_[i]->stopRecording(id);
    r.done[i] = true;
  }
  acknowledgeComplete();
  takeIfAligned();
}

void BarrierHandler::poll() {
  if (!unaligned_) return;
  if (!recordings_.empty()) dropAbortedRecordings();
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (ended_[i] || !overtakes_[i]) continue;
    int64_t announced = inputs_[i]->announcedBarrier();
    if (announced <= announced_[i]) continue;
    announced_[i] = announced;
    newestAnnounced_ = std::max(newestAnnounced_, announced);
    finishRecordings(i, announced, true);
  }
  if (!arriving_.empty()) {
    int64_t id = arriving_.begin()->first;
    if (mayTakeUnaligned(id)) {
      takeUnaligned(id);
      return;
    }
    // An aligning checkpoint that was aborted while a newer one is on its way: stop
    // aligning it (its inputs would stay blocked), so the newer one can turn unaligned.
    if (newestAnnounced_ > id && !task_.checkpointTriggeredAt(id)) {
      givenUp_ = id;
      arriving_.clear();
    }
  }
  if (arriving_.empty() && newestAnnounced_ > std::max(task_.lastCheckpointTaken(), givenUp_) &&
      unalignedNow(newestAnnounced_)) {
    if (mayTakeUnaligned(newestAnnounced_)) {
      takeUnaligned(newestAnnounced_);
    } else {
      aligning(newestAnnounced_);  // for its barriers on the inputs they may not overtake
    }
  }
}

void BarrierHandler::dropAbortedRecordings() {
  for (auto it = recordings_.begin(); it != recordings_.end();) {
    if (task_.checkpointTriggeredAt(it->first)) {
      ++it;
      continue;
    }
    for (auto* input : inputs_) input->stopRecording(it->first);
    it = recordings_.erase(it);
  }
}

std::optional<int64_t> BarrierHandler::deadline() const {
  if (!unaligned_ || alignedTimeout_.count() == 0) return std::nullopt;
  int64_t id = 0;
  if (!arriving_.empty()) id = arriving_.begin()->first;
  else if (newestAnnounced_ > task_.lastCheckpointTaken()) id = newestAnnounced_;
  if (id == 0) return std::nullopt;
  auto triggered = task_.checkpointTriggeredAt(id);
  if (!triggered) return std::nullopt;
  int64_t due = *triggered + alignedTimeout_.count();
  // Past it, a checkpoint still waiting for barriers on inputs they may not overtake
  // waits for input, not for the clock.
  if (due <= clock_.currentTimeMillis() && !mayTakeUnaligned(id)) return std::nullopt;
  return due;
}

void BarrierHandler::finishRecordings(size_t i, int64_t id, bool capture) {
  bool finished = false;
  for (auto& [recorded, r] : recordings_) {
    if (recorded > id || r.done[i]) continue;
    inputs_[i]->stopRecording(recorded);
    if (capture) inputs_[i]->captureQueuedBefore(recorded, r.channelState[i]);
    r.done[i] = true;
    finished = true;
  }
  if (finished) acknowledgeComplete();
}

// Takes the oldest arriving checkpoint whose barriers are all in, dropping older ones.
void BarrierHandler::takeIfAligned() {
  for (auto it = arriving_.begin(); it != arriving_.end(); ++it) {
    bool all = true;
    for (size_t i = 0; i < inputs_.size(); ++i) all = all && (ended_[i] || it->second.arrived[i]);
    if (!all) continue;
    int64_t alignmentNanos = nanosSince(it->second.first);
    int64_t id = it->first;
    arriving_.erase(arriving_.begin(), std::next(it));
    auto snapshot = task_.takeSnapshot(id);
    if (snapshot) task_.acknowledgeSnapshot(std::move(snapshot), alignmentNanos, false, {});
    return;
  }
}

void BarrierHandler::takeUnaligned(int64_t id) {
  const size_t n = inputs_.size();
  std::vector<bool> arrived(n, false);
  int64_t alignmentNanos = 0;
  if (auto it = arriving_.find(id); it != arriving_.end()) {
    arrived = it->second.arrived;
    alignmentNanos = nanosSince(it->second.first);
  }
  arriving_.clear();
  auto snapshot = task_.takeSnapshot(id);
  if (!snapshot) return;  // declined
  Recording& r = recordings_[id];
  r.snapshot = std::move(snapshot);
  r.alignmentNanos = alignmentNanos;
  r.channelState.resize(n);
  r.done.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (ended_[i] || arrived[i]) {
      r.done[i] = true;  // nothing of it is before the barrier any more
    } else if (announced_[i] >= id) {
      inputs_[i]->captureQueuedBefore(id, r.channelState[i]);
      r.done[i] = true;
      r.unaligned = true;
    } else {
      inputs_[i]->startRecording(id, &r.channelState[i]);
      r.unaligned = true;
    }
  }
  acknowledgeComplete();
}

void BarrierHandler::acknowledgeComplete() {
  for (auto it = recordings_.begin(); it != recordings_.end();) {
    auto& r = it->second;
    if (std::find(r.done.begin(), r.done.end(), false) != r.done.end()) {
      ++it;
      continue;
    }
    if (!r.unaligned) r.channelState.clear();  // nothing was in flight: as an aligned one
    task_.acknowledgeSnapshot(std::move(r.snapshot), r.alignmentNanos, r.unaligned, std::move(r.channelState));
    it = recordings_.erase(it);
  }
}

}  // namespace weir::runtime
