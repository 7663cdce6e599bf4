#include "alltoallv.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "common/result.h"
#include "common/sizes.h"
#include "route/exchange_model.h"
#include "route/matrices.h"
#include "route/router.h"
#include "topo/topology.h"

namespace braid::sim {

namespace {

// The named matrix, scaled so that ranks send `bytes` each on average.
std::optional<route::Traffic> make_matrix(const std::string& spec, int n, double bytes, unsigned seed) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const double arg = colon == std::string::npos ? 0 : std::atof(spec.c_str() + colon + 1);
  route::Traffic t;
  if (name == "uniform") t = route::uniform(n, 1);
  else if (name == "zipf") t = route::zipf(n, seed, arg);
  else if (name == "hot-expert") t = route::one_hot_expert(n, 0);
  else if (name == "permutation") t = route::permutation(n, seed);
  else if (name == "hotspot") t = route::hotspot(n, 0, arg, 1);
  else if (name == "random") t = route::random_matrix(n, seed);
  else return std::nullopt;
  double total = 0;
  for (double b : t.bytes) total += b;
  for (double& b : t.bytes) b *= bytes * n / total;
  return t;
}

void print_pair(const topo::Topology& t, const route::RouterOptions& base, double bytes) {
  std::printf("# one pair (GPU 0 -> GPU 1), %.0f MB, direct link plus k relays\n", bytes / 1e6);
  std::printf("#%7s %12s %12s %14s\n", "relays", "time(us)", "GB/s", "busiest link");
  for (int k = 0;; ++k) {
    route::RouterOptions opt = base;
    opt.paths.max_relays = k;
    route::Router r;
    if (r.init(t, opt) != Result::Success) return;
    if (k > 0 && r.path_count(0, 1) <= k) break;  // no k-th relay
    route::Traffic traffic(r.ranks());
    traffic.at(0, 1) = bytes;
    route::Routing routing;
    route::ExchangePrediction p;
    if (r.solve(traffic, &routing) != Result::Success || predict_routed(t, r, traffic, routing, &p) != Result::Success) return;
    std::printf(" %7d %12.1f %12.1f %14s\n", k, p.seconds * 1e6, bytes / p.seconds / 1e9, p.busiest.c_str());
  }
}

}  // namespace

int run_alltoallv(const AlltoallvArgs& args) {
  topo::Topology t;
  if (topo::load_topology(args.topo, &t) != Result::Success) {
    std::fprintf(stderr, "braid-sim: %s\n", last_error());
    return 2;
  }
  const auto bytes = parse_byte_size(args.bytes), threshold = parse_byte_size(args.threshold);
  if (!bytes || !threshold) {
    std::fprintf(stderr, "braid-sim: bad size in --bytes %s / --threshold %s\n", args.bytes.c_str(), args.threshold.c_str());
    return 2;
  }
  route::RouterOptions opt;
  opt.paths.relay_efficiency = args.relay_efficiency;
  opt.direct_threshold = double(*threshold);
  std::printf("# braid-sim alltoallv: PREDICTED by a flow-level model (route/exchange_model.h), not measured.\n");
  std::printf("# topology %s, %d GPUs; relay hops at %.2f of link capacity; flows under %s go direct\n",
              t.name.c_str(), t.gpu_count(), args.relay_efficiency, args.threshold.c_str());
  if (args.pair) {
    print_pair(t, opt, double(*bytes));
    return 0;
  }
  route::Router router;
  if (router.init(t, opt) != Result::Success) {
    std::fprintf(stderr, "braid-sim: %s\n", last_error());
    return 1;
  }
  std::printf("# direct = NCCL-like (each pair on its default route); routed = NIMBLE's min-congestion routing\n");
  std::printf("#%13s %12s %11s %10s %16s %11s %10s %16s %8s\n", "matrix", "bytes/rank", "direct(us)", "algbw",
              "direct busiest", "routed(us)", "algbw", "routed busiest", "speedup");
  for (const std::string& spec : args.matrices) {
    const auto traffic = make_matrix(spec, router.ranks(), double(*bytes), args.seed);
    if (!traffic) {
      std::fprintf(stderr, "braid-sim: unknown matrix %s\n", spec.c_str());
      return 2;
    }
    route::Routing routing;
    route::ExchangePrediction direct, routed;
    if (predict_direct(t, *traffic, &direct) != Result::Success || router.solve(*traffic, &routing) != Result::Success ||
        predict_routed(t, router, *traffic, routing, &routed) != Result::Success) {
      std::fprintf(stderr, "braid-sim: %s\n", last_error());
      return 1;
    }
    // algbw as nccl-tests counts it for alltoall: the bytes each rank sends over the time.
    const double per_rank = double(*bytes);
    std::printf(" %13s %12zu %11.1f %10.2f %16s %11.1f %10.2f %16s %7.2fx\n", spec.c_str(), size_t(per_rank),
                direct.seconds * 1e6, per_rank / direct.seconds / 1e9, direct.busiest.c_str(), routed.seconds * 1e6,
                per_rank / routed.seconds / 1e9, routed.busiest.c_str(), direct.seconds / routed.seconds);
  }
  return 0;
}

}  // namespace braid::sim
