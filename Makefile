# The two commands of the README, and a few more.
#   make run     set up, build, and run the demo job
#   make test    set up, build, and run every test
#   make bench   build and run the benchmarks (make bench ONLY=chain,keyed_sum)

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all setup build run test tsan bench clean

all: build

setup:
	@scripts/setup

# Configure once; later builds let Ninja decide what changed.
$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: setup $(BUILD)/build.ninja
	@ninja -C $(BUILD)

run: build
	$(BUILD)/bin/weir run clicks

test: build
	cd $(BUILD) && ctest -j$(JOBS) --output-on-failure --timeout 300

# The concurrency-heavy tests (runtime, whole jobs) under ThreadSanitizer.
# The concurrency-heavy tests under ThreadSanitizer; of the recovery matrix, every heap
# case and the RocksDB ones at p = 2 (RocksDB under TSan is slow; the full matrix runs
# in make test).
tsan: setup
	@[ -f build-tsan/build.ninja ] || cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEIR_SANITIZE=thread
	@ninja -C build-tsan runtime_test api_test state_test recovery_test
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/scripts/tsan.supp" ctest -j$(JOBS) --output-on-failure --timeout 600 -R '^(Channel|WatermarkValve|DataStream|KeyedStream|JobFailure|Watermarks|EventTimeTimers|Backends/EventTimeTimersOn|Windows|SessionWindows|IntervalJoin|WindowJoin|WindowCoGroup|CountWindows|Triggers|SessionTriggers|WindowFunctionState|Evictors|Backends/ProcessingTimeOn|KeyedCoProcess|BroadcastState|BackendsAndParallelism/KeyedStateJobTest|Backends/StateSnapshotTest|RecoveryChecker|Cancellation|CheckpointFailures|LateDataAcrossRestores|RetainedCheckpoint|IncrementalCheckpoints|ConcurrentCheckpoints|UnalignedCheckpoints|TwoInputs|ChannelAnnouncement)\.|^BackendsAndParallelism/ExactlyOnceRecovery\.OutputEqualsAFailureFreeRun/(heap_p[124]|rocksdb_p2|rocksdb_incremental_p2)_'

bench: setup $(BUILD)/build.ninja
	@ninja -C $(BUILD) weir_bench
	$(BUILD)/bench/weir_bench $(if $(ONLY),--only $(ONLY))

clean:
	rm -rf $(BUILD)
