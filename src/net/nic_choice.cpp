#include "net/nic_choice.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace braid::net {

Schedule parse_schedule(const char* text) {
  if (std::strcmp(text, "direct") == 0) return Schedule::Direct;
  if (std::strcmp(text, "stripe") == 0) return Schedule::Stripe;
  return Schedule::FuseLink;
}

uint32_t choose_nics(Schedule schedule, const ChoiceInput& in) {
  const uint32_t all = in.nic_count >= 32 ? ~0u : (1u << in.nic_count) - 1;
  const uint32_t direct = 1u << in.direct;
  if (schedule == Schedule::Direct || in.nic_count == 1) return direct;
  if (schedule == Schedule::Stripe) return in.bytes >= in.stripe_min_bytes ? all : direct;
  const uint32_t usable = in.local_idle & in.remote_idle & all;
  const bool large = in.bytes >= in.stripe_min_bytes;
  if (usable & direct) return large ? usable : direct;
  if (usable == 0) return direct;
  if (large) return usable;
  // One idle indirect NIC, taken in turn so small messages spread over all of them.
  int count = std::popcount(usable);
  int pick = int(in.rotate % uint32_t(count));
  uint32_t m = usable;
  for (int i = 0; i < pick; ++i) m &= m - 1;
  return m & -m;
}

ChoiceDamper::ChoiceDamper(int64_t base_hold_ns, int64_t max_hold_ns)
    : base_(std::max<int64_t>(base_hold_ns, 1)), max_(std::max(max_hold_ns, base_hold_ns)) {}

uint32_t ChoiceDamper::filter(uint32_t idle, int nic_count, int64_t now) {
  uint32_t usable = 0;
  for (int n = 0; n < std::min(nic_count, kNics); ++n) {
    if (!(idle & (1u << n))) {
      // Busy again within a few holds of coming free: a flap.
      if (freed_at_[n] && now - freed_at_[n] < 4 * std::max(hold_[n], base_))
        hold_[n] = std::min(max_, hold_[n] ? 2 * hold_[n] : base_);
      freed_at_[n] = 0;
      busy_seen_[n] = now;
      continue;
    }
    if (busy_seen_[n] && !freed_at_[n]) freed_at_[n] = now;
    if (busy_seen_[n] && now - busy_seen_[n] < hold_[n]) continue;  // still held
    if (freed_at_[n] && hold_[n] && now - freed_at_[n] > 16 * hold_[n]) {  // long calm
      hold_[n] /= 2;
      freed_at_[n] = now;
      if (hold_[n] < base_) hold_[n] = 0;
    }
    usable |= 1u << n;
  }
  return usable;
}

std::vector<Piece> cut_message(uint32_t mask, size_t bytes, const std::vector<double>& weights,
                               int streams, size_t min_piece) {
  std::vector<int> nics;
  for (int i = 0; i < 32; ++i)
    if (mask & (1u << i)) nics.push_back(i);
  std::vector<Piece> pieces;
  if (nics.empty() || bytes == 0) {
    pieces.push_back({nics.empty() ? 0 : nics[0], 0, 0});
    return pieces;
  }
  min_piece = std::max<size_t>(min_piece, 1);
  streams = std::max(streams, 1);
  // No NIC gets less than one piece: drop NICs while the shares would be too small.
  while (nics.size() > 1 && bytes / nics.size() < min_piece) nics.pop_back();
  double total_weight = 0;
  for (int n : nics) total_weight += (size_t(n) < weights.size() && weights[n] > 0) ? weights[n] : 1.0;
  size_t offset = 0;
  for (size_t k = 0; k < nics.size(); ++k) {
    int n = nics[k];
    double w = (size_t(n) < weights.size() && weights[n] > 0) ? weights[n] : 1.0;
    size_t share = k + 1 == nics.size() ? bytes - offset : size_t(double(bytes) * w / total_weight);
    share = std::min(share, bytes - offset);
    if (k + 1 < nics.size()) share &= ~size_t(4095);  // page-aligned cuts where it matters
    if (share == 0) continue;
    size_t count = std::clamp<size_t>(share / min_piece, 1, size_t(streams));
    size_t each = (share + count - 1) / count;
    for (size_t done = 0; done < share; done += each) {
      size_t b = std::min(each, share - done);
      pieces.push_back({n, offset + done, b});
    }
    offset += share;
  }
  return pieces;
}

}  // namespace braid::net
