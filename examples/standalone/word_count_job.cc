// A job in a project of its own (examples/standalone/CMakeLists.txt): the running count of
// each word of a text file, printed as "(word, count)" lines, in event order per word.
//   word_count_job --input input.txt [-p 4] [--checkpoint-interval 10s] [-D key=value] ...
// It takes every option `weir run` gives the bundled examples (--help lists them).
#include <weir/job_options.h>
#include <weir/weir.h>

#include <cctype>
#include <cstdio>
#include <string>
#include <utility>

using namespace weir;

using WordCount = std::pair<std::string, long>;

int main(int argc, char** argv) {
  std::string input;
  JobOptions options("Prints the running count of each word of a text file");
  options.addOption("-i,--input", input, "The text file to read").required();
  options.parseArgs(argc, argv);  // --help, or a bad option: prints and exits
  try {
    StreamExecutionEnvironment env;
    env.setParallelism(2);  // unless -p says otherwise
    options.applyTo(env);
    env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), input).build(),
                   WatermarkStrategy<std::string>::noWatermarks(), "lines")
        .flatMap<WordCount>([](const std::string& line, Collector<WordCount>& out) {
          std::string word;
          for (char c : line + " ") {
            if (std::isalnum(static_cast<unsigned char>(c))) word += static_cast<char>(std::tolower(c));
            else if (!word.empty()) out.collect({std::exchange(word, {}), 1});
          }
        })
        .keyBy([](const WordCount& w) { return w.first; })
        .sum(&WordCount::second)
        .print();
    env.execute("word count job");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "word_count_job: %s\n", e.what());
    return 1;
  }
  return 0;
}
