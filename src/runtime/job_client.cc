#include "weir/job_client.h"

#include "runtime/job_execution.h"

namespace weir {

const char* toString(JobStatus status) {
  switch (status) {
    case JobStatus::RUNNING: return "RUNNING";
    case JobStatus::RESTARTING: return "RESTARTING";
    case JobStatus::FINISHED: return "FINISHED";
    case JobStatus::CANCELLING: return "CANCELLING";
    case JobStatus::CANCELED: return "CANCELED";
    case JobStatus::FAILING: return "FAILING";
    case JobStatus::FAILED: return "FAILED";
  }
  return "UNKNOWN";
}

JobClient::JobClient(std::shared_ptr<runtime::JobExecution> execution) : execution_(std::move(execution)) {}
const std::string& JobClient::getJobName() const { return execution_->jobName(); }
JobStatus JobClient::getJobStatus() const { return execution_->status(); }
void JobClient::cancel() { execution_->cancel(); }
JobExecutionResult JobClient::wait() { return execution_->wait(); }
JobMetrics JobClient::getMetrics() const { return execution_->metrics(); }
const std::string& JobClient::getJobID() const { return execution_->jobId(); }
std::string JobClient::getWebInterfaceURL() const { return execution_->webInterfaceUrl(); }
void JobClient::stop() { execution_->stop(); }
std::future<std::string> JobClient::triggerSavepoint(const std::string& savepointDirectory,
                                                     SavepointFormatType formatType) {
  return execution_->triggerSavepoint(savepointDirectory, formatType, false, false);
}
std::future<std::string> JobClient::stopWithSavepoint(bool advanceToEndOfEventTime,
                                                      const std::string& savepointDirectory,
                                                      SavepointFormatType formatType) {
  return execution_->triggerSavepoint(savepointDirectory, formatType, true, advanceToEndOfEventTime);
}

}  // namespace weir
