#include "shim/group_split.h"

#include <cuda_runtime.h>
#include <cxxabi.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/log.h"
#include "shim/braid_part.h"

namespace braid::shim {

std::vector<HeldCollective>& this_thread_held() {
  thread_local std::vector<HeldCollective> held;
  return held;
}

ncclResult_t hand_held_to_nccl(std::vector<HeldCollective>& held) { return each_to_nccl(held); }

namespace {

// One communicator's calls, in order, on the current thread (outside any group).
ncclResult_t run_in_order(const std::vector<const HeldCollective*>& calls) {
  ncclResult_t first = ncclSuccess;
  for (const HeldCollective* h : calls) {
    ncclResult_t r = ncclSuccess;
    if (!split_now(h->call, h->stream, &r)) r = h->to_nccl();
    if (first == ncclSuccess && r != ncclSuccess) first = r;
  }
  return first;
}

// The same on a thread of split_held's own, where an exception has no caller to reach and would
// end the process: it becomes the communicator's result.
ncclResult_t run_in_order_on_own_thread(const std::vector<const HeldCollective*>& calls) {
  try {
    return run_in_order(calls);
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (const std::exception& e) {
    BRAID_WARN(Shim, "multipath: a held collective failed inside braid: %s", e.what());
  } catch (...) {
    BRAID_WARN(Shim, "multipath: a held collective failed inside braid (not a std::exception)");
  }
  return ncclInternalError;
}

}  // namespace

ncclResult_t split_held(std::vector<HeldCollective> held) {
  // Per communicator, in the order of first appearance (every rank's thread sees the same order).
  std::vector<std::vector<const HeldCollective*>> per_comm;
  std::map<ncclComm_t, size_t> index;
  for (const HeldCollective& h : held) {
    auto [it, fresh] = index.try_emplace(h.comm, per_comm.size());
    if (fresh) per_comm.emplace_back();
    per_comm[it->second].push_back(&h);
  }
  BRAID_INFO(Shim, "multipath: a group of %zu collectives on %zu communicators, split on %zu threads",
             held.size(), per_comm.size(), per_comm.size());
  int device = 0;
  cudaGetDevice(&device);
  std::vector<ncclResult_t> results(per_comm.size(), ncclSuccess);
  // Every thread exists before any communicator's calls start: a rank whose thread could not be
  // made would leave the others waiting for it.
  std::mutex mutex;
  std::condition_variable started;
  int go = 0;  // 1: run, -1: give up
  std::vector<std::thread> threads;
  bool all_made = true;
  try {
    for (size_t i = 1; i < per_comm.size(); ++i)
      threads.emplace_back([&, i] {
        {
          std::unique_lock lock(mutex);
          started.wait(lock, [&] { return go != 0; });
          if (go < 0) return;
        }
        cudaSetDevice(device);  // as the caller's thread: NCCL calls made there see the same device
        results[i] = run_in_order_on_own_thread(per_comm[i]);
      });
  } catch (const std::system_error& e) {
    BRAID_WARN(Shim, "multipath: no thread for a group's communicator (%s); the group's %zu collectives were not run",
               e.what(), held.size());
    all_made = false;
  }
  {
    std::lock_guard lock(mutex);
    go = all_made ? 1 : -1;
  }
  started.notify_all();
  if (go > 0) results[0] = run_in_order(per_comm[0]);
  for (std::thread& t : threads) t.join();
  if (go < 0) return ncclSystemError;
  for (ncclResult_t r : results)
    if (r != ncclSuccess) return r;
  return ncclSuccess;
}

}  // namespace braid::shim
