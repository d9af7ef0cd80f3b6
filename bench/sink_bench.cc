#include "sink_bench.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "harness.h"
#include "weir/weir.h"

namespace weir::bench {

using namespace std::chrono_literals;

void fileSink(int runs) {
  const int64_t n = 30'000'000;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("weir-bench-file-sink-" + std::to_string(::getpid()));
  uint64_t engineBytes = 0, baselineBytes = 0;
  auto [engine, baseline] = medianSecondsInterleaved(runs, [&] {
    fs::remove_all(dir);
    fs::create_directories(dir / "checkpoints");
    {
      StreamExecutionEnvironment env;
      env.setParallelism(1);
      env.enableCheckpointing(1s);
      env.getCheckpointConfig().setCheckpointStorage((dir / "checkpoints").string());
      env.fromSource(DataGeneratorSource([](int64_t i) { return i; }, n), WatermarkStrategy<int64_t>::noWatermarks(),
                     "gen")
          .sinkTo(FileSink<int64_t>::forRowFormat((dir / "out").string(), SimpleStringEncoder<int64_t>())
                      .withBucketAssigner(BasePathBucketAssigner<int64_t>())
                      .build());
      env.execute("file_sink");
    }
    engineBytes = 0;
    for (const auto& e : fs::directory_iterator(dir / "out")) engineBytes += e.file_size();
    fs::remove_all(dir);
  }, [&] {
    fs::create_directories(dir);
    const std::string path = (dir / "lines").string();
    std::FILE* out = std::fopen(path.c_str(), "wb");
    for (int64_t i = 0; i < n; ++i) {
      std::string line = std::to_string(i);
      line += '\n';
      std::fwrite(line.data(), 1, line.size(), out);
    }
    std::fclose(out);
    baselineBytes = fs::file_size(path);
    fs::remove_all(dir);
  });
  if (engineBytes != baselineBytes)
    std::fprintf(stderr, "file_sink: the sink wrote %llu bytes, the loop %llu\n",
                 static_cast<unsigned long long>(engineBytes), static_cast<unsigned long long>(baselineBytes));
  double e = static_cast<double>(n) / engine, b = static_cast<double>(n) / baseline;
  printFigure("file_sink", {{"parallelism", 1}, {"records", static_cast<double>(n)},
                            {"bytes", static_cast<double>(engineBytes)}, {"checkpoint_interval_ms", 1000},
                            {"records_per_s", e}, {"baseline_records_per_s", b}, {"ratio", b / e}});
}

}  // namespace weir::bench
