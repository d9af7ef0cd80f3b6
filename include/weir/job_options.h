// The options of a job that is its own program: the command line `weir run` gives the
// bundled examples (-p, checkpoints, restore, savepoints, state backend, REST), a
// configuration file and dynamic properties with Flink's key names, and the program's
// own options, all from one call.
//
//   int main(int argc, char** argv) {
//     std::string input;
//     weir::JobOptions options("Counts the words of a file");
//     options.addOption("-i,--input", input, "The file to read").required();
//     options.parseArgs(argc, argv);  // --help, or a bad option: prints, exits
//     weir::StreamExecutionEnvironment env;
//     options.applyTo(env);
//     ...
//   }
//
// Where a setting comes from, weakest first: the key's default; the configuration file
// in $WEIR_CONF_DIR (config.yaml, else flink-conf.yaml); --config FILE; the YAML lines in
// $WEIR_PROPERTIES; -D key=value; a command-line option such as --checkpoint-interval.
// The keys are Flink's (execution.checkpointing.interval, state.backend.type, rest.port,
// ...; docs/configuration.md lists them all); an unknown key or a value of the wrong
// type is an error that names it and where it was set.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weir {

class StreamExecutionEnvironment;

class JobOptions {
 public:
  // `description` heads --help.
  explicit JobOptions(std::string description = "");
  JobOptions(JobOptions&&) noexcept;
  JobOptions& operator=(JobOptions&&) noexcept;
  ~JobOptions();

  // Parses a command line that has only weir's options; exits as parseArgs does.
  static JobOptions parse(int argc, const char* const* argv);

  // One of the program's own options, listed by --help after weir's.
  class Option {
   public:
    // The command line must give it.
    Option& required();

   private:
    friend class JobOptions;
    explicit Option(void* option) : option_(option) {}
    void* option_;
  };
  // `names` as "-i,--input"; `value` keeps its value when the option is not given.
  Option addOption(const std::string& names, std::string& value, const std::string& help);
  Option addOption(const std::string& names, int& value, const std::string& help);
  Option addOption(const std::string& names, int64_t& value, const std::string& help);
  Option addOption(const std::string& names, double& value, const std::string& help);
  Option addOption(const std::string& names, std::vector<std::string>& values, const std::string& help);
  Option addFlag(const std::string& names, bool& value, const std::string& help);

  // Reads the command line and the configuration. --help prints every option and exits
  // 0; a bad option, key or value prints one line naming it and exits 2.
  void parseArgs(int argc, const char* const* argv);
  // The same without exiting: false after printing --help; throws weir::Error
  // (kInvalidArgument) with the line parseArgs would print.
  bool tryParseArgs(int argc, const char* const* argv);

  // The program's name in messages (default: argv[0]'s file name).
  JobOptions& setProgramName(std::string name);

  // Sets one key, as -D key=value does (and over it); throws weir::Error for an unknown
  // key or a value of the wrong type.
  JobOptions& set(const std::string& key, const std::string& value);
  // Reads a YAML configuration file (Flink's config.yaml: nested or dotted keys; the
  // flat `key: value` lines of flink-conf.yaml are the same to it).
  JobOptions& loadConfigFile(const std::string& path);
  // The value a key has from any source, as text; nullopt when unset.
  std::optional<std::string> get(const std::string& key) const;
  // Every key weir knows, in the order docs/configuration.md lists them.
  static std::vector<std::string> keys();

  // The parallelism given (-p, parallelism.default), or 0.
  int parallelism() const;
  // Whether the job starts from a savepoint or checkpoint (-s, --restore latest).
  bool restores() const;

  // Sets up `env`: parallelism and max parallelism (only where given), network memory,
  // buffer timeout, watermark interval, state backend, checkpoints, restart strategy,
  // the snapshot to start from and the REST API (served by default, as by `weir run`);
  // and has executeAsync print the job's id and REST address. Throws weir::Error for
  // options that do not fit together.
  void applyTo(StreamExecutionEnvironment& env) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir
