// A running job on a disk that fails or loses power (tests/support/
// fault_injecting_file_system.h), with crashes placed at exact steps of a checkpoint by
// sync points (core/sync_point.h): whatever the disk does, the job's committed output
// is exactly that of a failure-free run (checked against a brute force over the input,
// as in recovery_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "checkpoint/checkpoint_storage.h"
#include "core/sync_point.h"
#include "support/fresh_folder.h"
#include "support/fault_injecting_file_system.h"
#include "support/job_end.h"
#include "support/recovery_job.h"
#include "weir/weir.h"

namespace weir::test {
namespace {

namespace fs = std::filesystem;
using test::freshFolder;
using Op = FaultInjectingFileSystem::Op;

// Parallelism 2, a checkpoint every 20 ms into `dir` (retained when cancelled), on
// `backend`.
void checkpointEvery20ms(StreamExecutionEnvironment& env, const fs::path& dir, const std::string& backend) {
  env.setParallelism(2).setAutoWatermarkInterval(5ms).setStateBackend(backendNamed(backend));
  env.enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage(dir.string());
  env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
}

// Every _metadata under `dir` names files of the sizes and checksums it says.
void expectEveryMetadataNamesWholeFiles(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() != "_metadata") continue;
    const std::string chk = e.path().parent_path().string();
    EXPECT_NO_THROW(checkpoint::verifyCheckpoint(chk, checkpoint::readMetadata(chk)))
        << chk << " names missing, short or damaged files";
  }
}

std::string backendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

// Runs a job on `backend` from `restorePath` to the end of its input at full speed,
// with the default file system, committing into `committed`.
void resume(const fs::path& dir, const std::string& backend, const std::string& restorePath, int64_t n,
            std::shared_ptr<Committed> committed) {
  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir, backend);
  env.setRestartStrategy(RestartStrategy::noRestart());
  env.setRestorePath(restorePath);
  addJob(env, n, 100000, TransactionalSink(std::move(committed)));
  try {
    EXPECT_EQ(env.execute("resumed").status, JobStatus::FINISHED);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the resumed job failed: " << e.what();
  }
}

// The first run is stopped (cancelled or crashed) long before its input ends: ended,
// it would remove its checkpoints. The resumed run reads the rest at full speed.
constexpr double kFirstRunRate = 2000;  // records per second until the test stops it

// Writes, fsyncs and renames that fail here and there, and a full disk: each fails its
// checkpoint (tolerated), none leaves a _metadata naming missing or short files, and
// the checkpoints written around them restore exactly: once every fault was injected and
// two more checkpoints were written, the job is cancelled and resumed from its latest.
class StorageFaults : public ::testing::TestWithParam<std::string> {};

TEST_P(StorageFaults, FailedCheckpointWritesAreToleratedAndTheJobResumesExactly) {
  // Five faults and two more checkpoints take seconds (more under ThreadSanitizer).
  constexpr int64_t kRecords = 240000;
  const std::string backend = GetParam();
  Failures::reset({});
  fs::path dir = freshFolder("faults-storage-" + backend);
  auto disk = std::make_shared<FaultInjectingFileSystem>();
  disk->failNth(Op::kSync, 3, std::errc::io_error, "-state");
  disk->failNth(Op::kRename, 2, std::errc::io_error, "_metadata");
  disk->failNth(Op::kWrite, 25, std::errc::io_error);
  disk->failNth(Op::kSyncDirectory, 30, std::errc::io_error);
  disk->failNth(Op::kWrite, 60, std::errc::no_space_on_device);
  constexpr size_t kFaults = 5;
  std::mutex mutex;
  std::condition_variable cv;
  int64_t metadataWritten = 0;  // guarded by mutex: _metadata files renamed into place
  bool ended = false;           // guarded by mutex
  disk->setObserver([&](Op op, const std::string& path, std::error_code ec) {
    if (op != Op::kRename || ec || !path.ends_with("/_metadata")) return;
    std::lock_guard lock(mutex);
    ++metadataWritten;
    cv.notify_all();
  });

  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir, backend);
  env.getCheckpointConfig().setTolerableCheckpointFailureNumber(100);
  env.setRestartStrategy(RestartStrategy::noRestart());  // a failed checkpoint must not fail the job
  auto committed = std::make_shared<Committed>();
  useFileSystem(addJob(env, kRecords, kFirstRunRate, TransactionalSink(committed)), disk);
  auto client = env.executeAsync("storage faults");
  {
    JobEnd end(client, [&] {
      std::lock_guard lock(mutex);
      ended = true;
      cv.notify_all();
    });
    // Waits for each _metadata written (the file system's lock is not taken with ours).
    int64_t seen = 0, afterTheFaults = -1;
    while (true) {
      {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return ended || metadataWritten > seen; });
        if (ended) break;
        seen = metadataWritten;
      }
      if (afterTheFaults < 0 && disk->failures().size() == kFaults) afterTheFaults = seen;
      if (afterTheFaults >= 0 && seen >= afterTheFaults + 2) break;
    }
    {
      std::lock_guard lock(mutex);
      ASSERT_FALSE(ended) << "the job ended before two checkpoints completed after the last fault";
    }
    client.cancel();
  }
  ASSERT_EQ(disk->failures().size(), kFaults) << "the job ended before every fault was injected";
  EXPECT_GE(client.getMetrics().numberOfFailedCheckpoints, 1);
  expectEveryMetadataNamesWholeFiles(dir);
  const std::string latest = checkpoint::findLatestCheckpoint(dir.string());
  ASSERT_FALSE(latest.empty());

  auto resumed = std::make_shared<Committed>();
  resumed->out = committed->out;
  resumed->transactions = committed->transactions;
  resume(dir, backend, latest, kRecords, resumed);
  Verdict v = check(resumed->out, kRecords);
  EXPECT_TRUE(v.exact()) << v;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, StorageFaults, ::testing::Values("heap", "rocksdb_incremental"), backendName);

