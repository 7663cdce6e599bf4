#include "topo/names.h"

#include <array>
#include <utility>

namespace braid::topo {
namespace {

constexpr std::array<std::pair<NodeKind, std::string_view>, 6> kNodeKinds = {{
    {NodeKind::Gpu, "gpu"},
    {NodeKind::Numa, "numa"},
    {NodeKind::PcieSwitch, "pcie_switch"},
    {NodeKind::Nic, "nic"},
    {NodeKind::NvSwitch, "nvswitch"},
    {NodeKind::Network, "network"},
}};

constexpr std::array<std::pair<LinkKind, std::string_view>, 4> kLinkKinds = {{
    {LinkKind::Pcie, "pcie"},
    {LinkKind::NvLink, "nvlink"},
    {LinkKind::InterSocket, "inter_socket"},
    {LinkKind::Network, "network"},
}};

}  // namespace

std::string_view node_kind_name(NodeKind kind) {
  for (const auto& [k, name] : kNodeKinds)
    if (k == kind) return name;
  return "?";
}

std::string_view link_kind_name(LinkKind kind) {
  for (const auto& [k, name] : kLinkKinds)
    if (k == kind) return name;
  return "?";
}

std::optional<NodeKind> parse_node_kind(std::string_view text) {
  for (const auto& [k, name] : kNodeKinds)
    if (name == text) return k;
  return std::nullopt;
}

std::optional<LinkKind> parse_link_kind(std::string_view text) {
  for (const auto& [k, name] : kLinkKinds)
    if (name == text) return k;
  return std::nullopt;
}

}  // namespace braid::topo
