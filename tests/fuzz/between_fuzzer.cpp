// tests/fuzz/between_fuzzer.cpp -- a structured fuzzer of redistributions between meshes on
// device sets (lower/between.hpp plan_between; DESIGN.md section 2, "Meshes on device sets").
// The input bytes choose a world of 1 to 12 ranks (passed to the planner, or 0: the smallest
// that holds both ends), a source placed mesh (0 to 3 axes of sizes 1-6, on ranks drawn from
// a permutation of the world) and a target placed mesh in one of the relations of
// tests/support/between_problems.hpp (the same, permuted, reshaped on the same ranks, or any
// axes on ranks sharing any number of the source's: overlapping, disjoint, a subset, a
// superset), an array of 1 to 3 dimensions (even or uneven, at most 4096 elements) and a type
// of it on each mesh (partitions, replication, pending sums at the source; at the target
// sometimes), optionally a box layout (redist/box.hpp) at either end or both, sometimes
// damaged, and whether to relabel the target's ranks.
//
// plan_between must either refuse with a redist_error (never where the problem has a plan:
// two typed ends whose target keeps no pending sums or keeps some of the source's on the same
// placed mesh, or a valid box layout and typed ends without pending sums) or return candidates
// each of which passes the checks of the property tests (tests/support/between_run.hpp: well
// formed, memory-efficient, its target the problem's, the JSON round trip, a run on the host
// backend over the whole world with every element checked), the chosen one the least
// predicted, its world and target ranks the problem's, the exchange at the data-movement
// lower bound rank by rank; relabelled, never predicted slower, the target on the same ranks.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "fuzz_support.hpp"
#include "redist/box.hpp"
#include "redist/lower/between.hpp"
#include "support/between_problems.hpp"
#include "support/between_run.hpp"

namespace {

using redist::array_layout;
using redist::box;
using redist::box_layout;
using redist::placed_layout;
using redist::plan_choice;
using redist::program;
using redist::testing::detail_between::assignment;
using redist::testing::detail_between::axes_t;

constexpr std::uint64_t between_max_world = 12, between_max_elements = 4096;

/// A permutation of v drawn from the input (Fisher-Yates).
template <class V>
void shuffle(redist::fuzz::byte_reader& in, V& v) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[in.in(0, i - 1)]);
}

/// 0 to 3 axes (mostly 1 to 3) of sizes 1-6 with at most `max_devices` devices.
axes_t draw_axes(redist::fuzz::byte_reader& in, std::uint64_t max_devices, const char* names) {
  const std::uint8_t b = in.byte();
  const std::uint64_t n = b % 8 == 0 ? 0 : 1 + (b / 8) % 3;
  axes_t a;
  std::uint64_t devices = 1;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t s = std::min<std::uint64_t>(in.in(1, 6), max_devices / devices);
    a.push_back({std::string(1, names[i]), s});
    devices *= s;
  }
  return a;
}

/// 1 to 3 axes with exactly `devices` devices.
axes_t draw_axes_of_size(redist::fuzz::byte_reader& in, std::uint64_t devices, const char* names) {
  const std::uint64_t n = in.in(1, 3);
  axes_t a;
  std::uint64_t left = devices;
  for (std::uint64_t i = 0; i + 1 < n; ++i) {
    std::vector<std::uint64_t> divs;
    for (std::uint64_t d = 1; d <= left; ++d)
      if (left % d == 0) divs.push_back(d);
    const std::uint64_t d = divs[in.in(0, divs.size() - 1)];
    a.push_back({std::string(1, names[i]), d});
    left /= d;
  }
  a.push_back({std::string(1, names[n - 1]), left});
  return a;
}

/// Every axis partitions a dimension (in a drawn order within it), replicates, or (where
/// `sums`) is a pending sum.
assignment draw_assignment(redist::fuzz::byte_reader& in, const axes_t& axes, int rank, bool sums) {
  assignment s;
  s.dims.resize(static_cast<std::size_t>(rank));
  for (std::size_t x = 0; x < axes.size(); ++x) {
    const auto d = static_cast<int>(in.in(0, static_cast<std::uint64_t>(rank) + 1));
    if (d == rank + 1 && sums) s.sums.push_back(static_cast<int>(x));
    if (d >= rank) continue;
    auto& v = s.dims[static_cast<std::size_t>(d)];
    v.insert(v.begin() + static_cast<std::ptrdiff_t>(in.in(0, v.size())), static_cast<int>(x));
  }
  return s;
}

