#include "balance/tuning_cache.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "common/log.h"

namespace braid::balance {

namespace {
constexpr int kCacheVersion = 1;
}

Result save_tuning_cache(const SplitTable& table, const std::string& path) {
  nlohmann::json doc;
  doc["version"] = kCacheVersion;
  doc["balancer"] = std::string(table.balancer_name());
  doc["share_units"] = kShareUnits;
  doc["num_paths"] = table.num_paths();
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& [key, balancer] : table.entries()) {
    entries.push_back({{"collective", std::string(collective_name(key.collective))},
                       {"dtype", std::string(datatype_name(key.dtype))},
                       {"bucket", key.bucket},
                       {"units", balancer->shares().units}});
  }
  doc["entries"] = std::move(entries);
  // Write beside and rename, so a reader never sees half a file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return fail(Result::SystemError, "tuning cache: cannot write %s", tmp.c_str());
    out << doc.dump(1) << "\n";
    if (!out) return fail(Result::SystemError, "tuning cache: write to %s failed", tmp.c_str());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return fail(Result::SystemError, "tuning cache: rename to %s: %s", path.c_str(),
                ec.message().c_str());
  return Result::Success;
}

size_t load_tuning_cache(SplitTable& table, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    BRAID_INFO(Balance, "tuning cache %s not found, starting untuned", path.c_str());
    return 0;
  }
  std::vector<std::pair<SplitKey, Shares>> parsed;
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    if (doc.at("version").get<int>() != kCacheVersion)
      throw std::runtime_error("version " + doc.at("version").dump() + " is not 1");
    if (doc.at("balancer").get<std::string>() != table.balancer_name())
      throw std::runtime_error("made by balancer " + doc.at("balancer").get<std::string>());
    if (doc.at("share_units").get<uint32_t>() != kShareUnits ||
        doc.at("num_paths").get<int>() != table.num_paths())
      throw std::runtime_error("granularity or path count differs");
    for (const auto& e : doc.at("entries")) {
      auto c = parse_collective(e.at("collective").get<std::string>());
      auto t = parse_datatype(e.at("dtype").get<std::string>());
      const int bucket = e.at("bucket").get<int>();
      Shares s{e.at("units").get<std::vector<uint32_t>>()};
      if (!c || !t || bucket < 0 || bucket > 63 || s.num_paths() != table.num_paths() ||
          !shares_valid(s))
        throw std::runtime_error("bad entry " + e.dump());
      parsed.emplace_back(SplitKey{*c, *t, bucket}, std::move(s));
    }
  } catch (const std::exception& ex) {
    BRAID_WARN(Balance, "tuning cache %s ignored: %s", path.c_str(), ex.what());
    return 0;
  }
  for (const auto& [key, shares] : parsed) table.restore(key, shares);
  BRAID_INFO(Balance, "tuning cache %s: %zu splits loaded", path.c_str(), parsed.size());
  return parsed.size();
}

}  // namespace braid::balance
