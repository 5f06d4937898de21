// One level of parallelism: a call spawns its workers and joins them before it
// returns. There is no persistent pool, so concurrent calls from several Python
// threads never share or nest a pool; callers give small work one thread so the
// spawn cost (tens of microseconds) never dominates.
#pragma once

#include <cstddef>
#include <functional>

namespace ragcore {

// The hardware threads of this machine (at least 1).
int hardware_threads();

// n_threads <= 0 means all hardware threads; more than the hardware has is capped at
// it (extra threads only share the same cores, and each costs a stack).
int resolve_threads(int n_threads);

// Runs fn(task, worker) for every task in [0, n_tasks) on up to n_threads workers
// (worker in [0, n_threads)); rethrows the first exception after all have joined.
// If the system refuses to create a thread, the workers already started finish the
// tasks, every thread is joined, and std::runtime_error is thrown (no task is lost,
// none runs twice, no thread is left joinable).
void parallel_for(size_t n_tasks, int n_threads,
                  const std::function<void(size_t task, int worker)>& fn);

}  // namespace ragcore