// Where a crash happens, and the checkpoint the disk must hold as the latest afterwards.
struct CrashPoint {
  std::string name;
  std::string syncPoint;
  int64_t latestAfter;  // relative to the checkpoint the crash is in: 0 it, -1 the one before
};
void PrintTo(const CrashPoint& point, std::ostream* os) { *os << point.name; }

class CrashRecovery : public ::testing::TestWithParam<std::tuple<CrashPoint, std::string>> {};

// The crash test: a job with checkpoints runs; at an exact step of checkpoint
// kCrashIn the process "dies" — nothing more reaches the disk or the sink, and every byte
// and name not made durable is lost — and a new job resumes from the latest checkpoint
// on the disk. The sink's output over both runs is exactly a failure-free run's.
TEST_P(CrashRecovery, ResumingFromTheLatestCheckpointOnTheDiskGivesExactOutput) {
  if (!core::SyncPoints::enabled())
    GTEST_SKIP() << "needs sync points, compiled out of Release builds (make tsan runs this)";
  constexpr int64_t kCrashIn = 3;
  // The crash comes at the third checkpoint, within seconds even under ThreadSanitizer
  // (make tsan) on a loaded machine, and a minute before the input would end; resuming
  // reads the rest at full speed.
  constexpr int64_t kRecords = 30000;
  constexpr double kFirstRunRate = 500;
  const auto& [crash, backend] = GetParam();
  Failures::reset({});
  fs::path dir = freshFolder("faults-crash-" + crash.name + "-" + backend);
  auto disk = std::make_shared<FaultInjectingFileSystem>();
  auto committed = std::make_shared<Committed>();

  std::mutex mutex;
  std::condition_variable cv;
  bool crashed = false, ended = false;  // guarded by mutex
  std::vector<Out> survived;            // guarded by mutex: what the sink had committed at the crash
  std::set<std::string> survivedTransactions;  // guarded by mutex
  core::ScopedSyncPoint point(crash.syncPoint, [&](void* arg) {
    if (*static_cast<int64_t*>(arg) != kCrashIn) return;
    std::lock_guard lock(mutex);
    if (crashed) return;  // another subtask got there first
    crashed = true;
    {
      // The sink's commits so far are in the external system; later ones come from a
      // process that is gone.
      std::lock_guard sink(committed->mutex);
      survived = committed->out;
      survivedTransactions = committed->transactions;
    }
    disk->crash();
    cv.notify_all();
  });

  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir, backend);
  env.setRestartStrategy(RestartStrategy::noRestart());  // the crashed job stops at its first failure
  useFileSystem(addJob(env, kRecords, kFirstRunRate, TransactionalSink(committed)), disk);
  auto client = env.executeAsync("crashes");
  {
    JobEnd end(client, [&] {
      std::lock_guard lock(mutex);
      ended = true;
      cv.notify_all();
    });
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return crashed || ended; });
    lock.unlock();
    client.cancel();
  }
  ASSERT_TRUE(disk->crashed()) << "the job ended before checkpoint " << kCrashIn;

  // What the disk holds now is what a machine that lost power there would find.
  const std::string latest = checkpoint::findLatestCheckpoint(dir.string());
  EXPECT_EQ(fs::path(latest).filename(), "chk-" + std::to_string(kCrashIn + crash.latestAfter))
      << "the latest checkpoint on the disk after the crash";
  expectEveryMetadataNamesWholeFiles(dir);
  ASSERT_FALSE(latest.empty());

  auto resumed = std::make_shared<Committed>();
  resumed->out = survived;
  resumed->transactions = survivedTransactions;
  resume(dir, backend, latest, kRecords, resumed);
  Verdict v = check(resumed->out, kRecords);
  EXPECT_TRUE(v.exact()) << v;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Points, CrashRecovery,
    ::testing::Combine(::testing::Values(CrashPoint{"AfterSnapshotTaken", "StreamTask::AfterSnapshotTaken", -1},
                                         CrashPoint{"AfterMetadataWritten",
                                                    "CheckpointCoordinator::AfterMetadataWritten", -1},
                                         CrashPoint{"AfterCompletionRecorded",
                                                    "CheckpointCoordinator::AfterCompletionRecorded", 0},
                                         CrashPoint{"BeforeNotifyComplete",
                                                    "CheckpointCoordinator::BeforeNotifyComplete", 0}),
                       ::testing::Values("heap", "rocksdb_incremental")),
    [](const auto& info) { return std::get<0>(info.param).name + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace weir::test
