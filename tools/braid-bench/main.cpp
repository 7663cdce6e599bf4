// braid-bench: nccl-tests' flags and table for braid's PCIe collectives, with NCCL's figure for
// the same case measured in the same run beside every row (see docs/BENCH.md).
#include <cuda_runtime.h>
#include <nccl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ceiling.h"
#include "check.h"
#include "common/sizes.h"
#include "common/types.h"
#include "interference.h"
#include "measure.h"
#include "noise.h"
#include "paths.h"
#include "phases.h"
#include "rank_threads.h"
#include "repeat.h"
#include "shape.h"

extern char** environ;

namespace braid::bench {
namespace {

struct Options {
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
  double step_factor = 1;
  int iters = 20;
  int warmup = 5;
  int repeat = 1;
  int check = 1;
  std::string dtype = "float";
  std::string op = "sum";
  int root = 0;
  int gpus = 0;
  std::string collective = "all_reduce";
  std::string json;
  bool in_place = false;
  std::string paths = "braid,nccl";
  bool ceiling = false;
  bool ceiling_only = false;
  bool interference = false;
  bool multipath = false;
  std::string phases;
  std::string noise_bytes = "256M";
};


struct Paths {
  bool braid = false, nccl = false;
};

std::optional<Paths> parse_paths(const std::string& text) {
  Paths p;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item == "braid") p.braid = true;
    else if (item == "nccl") p.nccl = true;
    else if (!item.empty()) return std::nullopt;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!p.braid && !p.nccl) return std::nullopt;
  return p;
}

nlohmann::json row_json(const CaseSpec& spec, const char* path, const PathResult& r) {
  const bool reduces = collective_reduces(spec.collective);
  const bool rooted = spec.collective == Collective::Broadcast || spec.collective == Collective::Reduce;
  return {{"collective", bench_name(spec.collective)},
          {"size", spec.shape.row_bytes},
          {"count", spec.shape.param_count},
          {"type", std::string(datatype_name(spec.type))},
          {"redop", reduces ? std::string(redop_name(spec.op)) : std::string("none")},
          {"root", rooted ? spec.root : -1},
          {"in_place", spec.in_place},
          {"path", path},
          {"time_us", r.time_us},
          {"algbw", r.algbw},
          {"busbw", r.busbw},
          {"wrong", r.wrong}};
}

void print_header(const Paths& paths, bool in_place, bool multipath) {
  std::printf("#\n# %s\n", in_place ? "in-place" : "out-of-place");
  std::printf("# %10s  %12s  %8s  %9s  %5s", "", "", "", "", "");
  if (paths.braid)
    std::printf("  %-35s", multipath ? "  ------- braid (NCCL+PCIe) -------" : "  ---------- braid (PCIe) ---------");
  if (paths.nccl) std::printf("  %-35s", "  ------------ nccl -------------");
  std::printf("\n# %10s  %12s  %8s  %9s  %5s", "size", "count", "type", "redop", "root");
  for (int i = 0; i < (paths.braid ? 1 : 0) + (paths.nccl ? 1 : 0); ++i)
    std::printf("  %9s  %7s  %7s  %6s", "time", "algbw", "busbw", "#wrong");
  if (paths.braid && paths.nccl) std::printf("  %10s", "braid/nccl");
  if (paths.braid && multipath) std::printf("  %10s", "pcie share");
  std::printf("\n# %10s  %12s  %8s  %9s  %5s", "(B)", "(elements)", "", "", "");
  for (int i = 0; i < (paths.braid ? 1 : 0) + (paths.nccl ? 1 : 0); ++i)
    std::printf("  %9s  %7s  %7s  %6s", "(us)", "(GB/s)", "(GB/s)", "");
  if (paths.braid && paths.nccl) std::printf("  %10s", "(algbw)");
  if (paths.braid && multipath) std::printf("  %10s", "(last)");
  std::printf("\n");
}

