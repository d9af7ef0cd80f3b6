// Checkpoint storage on a disk that fails (tests/support/fault_injecting_file_system.h):
// a write, fsync or rename that fails — of a state file, of _metadata or of a folder's
// entry — fails that checkpoint with an error naming the file, never leaves a _metadata
// that names missing or short files (not even after a crash right then), and the next
// checkpoint completes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "checkpoint/checkpoint_coordinator.h"
#include "checkpoint/checkpoint_storage.h"
#include "support/fault_injecting_file_system.h"

namespace weir::checkpoint {

using namespace weir::detail;
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using test::FaultInjectingFileSystem;
using Op = FaultInjectingFileSystem::Op;

// A fault and what the failed checkpoint's message must name.
struct Fault {
  std::string name;
  Op op;
  int nth;               // the nth call of `op` on a path containing `pathPart` in checkpoint 2
  std::string pathPart;  // "" any path
  std::string file;      // in the message: the file or folder, relative to chk-2's parent
  std::errc error = std::errc::io_error;
  bool diskFull = false;  // instead of the above: the disk fills up, `nth` bytes after
                          // checkpoint 2's state files (negative: within the first one)
};

std::ostream& operator<<(std::ostream& os, const Fault& f) { return os << f.name; }

class CheckpointStorageFaults : public ::testing::TestWithParam<Fault> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir-storage-faults-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    job_ = (dir_ / "job").string();
    CheckpointConfig config;
    config.setCheckpointInterval(10ms);
    config.setTolerableCheckpointFailureNumber(5);
    coordinator_ = std::make_unique<CheckpointCoordinator>(config, job_, "job", 8, 1, clock_, disk_);
    CheckpointCoordinator::Hooks hooks;
    hooks.triggerSources = [](int64_t, int64_t, SnapshotKind) {};
    hooks.notifySubtasks = [this](int64_t id, bool ok) {
      if (!ok && crashOnAbort_) disk_->crash();  // before anything else reaches the disk
      std::lock_guard lock(mutex_);
      outcome_[id] = ok;
      cv_.notify_all();
    };
    hooks.failJob = [this](const std::string&) {
      std::lock_guard lock(mutex_);
      jobFailed_ = true;
    };
    coordinator_->startAttempt(1, hooks);
  }
  void TearDown() override {
    if (coordinator_) coordinator_->endAttempt();
    coordinator_.reset();
    fs::remove_all(dir_);
  }

  // Takes the next checkpoint: one subtask writes two state files (a keyed operator and
  // a source). Returns whether it completed.
  bool checkpoint() {
    clock_->advance(10ms);
    coordinator_->tick(true);
    auto pending = coordinator_->pendingIds();
    EXPECT_EQ(pending.size(), 1u);
    if (pending.empty()) return false;
    const int64_t id = pending.back();
    auto upload = [](const CheckpointTarget& target) {
      std::vector<StateFileInfo> files;
      for (const char* op : {"op", "src"}) {
        OperatorSnapshot s;
        if (std::string(op) == "op") {
          std::vector<OwnedStateEntry> entries;
          for (int g = 0; g < 8; ++g) entries.push_back({g, "key" + std::to_string(g), std::string(100, 'v')});
          s.keyed["count"] = std::make_unique<MaterializedSnapshot>(entries);
        } else {
          s.operatorState.push_back({"offsets", OperatorStateMode::kSplitDistribute, {"42"}});
        }
        StateFileInfo info;
        info.operatorId = op;
        info.operatorName = op;
        info.keyGroups = KeyGroupRange{0, 7};
        info.file = std::string(op) + "-0-state";
        writeStateFile(target, s, info);
        files.push_back(std::move(info));
      }
      return files;
    };
    coordinator_->acknowledge(id, {}, upload, [] {});
    std::unique_lock lock(mutex_);
    EXPECT_TRUE(cv_.wait_for(lock, 10s, [&] { return outcome_.contains(id); }));
    return outcome_[id];
  }

  // Every _metadata on the disk reads and names files of the sizes and checksums it
  // says (read directly, not through the file system under test).
  void expectEveryMetadataNamesWholeFiles() {
    for (const auto& chk : fs::directory_iterator(job_)) {
      if (!fs::exists(chk.path() / "_metadata")) continue;
      EXPECT_NO_THROW(verifyCheckpoint(chk.path().string(), readMetadata(chk.path().string())))
          << chk.path() << " names missing, short or damaged files";
    }
  }

  // Plans the fault for checkpoint 2; `stateBytes`: what checkpoint 1's state files took.
  void inject(const Fault& f, uint64_t stateBytes) {
    if (f.diskFull) disk_->setSpaceLeft(f.nth < 0 ? 10 : static_cast<int64_t>(stateBytes) + f.nth);
    else disk_->failNth(f.op, f.nth, f.error, f.pathPart);
  }
  uint64_t stateBytesOf(const std::string& chk) {
    uint64_t bytes = 0;
    for (const auto& f : readMetadata((fs::path(job_) / chk).string()).files) bytes += f.size;
    return bytes;
  }
  std::string lastFailure() { return coordinator_->stats().history.at(0).failureMessage; }

  fs::path dir_;
  std::string job_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(1'000'000);
  std::shared_ptr<FaultInjectingFileSystem> disk_ = std::make_shared<FaultInjectingFileSystem>();
  std::unique_ptr<CheckpointCoordinator> coordinator_;
  bool crashOnAbort_ = false;  // set before a checkpoint, read on the coordinator's threads after
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<int64_t, bool> outcome_;  // guarded by mutex_: completed or aborted, by id
  bool jobFailed_ = false;           // guarded by mutex_
};

