// FileSink's promise under failures: whatever fails (a user function, a write, an fsync,
// a rename, a full disk, a power cut at an exact step), the published part files hold
// every record of the completed checkpoints once and nothing else. The job is the
// recovery tests' (tests/support/recovery_job.h); what the files hold is checked against
// its brute force.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
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
using namespace std::chrono_literals;
using Op = FaultInjectingFileSystem::Op;

struct OutEncoder final : Encoder<Out> {
  void encode(const Out& o, std::string& out) override {
    out += std::to_string(o.key) + "," + std::to_string(o.value) + "," + std::to_string(o.kind) + "," +
           std::to_string(o.window) + "\n";
  }
};

// Small part files, so that files roll between checkpoints too.
FileSink<Out> fileSinkInto(const fs::path& out, uint64_t partSize = 2048) {
  return FileSink<Out>::forRowFormat(out.string(), OutEncoder())
      .withBucketAssigner(BasePathBucketAssigner<Out>())
      .withRollingPolicy(DefaultRollingPolicy::builder().withMaxPartSize(partSize).build())
      .build();
}

// A bulk format whose part files end with a footer that counts their records: a file
// cut short, or resumed, would have none or a wrong one.
struct FooterWriter final : BulkWriter<Out> {
  void addElement(const Out& o, std::string& out) override {
    OutEncoder().encode(o, out);
    ++records;
  }
  void finish(std::string& out) override { out += "#records " + std::to_string(records) + "\n"; }
  int64_t records = 0;
};
struct FooterWriterFactory final : BulkWriter<Out>::Factory {
  std::unique_ptr<BulkWriter<Out>> create() override { return std::make_unique<FooterWriter>(); }
};

// What the published files under `out` hold, sorted (the checker wants each key's counts
// in order; files of several runs have no order among them). A published line that is
// not a whole record fails the test; hidden files are counted. With `footers`, every
// file must end with FooterWriter's footer, counting its records.
struct Published {
  std::vector<Out> records;
  size_t hidden = 0;
  size_t files = 0;
};
Published published(const fs::path& out, bool footers = false) {
  Published p;
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    if (!e.is_regular_file()) continue;
    if (e.path().filename().string()[0] == '.') {
      ++p.hidden;
      continue;
    }
    ++p.files;
    std::ifstream in(e.path());
    int64_t lines = 0;
    bool footer = false;
    for (std::string line; std::getline(in, line);) {
      if (footers && !footer && line.rfind("#records ", 0) == 0) {
        footer = true;
        EXPECT_EQ(line, "#records " + std::to_string(lines)) << e.path();
        continue;
      }
      if (footer) ADD_FAILURE() << e.path() << " goes on after its footer";
      ++lines;
      Out o;
      char c1 = 0, c2 = 0, c3 = 0;
      std::stringstream s(line);
      if (!(s >> o.key >> c1 >> o.value >> c2 >> o.kind >> c3 >> o.window) || c1 != ',' || c2 != ',' || c3 != ',') {
        ADD_FAILURE() << e.path() << " holds a broken line: '" << line << "'";
        continue;
      }
      p.records.push_back(o);
    }
    if (footers && !footer) ADD_FAILURE() << e.path() << " has no footer";
  }
  std::sort(p.records.begin(), p.records.end(), [](const Out& a, const Out& b) {
    return std::tie(a.kind, a.key, a.window, a.value) < std::tie(b.kind, b.key, b.window, b.value);
  });
  return p;
}

void checkpointEvery20ms(StreamExecutionEnvironment& env, const fs::path& checkpoints) {
  fs::create_directories(checkpoints);
  env.setParallelism(2).setAutoWatermarkInterval(5ms);
  env.enableCheckpointing(20ms);
  env.getCheckpointConfig().setCheckpointStorage(checkpoints.string());
  env.getCheckpointConfig().setExternalizedCheckpointCleanup(ExternalizedCheckpointCleanup::RETAIN_ON_CANCELLATION);
}