void print_result(const PathResult& r) {
  std::printf("  %9.1f  %7.2f  %7.2f  %6zu", r.time_us, r.algbw, r.busbw, r.wrong);
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{"braid-bench: braid's PCIe collectives against NCCL, nccl-tests style"};
  app.add_option("-b,--minbytes", o.min_bytes, "Smallest size in bytes (K, M, G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.max_bytes, "Largest size in bytes")->capture_default_str();
  app.add_option("-i,--stepbytes", o.step_bytes, "Size increment when -f is 1")->capture_default_str();
  app.add_option("-f,--stepfactor", o.step_factor, "Size multiplication factor (> 1 overrides -i)")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "Timed iterations per size and path")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "Warm-up iterations per size and path")->capture_default_str();
  app.add_option("--repeat", o.repeat,
                 "Measure each row this many times, braid and NCCL alternately, and report each path's "
                 "median repetition")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("-c,--check", o.check, "Check results once per size (0 or 1)")->capture_default_str();
  app.add_option("-d,--datatype", o.dtype, "Data type (nccl-tests names) or all")->capture_default_str();
  app.add_option("-o,--op", o.op, "Reduction op (sum, prod, max, min, avg, premulsum) or all")->capture_default_str();
  app.add_option("-r,--root", o.root, "Root of broadcast and reduce")->capture_default_str();
  app.add_option("-g,--ngpus", o.gpus, "GPUs to use (0: all visible)")->capture_default_str();
  app.add_option("-C,--collective", o.collective,
                 "all_reduce, all_gather, reduce_scatter, broadcast, reduce or alltoall")->capture_default_str();
  app.add_option("-J,--json", o.json, "Write the results as JSON to this file");
  app.add_flag("-I,--in-place", o.in_place, "In-place operation (nccl-tests' layout) instead of out-of-place");
  app.add_option("--paths", o.paths, "Which to run: braid, nccl or braid,nccl")->capture_default_str();
  app.add_flag("--ceiling", o.ceiling, "Also measure the PCIe ceiling (all GPUs D2H and H2D at once)");
  app.add_flag("--ceiling-only", o.ceiling_only, "Measure only the PCIe ceiling (for braid doctor), no table");
  app.add_flag("--multipath", o.multipath,
               "The braid column runs as the drop-in does: each collective split across NCCL and "
               "braid's PCIe path by the balancer (BRAID_BALANCER); small ones go to NCCL alone");
  app.add_option("--phases", o.phases,
                 "With --multipath: call the -b size over phases of background PCIe traffic, e.g. "
                 "off:30,on:30,off:30; once with the balancer, once with a static split tuned in the "
                 "first quiet phase");
  app.add_option("--noise-bytes", o.noise_bytes, "Bytes per background D2H and H2D burst (--phases)")
      ->capture_default_str();
  app.add_flag("--interference", o.interference,
               "Measure NCCL all_reduce alone and while braid's all_reduce runs concurrently");
  CLI11_PARSE(app, argc, argv);

  // Never NVLink multicast (see KINDS.md): set before NCCL initialises.
  setenv("NCCL_NVLS_ENABLE", "0", 1);

  const auto min_bytes = parse_byte_size(o.min_bytes), max_bytes = parse_byte_size(o.max_bytes),
             step_bytes = parse_byte_size(o.step_bytes);
  if (!min_bytes || !max_bytes || !step_bytes || *max_bytes < *min_bytes)
    die("bad sizes: -b %s -e %s -i %s", o.min_bytes.c_str(), o.max_bytes.c_str(), o.step_bytes.c_str());
  if (o.step_factor <= 1 && *step_bytes == 0) die("-i must be > 0 when -f is 1");
  const auto paths = parse_paths(o.paths);
  if (!paths) die("--paths takes braid, nccl or braid,nccl (got '%s')", o.paths.c_str());
  Collective collective;
  if (!parse_bench_name(o.collective, &collective)) die("unknown collective '%s'", o.collective.c_str());
  std::vector<DataType> types;
  if (o.dtype == "all") types.assign(all_datatypes().begin(), all_datatypes().end());
  else if (auto t = parse_datatype(o.dtype)) types.push_back(*t);
  else die("unknown data type '%s'", o.dtype.c_str());
  std::vector<RedOp> ops;
  if (!collective_reduces(collective)) ops.push_back(RedOp::Sum);
  else if (o.op == "all") ops.assign(all_redops().begin(), all_redops().end());
  else if (auto op = parse_redop(o.op)) ops.push_back(*op);
  else die("unknown op '%s'", o.op.c_str());
  if (o.interference && !paths->braid) die("--interference needs the braid path");
  if (o.interference && collective != Collective::AllReduce)
    die("--interference measures all_reduce; drop -C or pass -C all_reduce");

  int visible = 0;
  BENCH_CUDA(cudaGetDeviceCount(&visible));
  const int ngpus = o.gpus > 0 ? o.gpus : visible;
  if (ngpus < 1 || ngpus > visible) die("asked for %d GPUs but %d are visible", ngpus, visible);
  if (o.root < 0 || o.root >= ngpus) die("root %d out of range for %d GPUs", o.root, ngpus);
  std::vector<int> devices(ngpus);
  for (int i = 0; i < ngpus; ++i) devices[i] = i;

  nlohmann::json doc;
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  doc["command"] = command;
  doc["devices"] = nlohmann::json::array();
  std::printf("# braid-bench: %s\n# Using devices\n", command.c_str());
  for (int d : devices) {
    cudaDeviceProp prop{};
    BENCH_CUDA(cudaGetDeviceProperties(&prop, d));
    char bus[32] = {};
    BENCH_CUDA(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    std::printf("#  Rank %2d device %2d [%s] %s\n", d, d, bus, prop.name);
    doc["devices"].push_back({{"rank", d}, {"device", d}, {"name", prop.name}, {"pci_bus_id", bus}});
  }
  nlohmann::json env = nlohmann::json::object();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    if (kv.rfind("NCCL_", 0) == 0 || kv.rfind("BRAID_", 0) == 0) {
      const size_t eq = kv.find('=');
      env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
    }
  }
  doc["env"] = env;
  int nccl_version = 0;
  ncclGetVersion(&nccl_version);
  doc["nccl_version"] = nccl_version;
  doc["rows"] = nlohmann::json::array();

  if (o.ceiling || o.ceiling_only) {
    const size_t bytes = std::min<size_t>(*max_bytes, size_t{1} << 30);
    const CeilingResult c = measure_pcie_ceiling(devices, bytes, std::max(o.iters / 4, 2));
    std::printf("# PCIe ceiling (%zu bytes, all GPUs both directions at once):\n", bytes);
    nlohmann::json per = nlohmann::json::array();
    for (size_t i = 0; i < devices.size(); ++i) {
      std::printf("#  GPU %d: D2H %.2f GB/s  H2D %.2f GB/s\n", devices[i], c.d2h_gbps[i], c.h2d_gbps[i]);
      per.push_back({{"device", devices[i]}, {"d2h", c.d2h_gbps[i]}, {"h2d", c.h2d_gbps[i]}});
    }
    std::printf("#  ceiling (slowest GPU and direction): %.2f GB/s\n", c.min_gbps);
    doc["ceiling_gbps"] = c.min_gbps;
    doc["ceiling"] = {{"bytes", bytes}, {"per_gpu", per}};
  }
  if (o.ceiling_only) {
    if (!o.json.empty()) {
      std::ofstream out(o.json);
      out << doc.dump(2) << "\n";
      if (!out) die("cannot write %s", o.json.c_str());
    }
    return 0;
  }

  RankThreads threads(devices);
  std::unique_ptr<NcclPath> nccl;
  std::unique_ptr<BraidPath> braid;
  if (paths->nccl || o.interference) nccl = std::make_unique<NcclPath>(devices);
  if (paths->braid) braid = std::make_unique<BraidPath>(threads, devices, o.multipath);
  DeviceBuffers buffers(threads, *max_bytes, /*with_host=*/o.check != 0);
  Measure measure(threads, buffers, o.warmup, o.iters, o.check != 0);

  std::vector<size_t> sizes;
  for (size_t s = *min_bytes; s <= *max_bytes;
       s = o.step_factor > 1 ? static_cast<size_t>(static_cast<double>(s) * o.step_factor) : s + *step_bytes) {
    sizes.push_back(s);
    if (s == 0 && o.step_factor > 1) break;  // 0 * factor never grows
  }

  bool any_wrong = false;
  if (!o.phases.empty()) {
    const auto phases = parse_phases(o.phases);
    if (!phases) die("--phases takes on:N,off:N,... (got '%s')", o.phases.c_str());
    if (!o.multipath || !braid) die("--phases needs --multipath and the braid path");
    const auto noise_bytes = parse_byte_size(o.noise_bytes);
    if (!noise_bytes || *noise_bytes == 0) die("bad --noise-bytes %s", o.noise_bytes.c_str());
    CaseSpec spec;
    spec.collective = collective;
    spec.type = types.front();
    spec.op = ops.front();
    spec.root = o.root;
    spec.in_place = o.in_place;
    spec.shape = shape_of(collective, *min_bytes, spec.type, ngpus);
    PcieNoise noise(devices, *noise_bytes);
    // Warm up (and let the balancer converge) without noise first.
    for (int i = 0; i < o.warmup; ++i) run_phases(threads, *braid, measure, spec, {{false, 1}}, noise);
    const auto adaptive = run_phases(threads, *braid, measure, spec, *phases, noise);
    // The best static split without interference: the balancer's own share, settled in the
    // last half of the first quiet phase.
    std::vector<double> quiet;
    for (size_t i = 0; i < adaptive.size(); ++i)
      if (!adaptive[i].noise && adaptive[i].phase == 0 && adaptive[i].pcie_share >= 0) quiet.push_back(adaptive[i].pcie_share);
    std::sort(quiet.begin(), quiet.end());
    const double static_share = quiet.empty() ? 0.0 : quiet[quiet.size() / 2];
    braid->use_static_share(static_share);
    for (int i = 0; i < o.warmup; ++i) run_phases(threads, *braid, measure, spec, {{false, 1}}, noise);
    const auto fixed = run_phases(threads, *braid, measure, spec, *phases, noise);
    std::printf("#\n# balancer under PCIe interference: %s %zu B, noise %zu B bursts D2H+H2D on every GPU\n",
                bench_name(collective).c_str(), spec.shape.row_bytes, *noise_bytes);
    std::printf("# static split tuned in the first quiet phase: pcie share %.4f\n", static_share);
    std::printf("# %5s  %5s  %5s  %14s  %12s  %14s\n", "call", "phase", "noise", "adaptive (us)", "pcie share",
                "static (us)");
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < adaptive.size(); ++i) {
      std::printf("  %5zu  %5d  %5s  %14.1f  %12.4f  %14.1f\n", i, adaptive[i].phase, adaptive[i].noise ? "on" : "off",
                  adaptive[i].time_us, adaptive[i].pcie_share, i < fixed.size() ? fixed[i].time_us : 0.0);
      rows.push_back({{"call", i}, {"phase", adaptive[i].phase}, {"noise", adaptive[i].noise},
                      {"adaptive_us", adaptive[i].time_us}, {"adaptive_pcie_share", adaptive[i].pcie_share},
                      {"static_us", i < fixed.size() ? fixed[i].time_us : 0.0}});
    }
    std::printf("# %5s  %5s  %18s  %16s  %22s  %20s  %20s\n", "phase", "noise", "adaptive steady us", "static steady us",
                "adaptive/static thrpt", "adaptive converge", "share settles");
    nlohmann::json summary = nlohmann::json::array();
    for (size_t p = 0; p < phases->size(); ++p) {
      const double a = steady_time_us(adaptive, static_cast<int>(p)), f = steady_time_us(fixed, static_cast<int>(p));
      const int converge = calls_to_converge(adaptive, static_cast<int>(p), 0.15);
      const int settle = calls_to_settle_share(adaptive, static_cast<int>(p), 0.2);
      std::printf("  %5zu  %5s  %18.1f  %16.1f  %22.2f  %14d calls  %14d calls\n", p, (*phases)[p].noise ? "on" : "off",
                  a, f, a > 0 ? f / a : 0.0, converge, settle);
      summary.push_back({{"phase", p}, {"noise", (*phases)[p].noise}, {"adaptive_steady_us", a},
                         {"static_steady_us", f}, {"adaptive_over_static_throughput", a > 0 ? f / a : 0.0},
                         {"adaptive_calls_to_converge", converge}, {"adaptive_calls_to_settle_share", settle}});
    }
    std::printf("# noise bursts completed: %ld\n", noise.bursts());
    doc["phases"] = {{"static_share", static_share}, {"noise_bytes", *noise_bytes}, {"calls", rows},
                     {"summary", summary}, {"size", spec.shape.row_bytes}};
  } else if (o.interference) {
    DeviceBuffers braid_buffers(threads, *max_bytes, false);
    Measure braid_layout(threads, braid_buffers, o.warmup, o.iters, false);
    std::printf("#\n# interference: NCCL all_reduce alone vs with braid's all_reduce running concurrently\n");
    std::printf("# %10s  %8s  %12s  %12s  %9s  %12s\n", "size", "type", "nccl alone", "nccl+braid",
                "slowdown", "braid algbw");
    std::printf("# %10s  %8s  %12s  %12s  %9s  %12s\n", "(B)", "", "(us)", "(us)", "(%)", "(GB/s)");
    doc["interference"] = nlohmann::json::array();
    for (DataType type : types) {
      for (size_t size : sizes) {
        CaseSpec spec;
        spec.collective = Collective::AllReduce;
        spec.type = type;
        spec.op = RedOp::Sum;
        spec.in_place = o.in_place;
        spec.shape = shape_of(spec.collective, size, type, ngpus);
        const InterferenceRow row =
            measure_interference(threads, *braid, *nccl, measure, braid_layout, spec, o.warmup, o.iters);
        std::printf("  %10zu  %8s  %12.1f  %12.1f  %9.2f  %12.2f\n", row.bytes,
                    std::string(datatype_name(type)).c_str(), row.nccl_alone_us, row.nccl_with_braid_us,
                    row.slowdown_pct, row.braid_algbw);
        std::fflush(stdout);
        doc["interference"].push_back({{"size", row.bytes},
                                       {"type", std::string(datatype_name(type))},
                                       {"nccl_alone_us", row.nccl_alone_us},
                                       {"nccl_with_braid_us", row.nccl_with_braid_us},
                                       {"slowdown_pct", row.slowdown_pct},
                                       {"braid_algbw", row.braid_algbw},
                                       {"braid_iters", row.braid_iters}});
      }
    }
  } else {
    print_header(*paths, o.in_place, o.multipath);
    double braid_busbw_sum = 0, nccl_busbw_sum = 0;
    int rows = 0;
    for (DataType type : types) {
      for (RedOp op : ops) {
        for (size_t size : sizes) {
          CaseSpec spec;
          spec.collective = collective;
          spec.type = type;
          spec.op = op;
          spec.root = o.root;
          spec.in_place = o.in_place;
          spec.shape = shape_of(collective, size, type, ngpus);
          const bool reduces = collective_reduces(collective);
          const bool rooted = collective == Collective::Broadcast || collective == Collective::Reduce;
          std::printf("  %10zu  %12zu  %8s  %9s  %5d", spec.shape.row_bytes, spec.shape.param_count,
                      std::string(datatype_name(type)).c_str(),
                      reduces ? std::string(redop_name(op)).c_str() : "none", rooted ? o.root : -1);
          std::fflush(stdout);
          PathResult b, n;
          std::vector<multipath::SplitRecord> splits;
          // --repeat: braid and NCCL alternately, then each path's median repetition.
          std::vector<PathResult> braid_runs, nccl_runs;
          for (int rep = 0; rep < o.repeat; ++rep) {
            if (paths->braid) {
              braid_runs.push_back(measure.run_braid(*braid, spec));
              for (auto& r : braid->take_splits()) splits.push_back(r);
            }
            if (paths->nccl) nccl_runs.push_back(measure.run_nccl(*nccl, spec));
          }
          auto median_run = [](const std::vector<PathResult>& runs) {
            std::vector<double> times;
            size_t wrong = 0;
            for (const auto& r : runs) times.push_back(r.time_us), wrong = std::max(wrong, r.wrong);
            PathResult m = runs[median_index(times)];
            m.wrong = wrong;  // any repetition's wrong elements count
            return m;
          };
          auto times_json = [](const std::vector<PathResult>& runs) {
            nlohmann::json t = nlohmann::json::array();
            for (const auto& r : runs) t.push_back(r.time_us);
            return t;
          };
          if (paths->braid) {
            b = median_run(braid_runs);
            print_result(b);
            std::fflush(stdout);
            nlohmann::json row = row_json(spec, o.multipath ? "braid_multipath" : "braid", b);
            if (o.multipath) {
              // The split of every settled call of this row (rank 0's view; all ranks agree).
              nlohmann::json trace = nlohmann::json::array();
              for (const auto& r : splits)
                trace.push_back({{"call", r.call}, {"nccl_elements", r.nccl_elements},
                                 {"pcie_elements", r.pcie_elements}, {"nccl_ms", r.nccl_seconds * 1e3},
                                 {"pcie_ms", r.pcie_seconds * 1e3}, {"timed", r.timed},
                                 {"next_pcie_share", r.next_pcie_share},
                                 {"nvlink_path", r.nvlink_copy ? "copy" : "nccl"}});
              row["splits"] = trace;
            }
            if (o.repeat > 1) row["repeat_time_us"] = times_json(braid_runs);
            doc["rows"].push_back(row);
            braid_busbw_sum += b.busbw;
            any_wrong |= b.wrong > 0;
          }
          if (paths->nccl) {
            n = median_run(nccl_runs);
            print_result(n);
            nlohmann::json row = row_json(spec, "nccl", n);
            if (o.repeat > 1) row["repeat_time_us"] = times_json(nccl_runs);
            doc["rows"].push_back(row);
            nccl_busbw_sum += n.busbw;
            any_wrong |= n.wrong > 0;
          }
          if (paths->braid && paths->nccl) std::printf("  %10.2f", n.algbw > 0 ? b.algbw / n.algbw : 0.0);
          if (paths->braid && o.multipath)
            std::printf("  %10.4f", splits.empty() ? 0.0
                                                   : static_cast<double>(splits.back().pcie_elements) /
                                                         static_cast<double>(std::max<size_t>(1, spec.shape.param_count)));
          std::printf("\n");
          std::fflush(stdout);
          ++rows;
        }
      }
    }
    std::printf("# Out of bounds values : %s\n", any_wrong ? "FAILED" : "0 OK");
    if (paths->braid) std::printf("# Avg bus bandwidth    : %g (braid)\n", rows ? braid_busbw_sum / rows : 0.0);
    if (paths->nccl) std::printf("# Avg bus bandwidth    : %g (nccl)\n", rows ? nccl_busbw_sum / rows : 0.0);
    if (paths->braid) doc["avg_busbw_braid"] = rows ? braid_busbw_sum / rows : 0.0;
    if (paths->nccl) doc["avg_busbw_nccl"] = rows ? nccl_busbw_sum / rows : 0.0;
  }

  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << doc.dump(2) << "\n";
    if (!out) die("cannot write %s", o.json.c_str());
  }
  return any_wrong ? 1 : 0;
}

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::run(argc, argv);
}
