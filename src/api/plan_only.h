// `weir info`: a program's job is planned and printed instead of run (Flink's
// `flink info`, whose plan environment stops the program at execute()).
#pragma once

#include <exception>
#include <functional>
#include <string>

namespace weir::api {

// While `print` is set, executeAsync() (and so execute()) hands it the job's
// getExecutionPlan() and throws PlanPrinted instead of starting the job; an empty
// function runs jobs again. For the weir program only.
void printPlansInsteadOfRunning(std::function<void(const std::string& plan)> print);
// The function set, or an empty one.
std::function<void(const std::string& plan)> planPrinter();

// What executeAsync() throws once it has printed the plan.
struct PlanPrinted : std::exception {
  const char* what() const noexcept override { return "the job's plan was printed instead of running it"; }
};

}  // namespace weir::api
