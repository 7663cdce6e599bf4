#include "net/nics.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "net/nic_monitor.h"

namespace braid::net {
namespace {

std::string address_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

void fill_sysfs(Nic* nic) {
  std::ifstream speed("/sys/class/net/" + nic->name + "/speed");
  int s = 0;
  if (speed >> s && s > 0) nic->speed_mbps = s;
  std::string dev = "/sys/class/net/" + nic->name + "/device";
  if (char* real = realpath(dev.c_str(), nullptr)) {
    nic->pci_path = real;
    free(real);
  }
}

// The first IPv4 (else IPv6) address of each interface that is up, in the order met.
std::vector<Nic> interfaces() {
  std::vector<Nic> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (int family : {AF_INET, AF_INET6}) {
    for (ifaddrs* ifa = list; ifa; ifa = ifa->ifa_next) {
      if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != family || !(ifa->ifa_flags & IFF_UP)) continue;
      if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr)->sin6_addr)) continue;
      bool seen = false;
      for (const Nic& n : out) seen |= n.name == ifa->ifa_name;
      if (seen) continue;
      Nic nic;
      nic.name = ifa->ifa_name;
      nic.addr_len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      std::memcpy(&nic.addr, ifa->ifa_addr, nic.addr_len);
      nic.address = address_text(ifa->ifa_addr);
      fill_sysfs(&nic);
      out.push_back(nic);
    }
  }
  freeifaddrs(list);
  return out;
}

// NCCL_SOCKET_IFNAME's form: a comma list of name prefixes; "^" first leaves the named ones
// out, "=" (after any "^") makes them whole names.
struct IfnameList {
  bool exclude = false, exact = false;
  std::vector<std::string> names;
  explicit IfnameList(std::string text) {
    if (!text.empty() && text[0] == '^') {
      exclude = true;
      text.erase(0, 1);
    }
    if (!text.empty() && text[0] == '=') {
      exact = true;
      text.erase(0, 1);
    }
    for (size_t pos = 0; pos <= text.size();) {
      size_t comma = std::min(text.find(',', pos), text.size());
      std::string item = text.substr(pos, comma - pos);
      item = item.substr(0, item.find(':'));  // NCCL allows name:port; the port is not ours
      if (!item.empty()) names.push_back(item);
      pos = comma + 1;
    }
  }
  bool admits(const std::string& name) const {
    bool listed = false;
    for (const std::string& n : names) listed |= exact ? name == n : name.compare(0, n.size(), n) == 0;
    return listed != exclude;
  }
};

std::vector<Nic> admitted(const std::vector<Nic>& up, const std::string& list) {
  const IfnameList l(list);
  std::vector<Nic> out;
  for (const Nic& n : up)
    if (l.admits(n.name)) out.push_back(n);
  return out;
}

}  // namespace

std::vector<Nic> select_interfaces(const std::vector<Nic>& up, const std::string& socket_ifname) {
  if (!socket_ifname.empty()) return admitted(up, socket_ifname);
  for (const char* rule : {"ib", "^docker,lo,virbr", "docker", "lo", "virbr"}) {
    std::vector<Nic> chosen = admitted(up, rule);
    if (!chosen.empty()) return chosen;
  }
  return {};
}

bool parse_address(const std::string& text, Nic* nic) {
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  if (inet_pton(AF_INET, text.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    nic->addr_len = sizeof v4;
    std::memcpy(&nic->addr, &v4, sizeof v4);
  } else if (inet_pton(AF_INET6, text.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    nic->addr_len = sizeof v6;
    std::memcpy(&nic->addr, &v6, sizeof v6);
  } else {
    return false;
  }
  nic->name = text;
  nic->address = text;
  return true;
}

Result find_nics(const std::string& spec, std::vector<Nic>* out) {
  out->clear();
  if (spec.empty()) {
    const char* ifname = getenv("NCCL_SOCKET_IFNAME");
    *out = select_interfaces(interfaces(), ifname ? ifname : "");
    if (out->empty() && ifname && *ifname)
      return fail(Result::SystemError, "NCCL_SOCKET_IFNAME=%s names no interface that is up with an IP address", ifname);
  } else {
    std::vector<Nic> all = interfaces();
    size_t pos = 0;
    while (pos <= spec.size()) {
      size_t comma = spec.find(',', pos);
      std::string item = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? spec.size() + 1 : comma + 1;
      if (item.empty()) continue;
      Nic nic;
      if (!parse_address(item, &nic)) {
        bool found = false;
        for (const Nic& n : all)
          if (n.name == item) { nic = n; found = true; break; }
        if (!found) return fail(Result::InvalidArgument, "BRAID_NET_NICS: %s is neither an address nor an interface that is up", item.c_str());
      }
      out->push_back(nic);
    }
  }
  if (out->empty()) return fail(Result::SystemError, "no IP interface found for the net plugin");
  if (out->size() > size_t(kMaxNics)) out->resize(kMaxNics);
  return Result::Success;
}

}  // namespace braid::net
