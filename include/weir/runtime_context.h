// What a user function can ask about the subtask it runs in.
#pragma once

#include <string>

namespace weir {

// Identity of one parallel instance of an operator; given to rich functions before open().
class RuntimeContext {
 public:
  RuntimeContext(std::string taskName, int subtaskIndex, int parallelism, int maxParallelism)
      : taskName_(std::move(taskName)), subtaskIndex_(subtaskIndex), parallelism_(parallelism),
        maxParallelism_(maxParallelism) {}

  // 0-based index of this parallel instance.
  int getIndexOfThisSubtask() const { return subtaskIndex_; }
  int getNumberOfParallelSubtasks() const { return parallelism_; }
  int getMaxNumberOfParallelSubtasks() const { return maxParallelism_; }
  // The operator's name, as given by name() or its default.
  const std::string& getTaskName() const { return taskName_; }
  // "name (i/n)" with a 1-based index, as Flink prints it.
  std::string getTaskNameWithSubtasks() const {
    return taskName_ + " (" + std::to_string(subtaskIndex_ + 1) + "/" + std::to_string(parallelism_) + ")";
  }

 private:
  std::string taskName_;
  int subtaskIndex_;
  int parallelism_;
  int maxParallelism_;
};

}  // namespace weir
