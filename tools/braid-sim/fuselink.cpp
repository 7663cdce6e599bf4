#include "fuselink.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "common/result.h"
#include "common/sizes.h"
#include "net/fuselink_model.h"
#include "topo/topology.h"

namespace braid::sim {

namespace {

using net::ModelRequest;
using net::ModelResult;
using net::NicPolicy;

constexpr int kGpus = 8;  // GPUs per server on FuseLink's testbed; the scenarios are written for it

// The requests of a static scenario: all arrive at once, one queue per GPU (or per instance).
bool scenario_requests(const std::string& name, double bytes, unsigned seed, std::vector<ModelRequest>* out) {
  auto one = [&](int queue, std::vector<int> gpus, double b) { out->push_back({queue, std::move(gpus), b, 0}); };
  const auto colon = name.find(':');
  const std::string kind = name.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : name.substr(colon + 1);
  if (kind == "balanced") {
    for (int g = 0; g < kGpus; ++g) one(g, {g}, bytes);
  } else if (kind == "hot" && !arg.empty()) {
    const int k = std::stoi(arg);
    if (k < 1 || k > kGpus) return false;
    for (int g = 0; g < k; ++g) one(g, {g}, bytes);
  } else if (kind == "zipf" && !arg.empty()) {
    const double s = std::stod(arg);
    double sum = 0;
    for (int g = 0; g < kGpus; ++g) sum += 1 / std::pow(g + 1, s);
    for (int g = 0; g < kGpus; ++g) one(g, {g}, bytes * kGpus / std::pow(g + 1, s) / sum);
  } else if (kind == "random") {
    std::mt19937 rng(seed);
    for (int g = 0; g < kGpus; ++g) one(g, {g}, bytes * 2 * double(rng() % 1000 + 1) / 1001);
  } else if (kind == "tp") {
    int t = 0, active = 0;
    if (std::sscanf(arg.c_str(), "%d:%d", &t, &active) != 2 || t < 1 || kGpus % t || active < 1 || active > kGpus / t)
      return false;
    for (int i = 0; i < active; ++i) {
      std::vector<int> gpus;
      for (int j = 0; j < t; ++j) gpus.push_back(i * t + j);
      one(i, gpus, bytes);
    }
  } else {
    return false;
  }
  return true;
}

double mean_latency(const std::vector<ModelRequest>& reqs, const ModelResult& r) {
  double sum = 0;
  for (size_t i = 0; i < reqs.size(); ++i) sum += r.finish_s[i] - reqs[i].arrival_s;
  return reqs.empty() ? 0 : sum / double(reqs.size());
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

bool simulate(const topo::Topology& t, const std::vector<ModelRequest>& reqs, NicPolicy policy,
              const net::FuseLinkModelOptions& o, ModelResult* r) {
  if (net::simulate_fuselink(t, reqs, policy, o, r) == Result::Success) return true;
  std::fprintf(stderr, "braid-sim fuselink: %s\n", last_error());
  return false;
}

// The paper's microbenchmark: one GPU to one GPU of the other server over the first N NICs.
int run_single(const topo::Topology& t, const net::FuseLinkModelOptions& base, double bytes) {
  std::printf("# one GPU (gpu0 -> gpu8), %.0f MB, over the first N NICs of each server; GB/s\n", bytes / 1e6);
  std::printf("# FuseLink (paper): ~50 GB/s by default, up to 212 GB/s with 6 NICs; bound: direct NIC + NVLink\n");
  std::printf("# %4s %12s %12s %12s %8s\n", "NICs", "one NIC", "FuseLink", "FuseLink e=1", "gain");
  for (int n = 1; n <= kGpus; ++n) {
    net::FuseLinkModelOptions o = base, ideal = base;
    o.nics_per_server = ideal.nics_per_server = n;
    ideal.relay_efficiency = 1;
    const std::vector<ModelRequest> reqs{{0, {0}, bytes, 0}};
    ModelResult d, f, fi;
    if (!simulate(t, reqs, NicPolicy::Direct, o, &d) || !simulate(t, reqs, NicPolicy::FuseLink, o, &f) ||
        !simulate(t, reqs, NicPolicy::FuseLink, ideal, &fi))
      return 1;
    std::printf("  %4d %12.1f %12.1f %12.1f %7.2fx\n", n, bytes / d.makespan_s / 1e9, bytes / f.makespan_s / 1e9,
                bytes / fi.makespan_s / 1e9, d.makespan_s / f.makespan_s);
  }
  return 0;
}

// The paper's serving runs: instances of T GPUs move KV caches (sizes 0.25-1.75x the mean) that
// arrive at random (Poisson), one at a time per instance; the time of each move includes its wait.
int run_serving(const topo::Topology& t, const net::FuseLinkModelOptions& o, const FuseLinkArgs& a, double kv) {
  std::printf("# serving: %d/T instances of T GPUs per server, KV caches of %.0f MB mean (0.25-1.75x), Poisson\n"
              "# arrivals at a load of %.0f%% of one NIC per GPU, %d requests per instance; transfer time incl.\n"
              "# queueing, ms. Paper (TTFT, which adds prefill compute): P50 2.22x / 1.42x / 1.20x, P99 1.94x /\n"
              "# 1.15x / 1.09x for TP 1 / 2 / 4\n",
              kGpus, kv / 1e6, a.load * 100, a.requests);
  std::printf("# %3s %10s %10s %10s %10s %8s %8s %6s\n", "TP", "P50 1NIC", "P99 1NIC", "P50 FL", "P99 FL", "P50 x", "P99 x",
              "NICs");
  for (int tp : {1, 2, 4}) {
    std::mt19937 rng(a.seed + unsigned(tp));
    std::exponential_distribution<double> gap(1.0);
    std::uniform_real_distribution<double> size(0.25, 1.75);
    const int instances = kGpus / tp;
    // One NIC per GPU: a move of S bytes takes S / tp / 50 GB/s; the load sets the arrival rate.
    const double nic_gbps = 50;
    const double service_s = kv / tp / (nic_gbps * 1e9);
    const double mean_gap_s = service_s / a.load;
    std::vector<ModelRequest> reqs;
    for (int i = 0; i < instances; ++i) {
      double at = 0;
      for (int k = 0; k < a.requests; ++k) {
        at += gap(rng) * mean_gap_s;
        std::vector<int> gpus;
        for (int j = 0; j < tp; ++j) gpus.push_back(i * tp + j);
        reqs.push_back({i, gpus, kv * size(rng) / tp, at});
      }
    }
    ModelResult d, f;
    if (!simulate(t, reqs, NicPolicy::Direct, o, &d) || !simulate(t, reqs, NicPolicy::FuseLink, o, &f)) return 1;
    std::vector<double> ld, lf;
    for (size_t i = 0; i < reqs.size(); ++i) {
      ld.push_back((d.finish_s[i] - reqs[i].arrival_s) * 1e3);
      lf.push_back((f.finish_s[i] - reqs[i].arrival_s) * 1e3);
    }
    const double d50 = percentile(ld, 0.5), d99 = percentile(ld, 0.99), f50 = percentile(lf, 0.5),
                 f99 = percentile(lf, 0.99);
    std::printf("  %3d %10.2f %10.2f %10.2f %10.2f %7.2fx %7.2fx %6d\n", tp, d50, d99, f50, f99, d50 / f50, d99 / f99,
                f.max_nics_used);
  }
  return 0;
}

}  // namespace

int run_fuselink(const FuseLinkArgs& a) {
  topo::Topology t;
  if (topo::load_topology(a.topo, &t) != Result::Success) {
    std::fprintf(stderr, "braid-sim fuselink: %s\n", last_error());
    return 2;
  }
  const auto bytes = parse_byte_size(a.bytes), kv = parse_byte_size(a.kv_bytes);
  if (!bytes || !kv || *bytes == 0 || *kv == 0) {
    std::fprintf(stderr, "braid-sim fuselink: bad size %s or %s\n", a.bytes.c_str(), a.kv_bytes.c_str());
    return 2;
  }
  net::FuseLinkModelOptions o;
  o.relay_efficiency = a.relay_efficiency;
  std::printf("# braid-sim fuselink: PREDICTED by a flow-level model (net/fuselink_model.h), not measured.\n"
              "# topology %s, server 0 -> server 1, relay efficiency %.2f on NVLink\n",
              t.name.c_str(), a.relay_efficiency);
  if (a.single) return run_single(t, o, double(*bytes));
  if (a.serving) {
    if (a.load <= 0 || a.load >= 1 || a.requests < 1) {
      std::fprintf(stderr, "braid-sim fuselink: --load must be in (0, 1), --requests at least 1\n");
      return 2;
    }
    return run_serving(t, o, a, double(*kv));
  }
  std::printf("# every GPU's bytes go to the same-numbered GPU of server 1, all at once; times in us\n");
  std::printf("#%13s %12s %10s %10s %8s %10s %6s\n", "scenario", "bytes", "1 NIC", "FuseLink", "gain", "mean gain", "NICs");
  for (const std::string& s : a.scenarios) {
    std::vector<ModelRequest> reqs;
    if (!scenario_requests(s, double(*bytes), a.seed, &reqs)) {
      std::fprintf(stderr, "braid-sim fuselink: unknown scenario %s\n", s.c_str());
      return 2;
    }
    ModelResult d, f;
    if (!simulate(t, reqs, NicPolicy::Direct, o, &d) || !simulate(t, reqs, NicPolicy::FuseLink, o, &f)) return 1;
    std::printf(" %13s %12zu %10.1f %10.1f %7.2fx %9.2fx %6d\n", s.c_str(), *bytes, d.makespan_s * 1e6,
                f.makespan_s * 1e6, d.makespan_s / f.makespan_s, mean_latency(reqs, d) / mean_latency(reqs, f),
                f.max_nics_used);
  }
  return 0;
}

}  // namespace braid::sim
