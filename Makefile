# The two commands of the README, and a few more.
#   make run     set up, build, and run the demo job
#   make test    set up, build, and run every test
#   make bench   build and run the benchmarks (make bench ONLY=chain,keyed_sum)
#   make install PREFIX=P   install the library, headers, CMake and pkg-config files, and weir
#   make chaos   the full chaos suite (tests/chaos/): at least 100 faults, a JSON line per scenario

BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release

.PHONY: all setup build run test tsan bench chaos install clean

PREFIX ?= /usr/local

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

# The concurrency-heavy tests under ThreadSanitizer: those labelled `tsan` (the TSAN
# argument of weir_add_test in the CMakeLists.txt files says which cases of each binary).
tsan: setup
	@[ -f build-tsan/build.ninja ] || cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEIR_SANITIZE=thread
	@ninja -C build-tsan tsan_tests
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/scripts/tsan.supp" ctest -j$(JOBS) --output-on-failure --timeout 600 -L tsan

bench: setup $(BUILD)/build.ninja
	@ninja -C $(BUILD) weir_bench
	$(BUILD)/bench/weir_bench $(if $(ONLY),--only $(ONLY))

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

chaos: build
	$(BUILD)/tests/weir_chaos

clean:
	rm -rf $(BUILD)