// A user function throws at five records; each time the job restarts from its latest
// checkpoint, in the same process.
TEST(FileSinkRecovery, ExceptionsAtFiveRecordsLoseAndDoubleNothing) {
  constexpr int64_t kRecords = 30000;
  fs::path dir = freshFolder("file-sink-exceptions");
  Failures::reset({2500, 9000, 14000, 20000, 26000});
  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir / "checkpoints");
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(10, 0ms));
  addJob(env, kRecords, 20000, fileSinkInto(dir / "out"));
  EXPECT_EQ(env.execute("exceptions").status, JobStatus::FINISHED);
  EXPECT_EQ(Failures::thrown, 5);
  Published p = published(dir / "out");
  Verdict v = check(p.records, kRecords);
  EXPECT_TRUE(v.exact()) << v;
  fs::remove_all(dir);
}

// A bulk format: its part files roll at every checkpoint and are published whole, each
// with its footer, through five failures.
TEST(FileSinkRecovery, BulkFormatPartFilesArePublishedWholeThroughExceptions) {
  constexpr int64_t kRecords = 30000;
  fs::path dir = freshFolder("file-sink-bulk");
  Failures::reset({2500, 9000, 14000, 20000, 26000});
  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir / "checkpoints");
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(10, 0ms));
  addJob(env, kRecords, 20000,
         FileSink<Out>::forBulkFormat((dir / "out").string(), FooterWriterFactory())
             .withBucketAssigner(BasePathBucketAssigner<Out>())
             .build());
  EXPECT_EQ(env.execute("bulk").status, JobStatus::FINISHED);
  EXPECT_EQ(Failures::thrown, 5);
  Published p = published(dir / "out", true);
  Verdict v = check(p.records, kRecords);
  EXPECT_TRUE(v.exact()) << v;
  EXPECT_GT(p.files, 10u) << "part files should roll at each checkpoint";
  EXPECT_EQ(p.hidden, 0u);
  fs::remove_all(dir);
}

// Someone removes a part file the sink is writing (before the first checkpoint, so no
// completed checkpoint covers any of it): the checkpoint is declined, the job restarts
// and writes it again, and the output is exact.
TEST(FileSinkRecovery, APartFileThatDisappearsIsWrittenAgain) {
  constexpr int64_t kRecords = 30000;
  fs::path dir = freshFolder("file-sink-disappears");
  Failures::reset({});
  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir / "checkpoints");
  env.enableCheckpointing(1s);
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(3, 0ms));
  addJob(env, kRecords, 10000,
         FileSink<Out>::forRowFormat((dir / "out").string(), OutEncoder())
             .withBucketAssigner(BasePathBucketAssigner<Out>())
             .withRollingPolicy(OnCheckpointRollingPolicy::build())
             .build());
  auto client = env.executeAsync("disappears");
  size_t removed = 0;
  for (auto deadline = std::chrono::steady_clock::now() + 30s; removed == 0 && std::chrono::steady_clock::now() < deadline;) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir / "out", ec))
      if (e.path().filename().string()[0] == '.' && fs::remove(e.path(), ec)) ++removed;
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GT(removed, 0u);
  EXPECT_EQ(client.wait().status, JobStatus::FINISHED);
  EXPECT_GE(client.getMetrics().numRestarts, 1);
  Published p = published(dir / "out");
  Verdict v = check(p.records, kRecords);
  EXPECT_TRUE(v.exact()) << v;
  fs::remove_all(dir);
}

// The disk fails the sink's writes, an fsync and a rename, and runs full once: each
// failure fails the job, which restarts from its latest checkpoint.
struct DiskFault {
  std::string name;
  Op op;
  int nth;
  std::errc error;
  std::string pathPart;
  friend void PrintTo(const DiskFault& f, std::ostream* os) { *os << f.name; }
};
class FileSinkDiskFaults : public ::testing::TestWithParam<DiskFault> {};

