#include "engine/routed_exchange.h"

#include <chrono>

#include "device/backoff.h"

namespace braid::engine {

namespace {

constexpr int kSendQueue = device::kQueueD2H;
constexpr int kForwardQueue = device::kQueueH2D;

char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }
const char* at(const void* base, size_t offset) { return static_cast<const char*>(base) + offset; }

}  // namespace

Result run_exchange(const route::ExchangePlan& plan, int rank, const ExchangeBuffers& buffers,
                    const ExchangeSignals& signals, uint64_t epoch, device::Backend* backend, double timeout_s) {
  const route::ExchangeLayout& l = plan.layout;
  const size_t n = size_t(l.ranks);
  if (rank < 0 || size_t(rank) >= n || buffers.send.size() != n || buffers.recv.size() != n || buffers.scratch.size() != n)
    return fail(Result::InvalidArgument, "routed exchange: buffers for %zu/%zu/%zu ranks, rank %d of %zu",
                buffers.send.size(), buffers.recv.size(), buffers.scratch.size(), rank, n);
  // This rank's receive buffer and scratch are free: the previous exchange finished here.
  signals.ready[size_t(rank)].store(epoch, std::memory_order_release);
  // First hops out of this rank's send buffer, each once its target has entered.
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.src != rank) continue;
    const char* from = at(buffers.send[size_t(t.src)], l.send_offset(t.src, t.dst) + t.begin);
    BRAID_TRY(backend->wait(kSendQueue, {&signals.ready[size_t(t.via < 0 ? t.dst : t.via)], epoch}));
    if (t.via < 0) {
      BRAID_TRY(backend->copy(kSendQueue, at(buffers.recv[size_t(t.dst)], l.recv_offset(t.src, t.dst) + t.begin), from,
                              t.bytes, {&signals.landed[i], epoch}));
    } else {
      BRAID_TRY(backend->copy(kSendQueue, at(buffers.scratch[size_t(t.via)], t.scratch_offset), from, t.bytes,
                              {&signals.relayed[i], epoch}));
    }
  }
  // Second hops of the ranges this rank relays, each once its first hop is in.
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.via != rank) continue;
    BRAID_TRY(backend->wait(kForwardQueue, {&signals.relayed[i], epoch}));
    BRAID_TRY(backend->wait(kForwardQueue, {&signals.ready[size_t(t.dst)], epoch}));
    BRAID_TRY(backend->copy(kForwardQueue, at(buffers.recv[size_t(t.dst)], l.recv_offset(t.src, t.dst) + t.begin),
                            at(buffers.scratch[size_t(rank)], t.scratch_offset), t.bytes, {&signals.landed[i], epoch}));
  }
  // Done when everything this rank receives has landed and everything it sends or relays has
  // left (its send buffer and scratch are then free again).
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const route::Transfer& t = plan.transfers[i];
    if (t.dst != rank && t.src != rank && t.via != rank) continue;
    std::atomic<uint64_t>& done = t.via >= 0 && t.src == rank ? signals.relayed[i] : signals.landed[i];
    device::Backoff backoff;
    while (done.load(std::memory_order_acquire) < epoch) {
      backoff.pause();
      if (!backoff.sleeping()) continue;
      std::string message;
      if (backend->status(&message) != Result::Success)
        return fail(Result::InternalError, "routed exchange: rank %d's device failed: %s", rank, message.c_str());
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
        return fail(Result::RemoteError, "routed exchange: rank %d waited %.0f s for transfer %zu (%d -> %d via %d)", rank,
                    timeout_s, i, t.src, t.dst, t.via);
    }
  }
  return Result::Success;
}

}  // namespace braid::engine
