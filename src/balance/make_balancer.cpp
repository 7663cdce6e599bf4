#include <cmath>
#include <string>
#include <vector>

#include "balance/balancer.h"
#include "balance/flexlink_balancer.h"
#include "balance/hylink_balancer.h"
#include "balance/static_balancer.h"
#include "common/settings.h"

namespace braid::balance {

Result make_balancer(std::string_view kind, int num_paths, double static_share,
                     std::unique_ptr<Balancer>* out) {
  if (num_paths < 1 || num_paths > 64)
    return fail(Result::InvalidArgument, "balancer: %d paths (1 to 64 allowed)", num_paths);
  if (kind == "hylink") {
    if (num_paths != 2)
      return fail(Result::InvalidArgument,
                  "balancer hylink splits across exactly 2 paths, not %d (use flexlink)",
                  num_paths);
    *out = std::make_unique<HyLinkBalancer>();
  } else if (kind == "flexlink") {
    *out = std::make_unique<FlexLinkBalancer>(num_paths);
  } else if (kind == "static") {
    if (!(static_share >= 0 && static_share <= 1))
      return fail(Result::InvalidArgument, "BRAID_STATIC_SHARE %g is not in [0,1]", static_share);
    std::vector<double> fractions(static_cast<size_t>(num_paths), 0.0);
    for (int p = 1; p < num_paths; ++p) fractions[p] = static_share / (num_paths - 1);
    *out = std::make_unique<StaticBalancer>(quantize_shares(fractions));
  } else {
    return fail(Result::InvalidArgument,
                "BRAID_BALANCER '%.*s' unknown: use hylink, flexlink or static",
                static_cast<int>(kind.size()), kind.data());
  }
  return Result::Success;
}

Result make_balancer_from_settings(int num_paths, std::unique_ptr<Balancer>* out) {
  return make_balancer(settings().balancer, num_paths, settings().static_share, out);
}

}  // namespace braid::balance
