#include "runtime/barrier_handler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace weir::runtime {
namespace {

using namespace weir::detail;

using namespace std::chrono_literals;

// The operator: remembers every record it processed, in order.
struct Collect final : Output<int64_t> {
  std::vector<int64_t> seen;
  void processBatch(std::span<int64_t> records, Timestamps) override { seen.insert(seen.end(), records.begin(), records.end()); }
  void endInput() override {}
  void processWatermark(int64_t) override {}
  void processIdleness(bool) override {}
};

struct Acknowledged {
  int64_t id = 0;
  bool unaligned = false;
  std::vector<int64_t> processedBefore;
  std::vector<std::vector<int64_t>> inFlight;  // per input, decoded by replaying it
};

// Two input channels of int64 records into one operator, a barrier handler over them,
// and a log of the snapshots it took and acknowledged: the test is the stream task the
// handler asks to take and acknowledge each checkpoint.
class TwoInputs : public ::testing::Test, public CheckpointableTask {
 protected:
  // `overtakes`: per input, whether an unaligned barrier may overtake its records.
  void build(CheckpointConfig config, std::vector<bool> overtakes = {true, true}) {
    for (int i = 0; i < 2; ++i) {
      channels_[i] = std::make_unique<Channel<int64_t>>(8, &signal_);
      inputs_[i] = std::make_unique<ChannelInput<int64_t>>(channels_[i].get(), &op_, &metrics_);
    }
    handler_ = std::make_unique<BarrierHandler>(std::vector<ChannelInputBase*>{inputs_[0].get(), inputs_[1].get()},
                                                std::move(overtakes), config, *this, clock_);
  }

  // CheckpointableTask.
  std::shared_ptr<TakenSnapshot> takeSnapshot(int64_t id) override {
    lastTaken_ = id;
    processedBefore_[id] = op_.seen;  // what the operator had seen when it was taken
    return std::make_shared<TakenSnapshot>(TakenSnapshot{id, 0, nullptr});
  }
  void acknowledgeSnapshot(std::shared_ptr<TakenSnapshot> s, int64_t, bool unaligned,
                           std::vector<std::string> channelState) override {
    Acknowledged a{s->id, unaligned, processedBefore_[s->id], {}};
    for (const auto& bytes : channelState) {
      Collect replayed;
      ChannelInput<int64_t> input(channels_[0].get(), &replayed, &metrics_);
      input.replay(bytes, {});
      a.inFlight.push_back(replayed.seen);
    }
    acks_.push_back(a);
  }
  std::optional<int64_t> checkpointTriggeredAt(int64_t id) const override {
    return aborted_.contains(id) ? std::nullopt : std::optional(triggered_);
  }
  int64_t lastCheckpointTaken() const override { return lastTaken_; }
  bool isSavepoint(int64_t id) const override { return savepoints_.contains(id); }

  void send(int input, std::vector<int64_t> records) { ASSERT_TRUE(channels_[input]->send(std::move(records), {}, metrics_)); }
  // Each record in a buffer of its own, so each round reads one of them.
  void sendEach(int input, const std::vector<int64_t>& records) {
    for (int64_t r : records) send(input, {r});
  }
  void barrier(int input, int64_t id) { channels_[input]->sendEvent(EventKind::kBarrier, id); }

  // One round of the task loop: the handler looks at announcements, then each input that
  // is not blocked gets one poll.
  void round() {
    handler_->poll();
    for (size_t i = 0; i < 2; ++i) {
      if (handler_->blocked(i)) continue;
      switch (inputs_[i]->pollOnce()) {
        case ChannelInputBase::Poll::kBarrier: handler_->onBarrier(i, inputs_[i]->barrierId()); break;
        case ChannelInputBase::Poll::kEnded: handler_->onEnded(i); break;
        default: break;
      }
    }
  }

