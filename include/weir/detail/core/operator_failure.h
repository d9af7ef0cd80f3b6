// How a task's run ends other than by its input ending: a user function that threw
// (OperatorFailure), or a cancellation (TaskCancelled).
#pragma once

#include <string>

#include "weir/error.h"

namespace weir::detail {

// Unwinds a task whose job was cancelled; never a failure.
struct TaskCancelled {};

// A user function threw: names the operator and subtask, keeps the message.
class OperatorFailure : public Error {
 public:
  OperatorFailure(const std::string& operatorName, int subtask, int parallelism,
                  const std::string& message, std::string causeType = "")
      : Error(ErrorCode::kUserFunction,
              "operator '" + operatorName + "' (subtask " + std::to_string(subtask + 1) + "/" +
                  std::to_string(parallelism) + ") failed: " + message),
        operatorName_(operatorName), subtask_(subtask), parallelism_(parallelism), cause_(message),
        causeType_(std::move(causeType)) {}

  const std::string& operatorName() const { return operatorName_; }
  int subtask() const { return subtask_; }
  int parallelism() const { return parallelism_; }
  // What the user code threw, without the operator and subtask.
  const std::string& cause() const { return cause_; }
  // The C++ type of what the user code threw (demangled), when known.
  const std::string& causeType() const { return causeType_; }

 private:
  std::string operatorName_;
  int subtask_;
  int parallelism_;
  std::string cause_;
  std::string causeType_;
};

}  // namespace weir::detail