TEST_P(CheckpointStorageFaults, FailTheCheckpointNamingTheFileAndTheNextOneCompletes) {
  const Fault& f = GetParam();
  ASSERT_TRUE(checkpoint());
  inject(f, stateBytesOf("chk-1"));
  EXPECT_FALSE(checkpoint()) << "the fault did not fail checkpoint 2";
  ASSERT_EQ(disk_->failures().size(), 1u) << "the fault was not injected once";
  const std::string message = lastFailure();
  const std::string named = f.file.empty() ? job_ : (fs::path(job_) / f.file).string();
  EXPECT_NE(message.find("'" + named + "'"), std::string::npos) << message;
  EXPECT_NE(message.find(std::make_error_code(f.diskFull ? std::errc::no_space_on_device : f.error).message()),
            std::string::npos)
      << message;

  disk_->clearFaults();
  EXPECT_TRUE(checkpoint()) << "the checkpoint after the failed one: " << lastFailure();
  coordinator_->endAttempt();
  coordinator_->shutdown(false);  // waits for the removals queued on the I/O thread
  {
    std::lock_guard lock(mutex_);
    EXPECT_FALSE(jobFailed_);
  }
  expectEveryMetadataNamesWholeFiles();
  EXPECT_EQ(findLatestCheckpoint(dir_.string()), (fs::path(job_) / "chk-3").string());
  EXPECT_FALSE(fs::exists(fs::path(job_) / "chk-2")) << "the failed checkpoint's folder is removed";
  for (const auto& e : fs::recursive_directory_iterator(job_))
    EXPECT_EQ(e.path().extension(), "") << e.path() << " is left over";
}

// A crash the moment the checkpoint failed (before its folder could be removed) leaves
// the disk with checkpoint 1 as the latest and whole, and checkpoint 2 without _metadata.
TEST_P(CheckpointStorageFaults, ACrashRightAfterTheFailureLeavesTheLastCompleteCheckpointIntact) {
  const Fault& f = GetParam();
  ASSERT_TRUE(checkpoint());
  inject(f, stateBytesOf("chk-1"));
  crashOnAbort_ = true;
  EXPECT_FALSE(checkpoint());
  ASSERT_TRUE(disk_->crashed());
  coordinator_->endAttempt();
  coordinator_.reset();  // the process is gone
  expectEveryMetadataNamesWholeFiles();
  EXPECT_FALSE(fs::exists(fs::path(job_) / "chk-2" / "_metadata"));
  EXPECT_EQ(findLatestCheckpoint(dir_.string()), (fs::path(job_) / "chk-1").string());
}

// Checkpoint 2 writes, in order: op-0-state (open, write, sync, close, rename, sync of
// chk-2), src-0-state (the same), a sync of the job folder, then _metadata (the same).
INSTANTIATE_TEST_SUITE_P(
    Faults, CheckpointStorageFaults,
    ::testing::Values(Fault{"StateFileWrite", Op::kWrite, 1, "op-0-state", "chk-2/op-0-state.inprogress"},
                      Fault{"StateFileSync", Op::kSync, 1, "op-0-state", "chk-2/op-0-state.inprogress"},
                      Fault{"StateFileRename", Op::kRename, 1, "op-0-state", "chk-2/op-0-state.inprogress"},
                      Fault{"SecondStateFileWrite", Op::kWrite, 1, "src-0-state", "chk-2/src-0-state.inprogress"},
                      Fault{"StateFolderSync", Op::kSyncDirectory, 2, "chk-2", "chk-2"},
                      Fault{"JobFolderSync", Op::kSyncDirectory, 3, "", ""},
                      Fault{"MetadataWrite", Op::kWrite, 1, "_metadata", "chk-2/_metadata.inprogress"},
                      Fault{"MetadataSync", Op::kSync, 1, "_metadata", "chk-2/_metadata.inprogress"},
                      Fault{"MetadataRename", Op::kRename, 1, "_metadata", "chk-2/_metadata.inprogress"},
                      Fault{"MetadataFolderSync", Op::kSyncDirectory, 3, "chk-2", "chk-2"},
                      Fault{"DiskFullInAStateFile", Op::kWrite, -1, "", "chk-2/op-0-state.inprogress",
                            std::errc::no_space_on_device, true},
                      Fault{"DiskFullInMetadata", Op::kWrite, 5, "", "chk-2/_metadata.inprogress",
                            std::errc::no_space_on_device, true}),
    [](const ::testing::TestParamInfo<Fault>& info) { return info.param.name; });

}  // namespace
}  // namespace weir::checkpoint