  TaskSignal signal_;
  TaskMetrics metrics_;
  Collect op_;
  std::unique_ptr<Channel<int64_t>> channels_[2];
  std::unique_ptr<ChannelInput<int64_t>> inputs_[2];
  std::unique_ptr<BarrierHandler> handler_;
  int64_t lastTaken_ = 0;
  ManualClock clock_{1'000'000};
  int64_t triggered_ = clock_.currentTimeMillis();
  std::set<int64_t> aborted_;  // checkpoints the coordinator gave up
  std::set<int64_t> savepoints_;
  std::map<int64_t, std::vector<int64_t>> processedBefore_;
  std::vector<Acknowledged> acks_;
};

CheckpointConfig unaligned(std::chrono::milliseconds timeout = 0ms) {
  CheckpointConfig config;
  config.setCheckpointInterval(1s);
  config.enableUnalignedCheckpoints();
  config.setAlignedCheckpointTimeout(timeout);
  return config;
}

TEST_F(TwoInputs, AlignedBlocksTheInputThatDeliveredTheBarrier) {
  build(CheckpointConfig{});
  send(0, {1, 2});
  barrier(0, 1);
  send(0, {3});
  send(1, {10});
  barrier(1, 1);
  for (int i = 0; i < 6; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_FALSE(acks_[0].unaligned);
  // Exactly the records before the barriers, and not 3, which came after it on input 0.
  std::vector<int64_t> before = acks_[0].processedBefore;
  std::sort(before.begin(), before.end());
  EXPECT_EQ(before, (std::vector<int64_t>{1, 2, 10}));
  EXPECT_TRUE(acks_[0].inFlight.empty());
}

TEST_F(TwoInputs, UnalignedTakesTheFirstAnnouncedBarrierAndPersistsWhatIsBeforeIt) {
  build(unaligned());
  send(0, {1, 2});
  send(0, {3});
  barrier(0, 1);
  send(0, {4});
  send(1, {10, 11});
  round();  // the barrier is announced: the snapshot comes before any record
  ASSERT_EQ(lastTaken_, 1);
  send(1, {12});
  barrier(1, 1);
  send(1, {13});
  for (int i = 0; i < 8; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_TRUE(acks_[0].unaligned);
  EXPECT_TRUE(acks_[0].processedBefore.empty());
  // In flight: every record before barrier 1 on each input; they were processed too.
  ASSERT_EQ(acks_[0].inFlight.size(), 2u);
  EXPECT_EQ(acks_[0].inFlight[0], (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(acks_[0].inFlight[1], (std::vector<int64_t>{10, 11, 12}));
  std::vector<int64_t> all = op_.seen;
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int64_t>{1, 2, 3, 4, 10, 11, 12, 13}));
}

// As in Flink, a savepoint is aligned even when checkpoints are unaligned: it holds no
// records in flight, which a changed job could not take back.
TEST_F(TwoInputs, ASavepointStaysAlignedWhenCheckpointsAreUnaligned) {
  build(unaligned());
  savepoints_.insert(1);
  send(0, {1, 2});
  barrier(0, 1);
  send(0, {3});
  send(1, {10});
  round();
  EXPECT_EQ(lastTaken_, 0);  // not taken at the announcement
  barrier(1, 1);
  for (int i = 0; i < 6; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_FALSE(acks_[0].unaligned);
  EXPECT_TRUE(acks_[0].inFlight.empty());
  std::vector<int64_t> before = acks_[0].processedBefore;
  std::sort(before.begin(), before.end());
  EXPECT_EQ(before, (std::vector<int64_t>{1, 2, 10}));
}

TEST_F(TwoInputs, UnalignedNeverBlocksAndEndsRecordingWhenAnInputEnds) {
  build(unaligned());
  barrier(0, 1);
  round();
  ASSERT_EQ(lastTaken_, 1);
  send(0, {5});  // after the barrier: not in flight
  send(1, {7});
  channels_[1]->sendEvent(EventKind::kEndOfPartition);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FALSE(handler_->blocked(0));
    round();
  }
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_EQ(acks_[0].inFlight[0], std::vector<int64_t>{});
  EXPECT_EQ(acks_[0].inFlight[1], (std::vector<int64_t>{7}));
}

TEST_F(TwoInputs, WithATimeoutACheckpointStartsAlignedAndTurnsUnaligned) {
  build(unaligned(50ms));
  send(0, {1});
  barrier(0, 1);
  send(0, {2});
  send(1, {10});
  for (int i = 0; i < 3; ++i) round();
  EXPECT_TRUE(acks_.empty());
  EXPECT_TRUE(handler_->blocked(0)) << "within the timeout it aligns";
  ASSERT_TRUE(handler_->deadline());
  EXPECT_EQ(*handler_->deadline(), triggered_ + 50);
  send(1, {11});
  barrier(1, 1);
  clock_.advance(60ms);  // the timeout passed
  round();
  ASSERT_EQ(lastTaken_, 1);
  for (int i = 0; i < 4; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_TRUE(acks_[0].unaligned);
  // Input 0 had delivered its barrier: nothing of it is in flight. Input 1's record
  // before its queued barrier is.
  EXPECT_EQ(acks_[0].processedBefore, (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(acks_[0].inFlight[0], std::vector<int64_t>{});
  EXPECT_EQ(acks_[0].inFlight[1], (std::vector<int64_t>{11}));
}

TEST_F(TwoInputs, AnAbortedCheckpointStopsRecordingAndIsNeverAcknowledged) {
  build(unaligned());
  barrier(0, 1);
  round();
  ASSERT_EQ(lastTaken_, 1);
  send(1, {7});
  round();  // input 1 records 7 for checkpoint 1
  aborted_.insert(1);
  send(1, {8});
  barrier(1, 1);
  for (int i = 0; i < 4; ++i) round();
  EXPECT_TRUE(acks_.empty());
  // The next checkpoint records afresh: nothing of the aborted one's records.
  barrier(0, 2);
  round();
  send(1, {9});
  barrier(1, 2);
  for (int i = 0; i < 4; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_EQ(acks_[0].id, 2);
  EXPECT_EQ(acks_[0].inFlight[1], (std::vector<int64_t>{9}));
}

TEST_F(TwoInputs, WithATimeoutAnAbortedAlignmentUnblocksForTheNextCheckpoint) {
  build(unaligned(50ms));
  barrier(0, 1);
  send(0, {2});
  round();
  EXPECT_TRUE(handler_->blocked(0));
  aborted_.insert(1);  // input 1's barrier 1 never comes in time
  clock_.advance(60ms);  // checkpoint 2, triggered as long ago, is past its timeout
  barrier(0, 2);
  send(1, {10});
  barrier(1, 2);
  for (int i = 0; i < 4; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_EQ(acks_[0].id, 2);
  EXPECT_FALSE(handler_->blocked(0));
}

// Input 1 is a forward (or broadcast) edge: an unaligned checkpoint waits for its barrier
// in order, holds nothing of it in flight, and still overtakes what is queued on input 0.
TEST_F(TwoInputs, UnalignedAlignsTheInputsItMayNotOvertake) {
  build(unaligned(), {true, false});
  sendEach(0, {1, 2, 3});
  barrier(0, 1);
  send(1, {10});
  barrier(1, 1);
  send(1, {12});
  round();  // input 0 announced barrier 1, but input 1's has not come in order yet
  EXPECT_EQ(lastTaken_, 0);
  round();  // input 0's 2, then input 1's barrier: the snapshot, with 3 still queued
  ASSERT_EQ(lastTaken_, 1);
  for (int i = 0; i < 4; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_TRUE(acks_[0].unaligned);
  EXPECT_EQ(acks_[0].processedBefore, (std::vector<int64_t>{1, 10, 2}));
  EXPECT_EQ(acks_[0].inFlight[0], (std::vector<int64_t>{3}));
  EXPECT_EQ(acks_[0].inFlight[1], std::vector<int64_t>{});
  std::vector<int64_t> all = op_.seen;
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int64_t>{1, 2, 3, 10, 12}));
}

// Both of its inputs forward: an unaligned checkpoint is taken as an aligned one.
TEST_F(TwoInputs, UnalignedWithNoInputToOvertakeAligns) {
  build(unaligned(), {false, false});
  send(0, {1});
  barrier(0, 1);
  send(0, {2});
  send(1, {10});
  send(1, {11});
  barrier(1, 1);
  for (int i = 0; i < 2; ++i) round();
  EXPECT_TRUE(handler_->blocked(0)) << "input 0 delivered its barrier; input 1 has not";
  EXPECT_EQ(lastTaken_, 0);
  for (int i = 0; i < 3; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_FALSE(acks_[0].unaligned);
  EXPECT_EQ(acks_[0].processedBefore, (std::vector<int64_t>{1, 10, 11}));
  EXPECT_TRUE(acks_[0].inFlight.empty());
}

// Past the aligned checkpoint timeout, a checkpoint waiting for the barrier of an input
// it may not overtake waits for that input, not for the clock (no deadline to spin on).
TEST_F(TwoInputs, PastTheTimeoutItStillWaitsForTheInputsItMayNotOvertake) {
  build(unaligned(50ms), {true, false});
  barrier(0, 1);
  send(1, {10});
  clock_.advance(60ms);
  for (int i = 0; i < 3; ++i) round();
  EXPECT_EQ(lastTaken_, 0);
  EXPECT_TRUE(handler_->blocked(0));
  EXPECT_FALSE(handler_->deadline()) << "nothing to wait for on the clock";
  barrier(1, 1);
  round();
  ASSERT_EQ(lastTaken_, 1);
  EXPECT_EQ(acks_.size(), 1u);
  EXPECT_EQ(acks_[0].processedBefore, std::vector<int64_t>{10});
}

// An input it may not overtake that ends instead of delivering the barrier no longer
// holds the checkpoint back.
TEST_F(TwoInputs, AnEndedInputItMayNotOvertakeIsNotWaitedFor) {
  build(unaligned(), {true, false});
  sendEach(0, {1, 2, 3});
  barrier(0, 1);
  send(1, {10});
  channels_[1]->sendEvent(EventKind::kEndOfPartition);
  round();  // 1 and 10
  round();  // 2, and input 1 ends
  EXPECT_EQ(lastTaken_, 0);
  round();  // nothing left to wait for: the snapshot, with 3 still queued on input 0
  ASSERT_EQ(lastTaken_, 1);
  for (int i = 0; i < 3; ++i) round();
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_TRUE(acks_[0].unaligned);
  EXPECT_EQ(acks_[0].processedBefore, (std::vector<int64_t>{1, 10, 2}));
  EXPECT_EQ(acks_[0].inFlight[0], std::vector<int64_t>{3});
}

TEST(ChannelAnnouncement, ABarrierIsAnnouncedWhenQueuedAndCapturesWhatIsAheadOfIt) {
  TaskSignal signal;
  TaskMetrics metrics;
  Channel<int> channel(4, &signal);
  EXPECT_EQ(channel.announcedBarrier(), 0);
  ASSERT_TRUE(channel.send({1, 2}, {}, metrics));
  channel.sendEvent(EventKind::kBarrier, 7);
  ASSERT_TRUE(channel.send({3}, {}, metrics));
  EXPECT_EQ(channel.announcedBarrier(), 7);
  std::vector<int> ahead;
  channel.forEachQueuedBefore(7, [&](const std::vector<int>& r, const std::vector<int64_t>&) {
    ahead.insert(ahead.end(), r.begin(), r.end());
  });
  EXPECT_EQ(ahead, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace weir::runtime
