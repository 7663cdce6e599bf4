// The spelling of node and link kinds in topology files and messages.
#pragma once

#include <optional>
#include <string_view>

#include "topo/topology.h"

namespace braid::topo {

std::string_view node_kind_name(NodeKind kind);  // "gpu", "numa", "pcie_switch", ...
std::string_view link_kind_name(LinkKind kind);  // "pcie", "nvlink", "inter_socket", "network"
std::optional<NodeKind> parse_node_kind(std::string_view text);
std::optional<LinkKind> parse_link_kind(std::string_view text);

}  // namespace braid::topo
