// The job of the README: counts words in a text file and prints the rolling counts.
//   build/examples/first_job input.txt
#include <weir/weir.h>

#include <cctype>
#include <cstdio>
#include <utility>

using namespace weir;

using WordCount = std::pair<std::string, long>;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: first_job <text file>\n");
    return 2;
  }
  StreamExecutionEnvironment env;
  env.setParallelism(2);

  auto lines = env.fromSource(FileSource<std::string>::forRecordStreamFormat(TextLineInputFormat(), argv[1]).build(),
                              WatermarkStrategy<std::string>::noWatermarks(), "lines");

  lines.flatMap<WordCount>([](const std::string& line, Collector<WordCount>& out) {
         std::string word;
         for (char c : line + " ") {
           if (std::isalnum(static_cast<unsigned char>(c))) word += c;
           else if (!word.empty()) out.collect({std::exchange(word, {}), 1});
         }
       })
      .keyBy([](const WordCount& wc) { return wc.first; })
      .sum<1>()
      .print();

  try {
    env.execute("word count");
  } catch (const Error& e) {
    std::fprintf(stderr, "first_job: %s\n", e.what());
    return 1;
  }
}
