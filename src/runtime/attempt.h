// One attempt of a job's stage (a STREAMING job is one stage): its stream tasks, the
// channels between them and the sources' split enumerators, built from the plan and,
// after a failure or on a resume, from a checkpoint. A restart builds a new attempt;
// nothing of the old one is reused. A batch job's later stages read what the earlier
// ones wrote to their blocking partitions.
#pragma once

#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_coordinator.h"
#include "runtime/blocking_partition.h"
#include "runtime/job_plan.h"
#include "runtime/stream_task.h"
#include "weir/detail/operators/tracking_split_enumerator.h"
#include "weir/detail/runtime/channel.h"
#include "weir/detail/time/watermark_alignment.h"

namespace weir::runtime {

// A stage's blocking output, by (edge, producer subtask).
template <class Partition>
using PartitionsOf = std::map<std::pair<size_t, int>, std::shared_ptr<Partition>>;
using RetainedPartitions = PartitionsOf<const BlockingResultPartition>;

struct Attempt {
  int stage = 0;                     // JobPlan::stages
  // In BATCH, a stage with a sink commits once every one of its tasks ended its input:
  // its tasks wait for that, as they do for the final checkpoint with checkpointing.
  bool commitsAtDrain = false;
  bool afterFailure = false;         // it re-runs a stage (or the job) that failed
  PartitionsOf<BlockingResultPartition> produced;  // its blocking output, finished once it succeeded
  RetainedPartitions consumed;  // the blocking input its tasks read: kept while they may
  std::vector<std::unique_ptr<StreamTask>> tasks;
  std::vector<std::unique_ptr<detail::ChannelBase>> channels;
  std::vector<std::unique_ptr<detail::TrackingSplitEnumerator>> enumerators;
  detail::WatermarkAlignment watermarkAlignment;  // the aligned sources' groups
  std::vector<std::thread::id> threadIds;  // guarded by JobExecution::mutex_; set at launch
  std::atomic<bool> cancelled{false};  // every task was told to stop at once
  std::atomic<int> running{0};        // task threads not yet finished
  std::atomic<int> inputsEnded{0};    // tasks whose input ended
  std::atomic<int> opened{0};         // tasks whose operators are open (state restored)
  std::atomic<bool> drained{false};   // all had: operators were told the final checkpoint
  std::exception_ptr failure;         // guarded by JobExecution::mutex_; its first failure
};

// Builds an attempt of stage `stage` of `plan`, restored from the checkpoint at
// `restoreFrom` ("": from scratch); `coordinator` is null without checkpointing. The
// stage reads its blocking input from `inputs` and writes its blocking output within
// `shuffleMemory` (needed when it has some). Throws weir::Error when the checkpoint
// cannot be restored into this job.
std::shared_ptr<Attempt> buildAttempt(const JobPlan& plan, const std::string& restoreFrom,
                                      checkpoint::CheckpointCoordinator* coordinator, int stage = 0,
                                      const RetainedPartitions& inputs = {},
                                      BlockingShuffleMemory* shuffleMemory = nullptr);

}  // namespace weir::runtime
