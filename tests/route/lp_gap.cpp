// The router against the LP optimum of the same min-congestion problem over the same paths,
// solved by GLPK's simplex (not by the router):
//   minimise U  s.t.  sum_p x_fp = 1 (each flow f),  sum_{f,p ∋ e} bytes_f x_fp / cap_e <= U,  x >= 0.
#include <glpk.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common.h"
#include "route/router.h"

namespace braid::route {
namespace {

// Congestion in the same units as the router (seconds); capacities scaled to keep GLPK happy.
double lp_optimum(const Router& r, const Traffic& t) {
  const int n = r.ranks();
  const PathSet& ps = r.paths();
  glp_term_out(GLP_OFF);
  glp_prob* lp = glp_create_prob();
  glp_set_obj_dir(lp, GLP_MIN);
  // Directed links, indexed as the rows after the flow rows.
  std::vector<std::pair<int, bool>> links;
  auto link_row = [&](const DirLink& l) {
    for (size_t i = 0; i < links.size(); ++i)
      if (links[i].first == l.link && links[i].second == l.forward) return int(i);
    links.push_back({l.link, l.forward});
    return int(links.size() - 1);
  };
  struct Col { int flow; double bytes; const Path* path; };
  std::vector<Col> cols;
  int flows = 0;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d || t.at(s, d) <= 0) continue;
      for (const Path& p : ps.of(s, d)) cols.push_back({flows, t.at(s, d), &p});
      ++flows;
    }
  for (const Col& c : cols)
    for (const DirLink& l : c.path->hops) link_row(l);
  const int rows = flows + int(links.size());
  glp_add_rows(lp, rows);
  for (int f = 0; f < flows; ++f) glp_set_row_bnds(lp, f + 1, GLP_FX, 1.0, 1.0);
  for (size_t e = 0; e < links.size(); ++e) glp_set_row_bnds(lp, flows + int(e) + 1, GLP_UP, 0.0, 0.0);
  const int ncols = int(cols.size()) + 1;  // last column: U (in ms)
  glp_add_cols(lp, ncols);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  std::vector<double> cap(links.size(), 0);
  for (size_t c = 0; c < cols.size(); ++c) {
    glp_set_col_bnds(lp, int(c) + 1, GLP_LO, 0.0, 0.0);
    ia.push_back(cols[c].flow + 1), ja.push_back(int(c) + 1), ar.push_back(1.0);
    for (const DirLink& l : cols[c].path->hops) {
      const int row = link_row(l);
      ia.push_back(flows + row + 1), ja.push_back(int(c) + 1), ar.push_back(cols[c].bytes / l.capacity * 1e3);
    }
  }
  glp_set_col_bnds(lp, ncols, GLP_LO, 0.0, 0.0);
  glp_set_obj_coef(lp, ncols, 1.0);
  for (size_t e = 0; e < links.size(); ++e) ia.push_back(flows + int(e) + 1), ja.push_back(ncols), ar.push_back(-1.0);
  glp_load_matrix(lp, int(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  EXPECT_EQ(glp_simplex(lp, &parm), 0);
  EXPECT_EQ(glp_get_status(lp), GLP_OPT);
  const double u = glp_get_obj_val(lp) * 1e-3;
  glp_delete_prob(lp);
  return u;
}

struct Case {
  const char* name;
  Traffic traffic;
};

std::vector<Case> cases(int n) {
  std::vector<Case> out;
  for (unsigned seed = 1; seed <= 5; ++seed) {
    out.push_back({"random", testing::random_matrix(n, seed)});
    out.push_back({"zipf 0.6", testing::zipf(n, seed, 0.6)});
    out.push_back({"zipf 1.2", testing::zipf(n, seed, 1.2)});
    out.push_back({"zipf 2.0", testing::zipf(n, seed, 2.0)});
    out.push_back({"permutation", testing::permutation(n, seed)});
  }
  out.push_back({"one-hot-expert", testing::one_hot_expert(n, 0)});
  out.push_back({"one-hot-expert", testing::one_hot_expert(n, n - 1)});
  out.push_back({"uniform", testing::uniform(n, 32e6)});
  return out;
}

void check_gaps(const topo::Topology& topo, const char* label) {
  Router r;
  RouterOptions o;
  ASSERT_EQ(r.init(topo, o), Result::Success) << last_error();
  double worst = 0;
  auto check = [&](const char* name, const Traffic& traffic, Routing* out) {
    ASSERT_EQ(r.solve(traffic, out), Result::Success);
    const double lp = lp_optimum(r, traffic);
    const double gap = out->max_congestion / lp - 1;
    worst = std::max(worst, gap);
    std::printf("%s %-22s router %.6f ms  LP %.6f ms  gap %+.2f%%  bound %+.2f%%  (%d Newton passes%s)\n", label, name,
                out->max_congestion * 1e3, lp * 1e3, gap * 100, (out->lower_bound / lp - 1) * 100, out->passes,
                out->warm ? ", warm" : "");
    EXPECT_GE(gap, -1e-6) << name << ": the router beat the LP optimum";
    EXPECT_LE(out->lower_bound, lp * (1 + 1e-6)) << name << ": the lower bound is above the LP optimum";
    EXPECT_LE(gap, 0.03) << name;
  };
  for (const Case& c : cases(r.ranks())) {
    Routing routing;
    check(c.name, c.traffic, &routing);
    // Warm: the next step's matrix (every flow within +-20%) from this routing.
    RouterOptions always_new = o;
    always_new.hysteresis = -1;
    r.set_options(always_new);
    check((std::string(c.name) + " (warm)").c_str(), testing::nudged(c.traffic, 20), &routing);
    EXPECT_TRUE(routing.warm) << c.name;
    r.set_options(o);
  }
  std::printf("%s worst gap %+.2f%%\n", label, worst * 100);
}

TEST(RouteLpGap, Mesh4) { check_gaps(testing::mesh(4), "mesh4"); }

TEST(RouteLpGap, Mesh8) { check_gaps(testing::mesh(8), "mesh8"); }

TEST(RouteLpGap, Cluster4x4Nic) { check_gaps(testing::cluster(4, 4), "cluster4x4"); }

TEST(RouteLpGap, Nimble) {
  topo::Topology t;
  ASSERT_EQ(topo::load_topology(testing::nimble_path(), &t), Result::Success) << last_error();
  check_gaps(t, "nimble");
}

}  // namespace
}  // namespace braid::route
