#include "multipath/split_ledger.h"

#include <algorithm>

namespace braid::multipath {

std::vector<double> agreed_seconds(const std::vector<uint64_t>& nanoseconds) {
  if (std::find(nanoseconds.begin(), nanoseconds.end(), kUnmeasured) != nanoseconds.end()) return {};
  std::vector<double> seconds;
  seconds.reserve(nanoseconds.size());
  for (uint64_t ns : nanoseconds) seconds.push_back(static_cast<double>(ns) * 1e-9);
  return seconds;
}

SplitLedger::SplitLedger(std::unique_ptr<balance::SplitTable> table, int nranks, uint64_t lag, size_t align_bytes)
    : table_(std::move(table)), nranks_(nranks), lag_(std::max<uint64_t>(1, lag)), align_bytes_(align_bytes) {}

Result SplitLedger::next(Collective c, DataType type, size_t bytes, size_t count, LedgerCall* out) {
  if (applied_ < must_apply_through())
    return fail(Result::InternalError, "split ledger: call %llu needs the times of calls through %llu, %llu applied",
                static_cast<unsigned long long>(calls_ + 1), static_cast<unsigned long long>(must_apply_through()),
                static_cast<unsigned long long>(applied_));
  LedgerCall call;
  call.call = ++calls_;
  call.collective = c;
  call.type = type;
  call.bytes = bytes;
  call.used = table_->issue(c, type, bytes);
  const size_t align = std::max<size_t>(1, align_bytes_ / datatype_size(type));
  const std::vector<size_t> split = balance::split_elements(call.used, count, align);
  call.dedicated_elements = dedicated_only_ ? count : split[balance::kDedicatedPath];
  call.pcie_elements = count - call.dedicated_elements;
  if (call.pcie_elements > 0) {
    const uint64_t nth = with_pcie_[Kind{c, type, balance::size_bucket(bytes)}]++;
    call.timed = nth < kFirstTimed || nth % kTimeEvery == 0;
  }
  *out = std::move(call);
  return Result::Success;
}

Result SplitLedger::apply(const LedgerCall& call, const std::vector<double>& seconds, double* next_share,
                          bool beyond_lag) {
  if (call.call != applied_ + 1)
    return fail(Result::InternalError, "split ledger: call %llu applied out of order (next is %llu)",
                static_cast<unsigned long long>(call.call), static_cast<unsigned long long>(applied_ + 1));
  if (!beyond_lag && call.call > must_apply_through())
    return fail(Result::InternalError, "split ledger: call %llu applied before the lag (through %llu)",
                static_cast<unsigned long long>(call.call), static_cast<unsigned long long>(must_apply_through()));
  if (call.pcie_elements == 0) {
    // PCIe carried nothing: every balancer's rule then ignores the NVLink time; 1 s stands in.
    std::vector<double> stand_in(static_cast<size_t>(nranks_) * 2, 0.0);
    for (int q = 0; q < nranks_; ++q) stand_in[2 * static_cast<size_t>(q)] = 1.0;
    BRAID_TRY(table_->update_used(call.collective, call.type, call.bytes, call.used, stand_in, nranks_));
  } else if (!seconds.empty()) {
    BRAID_TRY(table_->update_used(call.collective, call.type, call.bytes, call.used, seconds, nranks_));
  }
  ++applied_;
  if (next_share != nullptr) *next_share = table_->shares_for(call.collective, call.type, call.bytes).fraction(1);
  return Result::Success;
}

}  // namespace braid::multipath
