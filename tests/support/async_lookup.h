// An outside service for async I/O tests: a pool of threads that answers each request
// after a short random delay, so answers come back out of order and while the job goes
// on, as a remote lookup's would.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "weir/weir.h"

namespace weir::test {

class LookupPool {
 public:
  LookupPool(int threads, int maxDelayMicros) {
    for (int i = 0; i < threads; ++i)
      threads_.emplace_back([this, maxDelayMicros, seed = i] {
        std::mt19937 rng(static_cast<unsigned>(seed));
        std::uniform_int_distribution<int> delay(0, maxDelayMicros);
        while (auto task = next()) {
          if (maxDelayMicros > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay(rng)));
          task();
        }
      });
  }
  // Drops the requests not started yet and waits for the rest.
  ~LookupPool() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
      tasks_.clear();
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  std::function<void()> next() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return stopped_ || !tasks_.empty(); });
    if (stopped_) return nullptr;
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    return task;
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

// Answers each record with {answer(record)} from a pool of its own (per subtask).
template <class IN, class OUT, class Answer>
class AnswerLater : public AsyncFunction<IN, OUT> {
 public:
  AnswerLater(Answer answer, int threads = 4, int maxDelayMicros = 200)
      : answer_(std::move(answer)), threads_(threads), maxDelayMicros_(maxDelayMicros) {}
  void open() override { pool_ = std::make_shared<LookupPool>(threads_, maxDelayMicros_); }
  void close() override { pool_.reset(); }
  void asyncInvoke(const IN& input, ResultFuture<OUT> result) override {
    pool_->submit([answer = answer_, input, result] { result.complete({answer(input)}); });
  }

 private:
  Answer answer_;
  int threads_;
  int maxDelayMicros_;
  std::shared_ptr<LookupPool> pool_;
};

template <class IN, class OUT, class Answer>
AnswerLater<IN, OUT, Answer> answerLater(Answer answer, int threads = 4, int maxDelayMicros = 200) {
  return AnswerLater<IN, OUT, Answer>(std::move(answer), threads, maxDelayMicros);
}

}  // namespace weir::test