/// A box layout of `shape` on W ranks drawn from the input (guillotine_box_layout,
/// tests/support/between_problems.hpp). One in eight is damaged (a box shrunk, grown or
/// dropped): it may then be invalid, which the planner must refuse.
box_layout draw_box_layout(redist::fuzz::byte_reader& in, const std::vector<std::uint64_t>& shape, std::uint64_t W) {
  box_layout l = redist::testing::guillotine_box_layout(
      shape, W, 16, [&](std::uint64_t n) { return in.in(0, n - 1); },
      [&](std::vector<std::uint64_t>& v) { shuffle(in, v); });
  if (in.in(0, 7) == 0) {
    std::optional<box>& b = l.boxes[in.in(0, W - 1)];
    const auto i = static_cast<std::size_t>(in.in(0, shape.size() - 1));
    switch (in.in(0, 2)) {
      case 0:
        if (b && b->hi[i] > b->lo[i]) --b->hi[i];
        break;
      case 1:
        if (b) ++b->hi[i];
        break;
      default:
        b.reset();
    }
  }
  return l;
}

std::string layout_text(const array_layout& l) {
  if (const auto* t = std::get_if<placed_layout>(&l))
    return std::string(redist::type_text(t->pm.mesh, t->type).view()) + " on " + redist::placed_mesh_text(t->pm);
  return "box layout " + redist::box_layout_text(std::get<box_layout>(l));
}

/// One drawn problem, planned and checked.
struct between_case {
  std::uint64_t world = 0;  ///< passed to plan_between (0: the smallest that holds both ends)
  array_layout a, b;
  bool relabel = false;
  bool must_plan = false;  ///< a plan exists (the header comment): a refusal is a finding
  std::string text;

  [[noreturn]] void fail(const std::string& what) const { redist::fuzz::finding(text + ": " + what); }
  void require(const std::string& what, const std::string& error) const {
    if (!error.empty()) fail(what + ": " + error);
  }

  template <class T>
  void run() const {
    using namespace redist;
    const between_options plain{{.element_bytes = sizeof(T)}, false};
    plan_choice c;
    bool planned = false;
    fuzz::refused_cleanly_or_ran([&] {
      try {
        c = plan_between(a, b, world, plain);
        planned = true;
      } catch (const redist_error& e) {
        if (must_plan) fail(std::string("plan_between refused a problem with a plan: ") + e.what());
        throw;
      }
    });
    if (!planned) return;
    const std::uint64_t W = world ? world : std::max(layout_world(a), layout_world(b));
    check_choice<T>(c, b, W, "");
    if (!relabel) return;
    const auto* ta = std::get_if<placed_layout>(&a);
    const auto* tb = std::get_if<placed_layout>(&b);
    plan_choice r;
    fuzz::refused_cleanly_or_ran([&] {
      try {
        r = plan_between(a, b, world, {plain.synth, true});
      } catch (const redist_error& e) {
        fail(std::string("plan_between planned the problem but refused it with relabelling: ") + e.what());
      }
    });
    if (!ta || !tb) {  // a box layout: relabelling changes nothing
      if (r.candidates.size() != c.candidates.size() ||
          program_json_text(r.chosen_program()) != program_json_text(c.chosen_program()))
        fail("relabelling changed the plan to or from a box layout");
      return;
    }
    const auto& w = c.candidates[c.chosen];
    const auto& rw = r.candidates.at(r.chosen);
    if (rw.seconds > w.seconds)
      fail("relabelled " + rw.name + " predicted " + std::to_string(rw.seconds) + " s, without relabelling " + w.name +
           " " + std::to_string(w.seconds) + " s");
    // The relabelled target: b's mesh and type on the ranks the program names.
    placed_layout nb = *tb;
    nb.pm.devices = rw.prog.two_meshes ? rw.prog.target_devices : rw.prog.source_devices;
    if (nb.pm.devices.empty())
      for (std::uint64_t q = 0; q < nb.pm.mesh.devices; ++q) nb.pm.devices.push_back(static_cast<rank_t>(q));
    std::vector<rank_t> was(tb->pm.mesh.devices), now = nb.pm.devices;
    for (std::uint64_t q = 0; q < was.size(); ++q) was[q] = static_cast<rank_t>(tb->pm.at(q));
    std::sort(was.begin(), was.end());
    std::sort(now.begin(), now.end());
    if (was != now) fail("relabelling moved the target to other ranks");
    check_choice<T>(r, nb, W, "relabelled ");
  }

