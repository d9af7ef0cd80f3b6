// One attempt of a job: its stream tasks, the channels between them and the sources'
// split enumerators, built from the plan and, after a failure or on a resume, from a
// checkpoint. A restart builds a new attempt; nothing of the old one is reused.
#pragma once

#include <atomic>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_coordinator.h"
#include "runtime/job_plan.h"
#include "runtime/stream_task.h"
#include "weir/detail/operators/tracking_split_enumerator.h"
#include "weir/detail/runtime/channel.h"
#include "weir/detail/time/watermark_alignment.h"

namespace weir::runtime {

struct Attempt {
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

// Builds an attempt of `plan`, restored from the checkpoint at `restoreFrom` ("": from
// scratch); `coordinator` is null without checkpointing. Throws weir::Error when the
// checkpoint cannot be restored into this job.
std::shared_ptr<Attempt> buildAttempt(const JobPlan& plan, const std::string& restoreFrom,
                                      checkpoint::CheckpointCoordinator* coordinator);

}  // namespace weir::runtime
