// The NICs the net plugin uses: from BRAID_NET_NICS (interface names or IP addresses; several
// loopback addresses make emulated NICs), or the interfaces NCCL's socket transport would choose.
#pragma once

#include <sys/socket.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace braid::net {

struct Nic {
  std::string name;        // interface name, or the address text for an address given as is
  sockaddr_storage addr{}; // the address its sockets bind to (port 0)
  socklen_t addr_len = 0;
  std::string address;     // printable address
  int speed_mbps = 0;      // from sysfs; 0: unknown
  std::string pci_path;    // /sys/... of the device; empty for virtual interfaces
};

// `spec`: comma list of interface names or IPv4/IPv6 addresses; empty: the interfaces NCCL's
// socket transport would use (select_interfaces, with NCCL_SOCKET_IFNAME from the environment).
Result find_nics(const std::string& spec, std::vector<Nic>* out);

// NCCL's socket rules over the interfaces that are up: NCCL_SOCKET_IFNAME, when set, is a comma
// list of name prefixes ("^" first: all but those; "=" first: whole names). Unset: ib* when there
// are any; else all but docker*, lo* and virbr*; else docker*, then lo*, then virbr*.
std::vector<Nic> select_interfaces(const std::vector<Nic>& up, const std::string& socket_ifname);

// Parses "a.b.c.d" or an IPv6 address into `nic` (port 0); false when it is not an address.
bool parse_address(const std::string& text, Nic* nic);

}  // namespace braid::net