  /// The checks of a plan choice whose target is b (maybe relabelled) in a world of W ranks.
  template <class T>
  void check_choice(const plan_choice& c, const array_layout& tb, std::uint64_t W, const std::string& how) const {
    using namespace redist;
    if (c.candidates.empty() || c.chosen >= c.candidates.size()) fail(how + "plan_between chose no candidate");
    for (const plan_candidate& k : c.candidates)
      if (k.seconds < c.candidates[c.chosen].seconds)
        fail(how + "the chosen " + c.candidates[c.chosen].name + " is predicted slower than " + k.name);
    const program& p = c.chosen_program();
    if (p.world_size() != W) fail(how + "the program's world is " + std::to_string(p.world_size()));
    if (const auto* t = std::get_if<placed_layout>(&tb))
      if (testing::target_positions(p) != t->pm.positions(W)) fail(how + "the program puts the target on other ranks");
    const bool typed = std::holds_alternative<placed_layout>(a) && std::holds_alternative<placed_layout>(tb);
    const dist_type* bt = layout_type(tb);
    if (!typed && (c.candidates.size() != 1 || c.candidates[0].name != "exchange"))
      fail(how + "a box layout planned by other than the exchange alone");
    if (bt && bt->nsum == 0 && !testing::has_between_candidate(c, "exchange")) fail(how + "no exchange candidate");
    for (const plan_candidate& k : c.candidates) {
      const std::string who = how + (&k == &c.candidates[c.chosen] ? "chosen " : "candidate ") + k.name;
      require(who, testing::check_between_program<T>(k.prog, a, tb));
      if (k.name == "exchange") require(who + " bound", testing::check_between_exchange_bound(k.prog, a));
      if (!typed) {
        if (k.prog.steps.size() != 1 || k.prog.steps[0].kind != op::exchange)
          fail(who + ": a box-layout program of other than one exchange");
        const std::vector<box> before = source_boxes(k.prog), after = target_boxes(k.prog);
        std::uint64_t most = 0;
        for (std::size_t r = 0; r < before.size(); ++r)
          most = std::max(most, after[r].size() - intersect(after[r], before[r]).size());
        if (k.prog.cost_elements != most)
          fail(who + ": cost " + std::to_string(k.prog.cost_elements) + ", the bound " + std::to_string(most));
      }
    }
  }
};

const char* const relation_names[] = {"same", "permuted", "reshaped", "shared"};

}  // namespace

