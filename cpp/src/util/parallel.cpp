#include "ragcore/util/parallel.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace ragcore {

int hardware_threads() {
  // Asked once: glibc reads /sys for it, a cost a one-query search (two calls)
  // would otherwise pay every time.
  static const int hw = [] {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : static_cast<int>(n);
  }();
  return hw;
}

int resolve_threads(int n_threads) {
  const int hw = hardware_threads();
  return n_threads > 0 && n_threads < hw ? n_threads : hw;
}

namespace {

// Joins every started thread, whatever happens after they were started.
struct JoinAll {
  std::vector<std::thread>& threads;
  ~JoinAll() {
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }
};

}  // namespace

void parallel_for(size_t n_tasks, int n_threads,
                  const std::function<void(size_t task, int worker)>& fn) {
  if (n_tasks == 0) return;
  int workers = resolve_threads(n_threads);
  if (static_cast<size_t>(workers) > n_tasks) workers = static_cast<int>(n_tasks);
  if (workers == 1) {
    for (size_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&](int worker) {
    try {
      for (size_t t = next++; t < n_tasks; t = next++) fn(t, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = n_tasks;
    }
  };
  std::vector<std::thread> threads;
  std::string spawn_error;
  {
    threads.reserve(workers - 1);
    JoinAll join{threads};
    for (int w = 1; w < workers; ++w) {
      try {
        threads.emplace_back(run, w);
      } catch (const std::system_error& e) {
        spawn_error = e.what();  // the threads started so far (and this one) do the work
        break;
      }
    }
    run(0);
  }
  if (error) std::rethrow_exception(error);
  if (!spawn_error.empty())
    throw std::runtime_error("could not start a worker thread (" + spawn_error +
                             "); the call ran on " + std::to_string(threads.size() + 1) +
                             " threads and finished, but reports the failure");
}

}  // namespace ragcore
