// Word count: reads text from a file or a folder and counts words with a rolling sum.
//
//   weir run wordcount --input README.md
//   weir run wordcount --input docs/ --output /tmp/counts -p 2
//
// Like Flink's streaming WordCount, it emits the updated count of a word each time the
// word is seen; the last line for a word is its total.
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "cli/examples.h"
#include "cli/interrupt.h"
#include "tokenizer.h"
#include "weir/weir.h"

namespace weir::cli {

namespace {

// The output folder, made if missing: a path that can never take part files is a bad
// option (exit code 2) before the job starts, not a failure of every attempt.
void prepareOutput(const std::string& output) {
  std::error_code ec;
  if (std::filesystem::exists(output, ec) && !std::filesystem::is_directory(output, ec))
    throw Error(ErrorCode::kInvalidArgument, "--output '" + output + "' is a file; give a folder for the part files");
  std::filesystem::create_directories(output, ec);
  if (ec) throw Error(ErrorCode::kInvalidArgument, "--output '" + output + "' cannot be made: " + ec.message());
  if (::access(output.c_str(), W_OK | X_OK) != 0)
    throw Error(ErrorCode::kInvalidArgument, "--output '" + output + "' is not writable");
}

int runWordCount(const JobOptions& options, const std::string& input, const std::string& output) {
  if (!output.empty()) prepareOutput(output);
  StreamExecutionEnvironment env;
  env.setParallelism(1);
  options.applyTo(env);

  auto counts = countWords(
      env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), input).build(),
                     WatermarkStrategy<std::string>::noWatermarks(), "lines")
          .uid("lines"));
  if (output.empty()) counts.print().uid("print");
  else
    countsIntoFiles(counts, output);
  auto client = env.executeAsync("word count");
  cancelOnInterrupt(client);
  if (!client.getWebInterfaceURL().empty()) std::fprintf(stderr, "Web UI: %s\n", client.getWebInterfaceURL().c_str());
  client.wait();
  return 0;
}

}  // namespace

Example wordCountExample() {
  return {"wordcount", "Count the words of a text file or of every file in a folder", [](JobOptions& app) {
            auto input = std::make_shared<std::string>();
            auto output = std::make_shared<std::string>();
            app.addOption("-i,--input", *input, "A text file, or a folder whose files are all read").required();
            app.addOption("-o,--output", *output, "A folder for the counts (part files published at each checkpoint and at the end); default: print");
            return [input, output](const JobOptions& options) { return runWordCount(options, *input, *output); };
          }};
}

}  // namespace weir::cli