int redist::fuzz::harness_between(const std::uint8_t* data, std::size_t size) {
  using namespace redist;
  namespace gen = redist::testing::detail_between;
  fuzz::byte_reader in{data, size};
  const std::uint64_t W = in.in(1, between_max_world);
  std::vector<std::uint32_t> world(W);
  std::iota(world.begin(), world.end(), 0u);
  shuffle(in, world);

  // The meshes.
  const axes_t am = draw_axes(in, W, "xyz");
  const std::uint64_t Da = gen::product(am);
  const std::vector<std::uint32_t> da(world.begin(), world.begin() + static_cast<std::ptrdiff_t>(Da));
  const std::vector<std::uint32_t> rest(world.begin() + static_cast<std::ptrdiff_t>(Da), world.end());
  const auto rel = static_cast<int>(in.in(0, 3));
  axes_t bm;
  std::vector<std::uint32_t> db;
  switch (rel) {
    case 0:  // the same placed mesh
      bm = am;
      db = da;
      break;
    case 1:  // the same mesh, its ranks permuted
      bm = am;
      db = da;
      shuffle(in, db);
      break;
    case 2:  // another shape on the same ranks, maybe permuted
      bm = draw_axes_of_size(in, Da, "abc");
      db = da;
      if (in.in(0, 1)) shuffle(in, db);
      break;
    default: {  // any axes on ranks sharing any number of the source's
      bm = draw_axes(in, W, "abc");
      const std::uint64_t Db = gen::product(bm);
      const std::uint64_t lo = Db > rest.size() ? Db - rest.size() : 0, hi = std::min(Db, Da);
      const std::uint64_t shared = in.in(lo, hi);
      std::vector<std::uint32_t> s = da, o = rest;
      shuffle(in, s);
      shuffle(in, o);
      db.assign(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(shared));
      db.insert(db.end(), o.begin(), o.begin() + static_cast<std::ptrdiff_t>(Db - shared));
      shuffle(in, db);
    }
  }

  // The types.
  const int rank = static_cast<int>(in.in(1, 3));
  const assignment sa = draw_assignment(in, am, rank, true);
  const assignment sb = draw_assignment(in, bm, rank, in.in(0, 3) == 0);
  // Global sizes: a multiple of both types' partition counts, or any size (uneven
  // dimensions, some tiles short or empty); at most between_max_elements in all.
  std::vector<std::uint64_t> shape;
  std::uint64_t total = 1;
  for (std::size_t d = 0; d < static_cast<std::size_t>(rank); ++d) {
    const std::uint64_t l = gen::lcm(gen::parts(am, sa.dims[d]), gen::parts(bm, sb.dims[d]));
    std::uint64_t g = 0;
    switch (in.in(0, 3)) {
      case 0:
      case 1:
        g = l * in.in(1, 3);
        break;
      case 2:
        g = in.in(1, 30);
        break;
      default:
        g = in.in(1, l);
    }
    g = std::min(g, between_max_elements / total);
    shape.push_back(g);
    total *= g;
  }
  testing::between_problem pr;
  const testing::between_text t{W, testing::relation::other, gen::mesh_text(am, da), gen::mesh_text(bm, db),
                                gen::type_text(am, sa, shape), gen::type_text(bm, sb, shape)};
  if (!testing::parse_between(t, pr)) return 0;  // a type that does not check

  // Box layouts, the world passed, relabelling, the element type.
  between_case p;
  p.a = pr.a;
  p.b = pr.b;
  const auto boxes = in.in(0, 5);
  if (boxes == 0 || boxes == 2) p.a = draw_box_layout(in, shape, W);
  if (boxes == 1 || boxes == 2) p.b = draw_box_layout(in, shape, W);
  const bool typed = boxes > 2;
  p.world = in.in(0, 3) == 0 ? 0 : W;
  p.relabel = in.in(0, 1) == 1;
  const bool as_int = in.in(0, 1) == 1;

  if (typed) {
    // A target keeping pending sums has a plan on the same placed mesh, where it keeps some
    // of the source's (the property tests' problems); elsewhere the planner may refuse.
    const dist_type& ta = pr.a.type;
    const dist_type& tb = pr.b.type;
    bool kept = pr.a.pm == pr.b.pm;
    for (int i = 0; kept && i < tb.nsum; ++i) kept = std::find(ta.sum, ta.sum + ta.nsum, tb.sum[i]) != ta.sum + ta.nsum;
    p.must_plan = tb.nsum == 0 || kept;
  } else {
    bool ok = true;
    for (const array_layout* l : {&p.a, &p.b})
      if (const auto* bl = std::get_if<box_layout>(l)) ok = ok && box_layout_problem(*bl, W).empty();
      else ok = ok && std::get<placed_layout>(*l).type.nsum == 0;
    p.must_plan = ok;
  }
  p.text = "W=" + std::to_string(W) + (p.world ? "" : " (passed 0)") + " (" + relation_names[rel] + ") " +
           layout_text(p.a) + " -> " + layout_text(p.b) + (p.relabel ? " relabel" : "") +
           (as_int ? " int64" : " float");
  if (as_int)
    p.run<std::int64_t>();
  else
    p.run<float>();
  return 0;
}
