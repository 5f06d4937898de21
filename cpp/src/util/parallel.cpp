#include "ragcore/util/parallel.h"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ragcore {

int resolve_threads(int n_threads) {
  if (n_threads > 0) return n_threads;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

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
  threads.reserve(workers - 1);
  for (int w = 1; w < workers; ++w) threads.emplace_back(run, w);
  run(0);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace ragcore