TEST_P(FileSinkDiskFaults, AFailedWriteSyncOrRenameLosesAndDoublesNothing) {
  constexpr int64_t kRecords = 20000;
  const DiskFault& fault = GetParam();
  fs::path dir = freshFolder("file-sink-disk-" + fault.name);
  Failures::reset({});
  auto disk = std::make_shared<FaultInjectingFileSystem>();
  disk->failNth(fault.op, fault.nth, fault.error, fault.pathPart);
  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir / "checkpoints");
  env.setRestartStrategy(RestartStrategy::fixedDelayRestart(10, 0ms));
  useFileSystem(addJob(env, kRecords, 20000, fileSinkInto(dir / "out")), disk);
  EXPECT_EQ(env.execute("disk faults").status, JobStatus::FINISHED);
  bool injected = false;
  for (const auto& f : disk->failures()) injected = injected || f.op == fault.op;
  EXPECT_TRUE(injected) << "the fault was never injected";
  Published p = published(dir / "out");
  Verdict v = check(p.records, kRecords);
  EXPECT_TRUE(v.exact()) << v;
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FileSinkDiskFaults,
    ::testing::Values(DiskFault{"write", Op::kWrite, 40, std::errc::io_error, "/.part-"},
                      DiskFault{"full", Op::kWrite, 60, std::errc::no_space_on_device, "/.part-"},
                      DiskFault{"fsync", Op::kSync, 20, std::errc::io_error, "/.part-"},
                      DiskFault{"rename", Op::kRename, 10, std::errc::io_error, "/.part-"}),
    [](const auto& info) { return info.param.name; });

// The machine loses power at an exact step (the disk keeps only what was synced); the
// job resumed from the latest checkpoint on the disk publishes exactly the output.
struct CrashPoint {
  std::string name;
  std::string syncPoint;
  bool byCheckpointId;  // the point's argument is a checkpoint id (else: count the hits)
  int64_t at;           // the checkpoint id, or the hit
  friend void PrintTo(const CrashPoint& c, std::ostream* os) { *os << c.name; }
};
class FileSinkCrash : public ::testing::TestWithParam<CrashPoint> {};

TEST_P(FileSinkCrash, ResumingAfterAPowerCutPublishesExactlyTheOutput) {
  if (!core::SyncPoints::enabled())
    GTEST_SKIP() << "needs sync points, compiled out of Release builds (make tsan runs this)";
  constexpr int64_t kRecords = 20000;
  const CrashPoint& crash = GetParam();
  fs::path dir = freshFolder("file-sink-crash-" + crash.name);
  Failures::reset({});
  auto disk = std::make_shared<FaultInjectingFileSystem>();
  std::mutex mutex;
  std::condition_variable cv;
  bool crashed = false, ended = false;  // guarded by mutex
  int64_t hits = 0;                     // guarded by mutex
  core::ScopedSyncPoint point(crash.syncPoint, [&](void* arg) {
    std::lock_guard lock(mutex);
    if (crashed) return;
    if (crash.byCheckpointId ? *static_cast<int64_t*>(arg) != crash.at : ++hits != crash.at) return;
    crashed = true;
    disk->crash();
    cv.notify_all();
  });
  {
    StreamExecutionEnvironment env;
    checkpointEvery20ms(env, dir / "checkpoints");
    env.setRestartStrategy(RestartStrategy::noRestart());
    // Part files of 256 bytes: a checkpoint publishes several.
    useFileSystem(addJob(env, kRecords, 500, fileSinkInto(dir / "out", 256)), disk);
    auto client = env.executeAsync("crashes");
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
  ASSERT_TRUE(disk->crashed()) << "the job ended before the crash";
  disk->restart();
  const std::string latest = checkpoint::findLatestCheckpoint((dir / "checkpoints").string());
  ASSERT_FALSE(latest.empty());

  StreamExecutionEnvironment env;
  checkpointEvery20ms(env, dir / "checkpoints");
  env.setRestartStrategy(RestartStrategy::noRestart());
  env.setRestorePath(latest);
  addJob(env, kRecords, 100000, fileSinkInto(dir / "out", 256));
  EXPECT_EQ(env.execute("resumed").status, JobStatus::FINISHED);
  Published p = published(dir / "out");
  Verdict v = check(p.records, kRecords);
  EXPECT_TRUE(v.exact()) << v;
  EXPECT_EQ(p.hidden, 0u) << "the resumed job left hidden part files";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Points, FileSinkCrash,
    ::testing::Values(CrashPoint{"AfterPrepareCommit", "FileSink::AfterPrepareCommit", false, 7},
                      CrashPoint{"AfterMetadataWritten", "CheckpointCoordinator::AfterMetadataWritten", true, 4},
                      CrashPoint{"BeforeNotifyComplete", "CheckpointCoordinator::BeforeNotifyComplete", true, 4},
                      CrashPoint{"HalfwayThroughPublishing", "FileSink::AfterPublish", false, 3}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace weir::test
