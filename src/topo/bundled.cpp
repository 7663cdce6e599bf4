// Bundled topologies: <dir>/<name>.json in BRAID_TOPO_DIR, then the source tree's topologies/.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "common/settings.h"
#include "topo/topology.h"

namespace braid::topo {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> search_dirs() {
  std::vector<std::string> dirs;
  if (!settings().topo_dir.empty()) dirs.push_back(settings().topo_dir);
  dirs.push_back(BRAID_TOPOLOGY_DIR);
  return dirs;
}

bool looks_like_path(const std::string& text) {
  return text.find('/') != std::string::npos ||
         (text.size() > 5 && text.compare(text.size() - 5, 5, ".json") == 0);
}

}  // namespace

std::vector<std::string> bundled_topologies() {
  std::vector<std::string> names;
  for (const std::string& dir : search_dirs()) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      if (p.extension() == ".json" && it->is_regular_file(ec)) names.push_back(p.stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Result load_topology(const std::string& name_or_path, Topology* out) {
  if (name_or_path.empty()) return fail(Result::InvalidArgument, "topology: empty name");
  if (looks_like_path(name_or_path)) return load_topology_file(name_or_path, out);
  for (const std::string& dir : search_dirs()) {
    fs::path candidate = fs::path(dir) / (name_or_path + ".json");
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return load_topology_file(candidate.string(), out);
  }
  std::error_code ec;
  if (fs::is_regular_file(name_or_path, ec)) return load_topology_file(name_or_path, out);
  std::string known;
  for (const std::string& n : bundled_topologies()) known += (known.empty() ? "" : ", ") + n;
  return fail(Result::InvalidArgument, "topology: '%s' is neither a bundled topology (%s) nor a file",
              name_or_path.c_str(), known.c_str());
}

}  // namespace braid::topo
