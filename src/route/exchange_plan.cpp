#include "route/exchange_plan.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace braid::route {

size_t ExchangeLayout::send_offset(int s, int d) const {
  size_t off = 0;
  for (int q = 0; q < d; ++q) off += count(s, q);
  return off * element_bytes;
}

size_t ExchangeLayout::recv_offset(int s, int d) const {
  size_t off = 0;
  for (int q = 0; q < s; ++q) off += count(q, d);
  return off * element_bytes;
}

size_t ExchangeLayout::send_bytes(int s) const { return send_offset(s, ranks - 1) + count(s, ranks - 1) * element_bytes; }

size_t ExchangeLayout::recv_bytes(int d) const { return recv_offset(ranks - 1, d) + count(ranks - 1, d) * element_bytes; }

Result build_exchange_plan(const Router& router, const Routing& routing, const ExchangeLayout& layout,
                           const ExchangePlanOptions& options, ExchangePlan* out) {
  const int n = layout.ranks;
  if (n != router.ranks() || layout.counts.size() != size_t(n) * size_t(n) || layout.element_bytes == 0)
    return fail(Result::InvalidArgument, "exchange plan: layout for %d ranks, router has %d", n, router.ranks());
  if (routing.fraction.size() != size_t(router.total_paths()))
    return fail(Result::InvalidArgument, "exchange plan: routing does not match the router");
  out->layout = layout;
  out->transfers.clear();
  out->scratch_bytes.assign(size_t(n), 0);
  const size_t unit = layout.element_bytes;
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      const size_t total = layout.count(s, d) * unit;
      if (s == d || total == 0) {
        if (total > 0) out->transfers.push_back({s, d, -1, 0, total, 0});  // a rank's own block
        continue;
      }
      const std::vector<Path>& paths = router.paths().of(s, d);
      const int first = router.path_offset(s, d);
      // Whole elements per path by fraction; ranges under the minimum go to path 0; path 0 (or
      // the last path with a share) takes what rounding leaves.
      std::vector<size_t> share(paths.size(), 0);
      size_t given = 0;
      for (size_t p = 1; p < paths.size(); ++p) {
        const double f = routing.fraction[size_t(first) + p];
        size_t bytes = size_t(std::floor(f * double(layout.count(s, d)))) * unit;
        if (bytes < options.min_range_bytes) bytes = 0;
        share[p] = bytes;
        given += bytes;
      }
      share[0] = total - given;
      size_t begin = 0;
      for (size_t p = 0; p < paths.size(); ++p) {
        if (share[p] == 0) continue;
        Transfer tr{s, d, -1, begin, share[p], 0};
        if (paths[p].kind == PathKind::Relay) {
          tr.via = paths[p].via;
          tr.scratch_offset = out->scratch_bytes[size_t(tr.via)];
          out->scratch_bytes[size_t(tr.via)] += share[p];
        }
        out->transfers.push_back(tr);
        begin += share[p];
      }
    }
  }
  return check_exchange_plan(*out);
}

Result route_exchange(Router& router, const ExchangeLayout& layout, const ExchangePlanOptions& options,
                      Routing* routing, ExchangePlan* out) {
  if (layout.counts.size() != size_t(layout.ranks) * size_t(layout.ranks))
    return fail(Result::InvalidArgument, "exchange plan: %zu counts for %d ranks", layout.counts.size(), layout.ranks);
  Traffic traffic(layout.ranks);
  for (int s = 0; s < layout.ranks; ++s)
    for (int d = 0; d < layout.ranks; ++d) traffic.at(s, d) = double(layout.block_bytes(s, d));
  BRAID_TRY(router.solve(traffic, routing));
  return build_exchange_plan(router, *routing, layout, options, out);
}

namespace {

// A byte range [begin, end) some transfer writes.
struct Written {
  size_t begin = 0, end = 0;
  size_t transfer = 0;
};

// The ranges one buffer of `bytes` receives, sorted: an error at the first byte two of them write,
// or (with `whole`) at the first byte none writes. What the drop-in proves on every routed call, so
// it costs the transfers' count, never the bytes'.
Result check_ranges(std::vector<Written>& ranges, size_t bytes, bool whole, const char* what, int rank) {
  std::sort(ranges.begin(), ranges.end(), [](const Written& a, const Written& b) { return a.begin < b.begin; });
  size_t covered = 0;  // every byte before it is written (whole) or the furthest end so far
  const Written* last = nullptr;
  for (const Written& w : ranges) {
    if (last != nullptr && w.begin < last->end)
      return fail(Result::InvalidArgument, "exchange plan: transfers %zu and %zu both write byte %zu of rank %d's %s",
                  last->transfer, w.transfer, w.begin, rank, what);
    if (whole && w.begin > covered)
      return fail(Result::InvalidArgument, "exchange plan: byte %zu of rank %d's %s is never written", covered, rank, what);
    covered = std::max(covered, w.end);
    last = &w;
  }
  if (whole && covered < bytes)
    return fail(Result::InvalidArgument, "exchange plan: byte %zu of rank %d's %s is never written", covered, rank, what);
  return Result::Success;
}

}  // namespace

Result check_exchange_plan(const ExchangePlan& plan) {
  const ExchangeLayout& l = plan.layout;
  const int n = l.ranks;
  if (plan.scratch_bytes.size() != size_t(n)) return fail(Result::InvalidArgument, "exchange plan: scratch sizes for %zu ranks, not %d", plan.scratch_bytes.size(), n);
  // Per rank, the receive ranges final hops write and the scratch ranges relays fill.
  std::vector<std::vector<Written>> written(static_cast<size_t>(n)), scratch(static_cast<size_t>(n));
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const Transfer& t = plan.transfers[i];
    if (t.src < 0 || t.src >= n || t.dst < 0 || t.dst >= n)
      return fail(Result::InvalidArgument, "exchange plan: transfer %zu has ranks %d -> %d of %d", i, t.src, t.dst, n);
    const size_t block = l.count(t.src, t.dst) * l.element_bytes;
    if (t.bytes == 0 || t.begin % l.element_bytes || t.bytes % l.element_bytes || t.begin + t.bytes > block)
      return fail(Result::InvalidArgument, "exchange plan: transfer %zu (%d -> %d) range [%zu, +%zu) is not whole elements of its %zu-byte block",
                  i, t.src, t.dst, t.begin, t.bytes, block);
    if (t.via >= 0) {
      if (t.via >= n || t.via == t.src || t.via == t.dst)
        return fail(Result::InvalidArgument, "exchange plan: transfer %zu (%d -> %d) relays through rank %d", i, t.src, t.dst, t.via);
      if (t.scratch_offset + t.bytes > plan.scratch_bytes[size_t(t.via)])
        return fail(Result::InvalidArgument, "exchange plan: transfer %zu overruns rank %d's %zu scratch bytes", i, t.via,
                    plan.scratch_bytes[size_t(t.via)]);
      scratch[size_t(t.via)].push_back({t.scratch_offset, t.scratch_offset + t.bytes, i});
    }
    // The final hop writes recv_offset + begin from send_offset + begin: in place, and the
    // receive byte at that position is the send byte at the same position by construction.
    const size_t at = l.recv_offset(t.src, t.dst) + t.begin;
    written[size_t(t.dst)].push_back({at, at + t.bytes, i});
  }
  for (int r = 0; r < n; ++r) {
    BRAID_TRY(check_ranges(scratch[size_t(r)], plan.scratch_bytes[size_t(r)], false, "scratch", r));
    BRAID_TRY(check_ranges(written[size_t(r)], l.recv_bytes(r), true, "receive buffer", r));
  }
  return Result::Success;
}

}  // namespace braid::route
