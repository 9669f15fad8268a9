// Tests of runtime/reshard_executor.hpp (issue 26) on the host backend: random
// reshards of many arrays (tests/support/reshard_problems.hpp) with and
// without budgets, joint and one call per array, every element of every target
// tile checked (runtime/reshard_tiles.hpp); the executor holds nothing on the
// host; inputs are not written; bad tiles are refused before anything moves,
// naming the array and the rank. Fused collectives: FSDP and HSDP gradients, and
// random gradients (meshes, pending axes, reductions, shapes, budgets) whose own
// programs of one or two collectives share their calls, every element checked; a
// plan whose fused sets cannot run is refused. Casts: random reshards converting between
// floating types on the way (every element exact), and an f32 trainer's weights to bf16 and
// f16 engines with values that round, each compared with the nearest pattern
// (runtime/cast.hpp). MPI: tests/backends/mpi_reshard_test.cpp.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "redist/backends/host.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/cast.hpp"
#include "redist/runtime/reshard_executor.hpp"
#include "redist/runtime/reshard_tiles.hpp"
#include "support/random_problems.hpp"
#include "support/reshard_problems.hpp"
#include "support/reshard_run.hpp"

using namespace redist;

namespace {
/// The host backend, counting its agreement calls.
struct counting_host : host_backend {
  using host_backend::host_backend;
  std::size_t agreements = 0;
  agreement agree(std::uint64_t hash, bool ok) {
    ++agreements;
    return host_backend::agree(hash, ok);
  }
};
}  // namespace

TEST_CASE("random reshards on the host backend: every element", "[reshard]") {
  std::mt19937 rng(2626);
  testing::reshard_workload w;
  w.target_sums = true;
  int runs = 0, refused = 0, chunked = 0;
  for (int i = 0; i < 700; ++i) {
    const testing::reshard_case c = testing::random_reshard(rng, w);
    INFO(c.text);
    const reshard_plan p = plan_reshard(c.problem);
    REQUIRE(testing::run_reshard_on_host(p).empty());
    const std::uint64_t row = testing::largest_row(p);
    if (row > 0) {
      const reshard_plan q = plan_reshard(c.problem, {.budget_bytes = row + rng() % (2 * row + 1)});
      chunked += q.chunked_count();
      std::string r;
      try {
        r = testing::run_reshard_on_host(q);
      } catch (const redist_error& e) {  // an own program (pending sums) over the budget even in chunks of one row
        REQUIRE_THAT(e.what(), Catch::Matchers::Contains("its own program holds"));
        ++refused;
      }
      REQUIRE(r.empty());
    }
    if (i % 4 == 0) REQUIRE(testing::run_reshard_on_host(plan_reshard(c.problem, {.joint = false})).empty());
    ++runs;
  }
  CHECK(runs == 700);
  CHECK(chunked > 40);        // own programs chunk by chunk, every element checked
  CHECK(refused < runs / 12);  // budgets of a few bytes below one row of tiny arrays' chunks
}

TEST_CASE("own programs chunk by chunk: every element, within the budget", "[reshard]") {
  // Agreements (counting_host): a joint plan's one (the reshard's covers every chunk); with
  // one call per array, the reshard's and the first chunk's, which covers the others (the
  // same program on the same shapes).
  struct one_case {
    const char *from_mesh, *from, *to_mesh, *to;
    element_type t, to_t;
    std::uint64_t budget, count;
  };
  const one_case cases[] = {
      // one run of every tile (dimension 0), nothing staged
      {"{x: 2}", "[16, 24] sum{x}", "{x: 2}", "[16, {x}24]", element_type::f32, element_type::f32, 600, 2},
      {"{x: 2}", "[16, 24] sum{x}", "{x: 2}", "[16, {x}24]", element_type::f32, element_type::f32, 40, 16},
      // staged: a chunk of dimension 0 is three runs of the source tile (3 units of 10)
      {"{x: 2}", "[30] sum{x}", "{a: 3} @ [2, 3, 4]", "[{a}30]", element_type::i32, element_type::i32, 100, 5},
      // two dimensions cut
      {"{x: 2}", "[30, 4] sum{x}", "{a: 3} @ [2, 3, 4]", "[{a}30, 4]", element_type::f32, element_type::f32, 100, 20},
      // pending values created (a partial step), and cast (bf16 in, reduced in f32)
      {"{x: 2, y: 2}", "[8, {y}12, {x}6]", "{x: 2, y: 2}", "[{x}8, 12, 6] max{y}", element_type::f64, element_type::f64,
       150, 0},
      {"{x: 2}", "[6, 8, 10] sum{x}", "{x: 2}", "[6, {x}8, 10]", element_type::bf16, element_type::f32, 400, 6},
      {"{x: 2}", "[6, 8, 10] sum{x}", "{x: 2}", "[6, 8, {x}10]", element_type::f16, element_type::f16, 40, 0},
  };
  for (const one_case& c : cases) {
    INFO(c.from << " -> " << c.to << ", budget " << c.budget);
    reshard_problem pr;
    reshard_array a;
    a.name = "g";
    a.dtype = c.t;
    if (c.to_t != c.t) a.target_dtype = c.to_t;
    const placed_mesh pa = parse_placed_mesh(c.from_mesh), pb = parse_placed_mesh(c.to_mesh);
    a.source = placed_layout{pa, parse_type(pa.mesh, c.from)};
    a.target = placed_layout{pb, parse_type(pb.mesh, c.to)};
    pr.arrays.push_back(a);
    const reshard_plan p = plan_reshard(pr, {.budget_bytes = c.budget});
    REQUIRE(p.chunked(0));
    if (c.count > 0) CHECK(p.chunks[0].count == c.count);
    counting_host host(p.world);
    reshard_executor<counting_host> ex(host, p);
    CHECK(ex.bytes_held() <= p.chunks[0].held_bytes);
    CHECK(p.chunks[0].held_bytes <= c.budget);
    reshard_tiles t = make_reshard_tiles(ex);
    fill_reshard_sources(p, ex.local_ranks(), t);
    ex.run(t.sources(), t.targets());
    CHECK(host.agreements == 1);
    const reshard_check k = check_reshard_targets(p, ex.local_ranks(), t);
    REQUIRE(k.ok());
    CHECK((k.checked > 0) == !a.target_pending());  // pending values: checked against the whole program's, below
    // the same as the whole program at once, and as one call per array within the budget
    reshard_executor<counting_host> once(host, plan_reshard(pr));
    reshard_tiles u = make_reshard_tiles(once);
    fill_reshard_sources(p, once.local_ranks(), u);
    once.run(u.sources(), u.targets());
    CHECK(u.out == t.out);
    const reshard_plan s = plan_reshard(pr, {.budget_bytes = c.budget, .joint = false});
    CHECK(s.chunked(0));
    CHECK(s.seconds == Approx(p.seconds));
    reshard_executor<counting_host> separate(host, s);
    reshard_tiles v = make_reshard_tiles(separate);
    fill_reshard_sources(s, separate.local_ranks(), v);
    host.agreements = 0;
    separate.run(v.sources(), v.targets());
    CHECK(host.agreements == 2);
    CHECK(v.out == t.out);
  }
}

TEST_CASE("bad tiles are refused before anything moves", "[reshard]") {
  reshard_problem pr;
  reshard_array a;
  a.name = "w";
  a.dtype = element_type::f64;
  const placed_mesh pa = parse_placed_mesh("{x: 2}"), pb = parse_placed_mesh("{y: 2} @ [2, 3]");
  a.source = placed_layout{pa, parse_type(pa.mesh, "[{x}4, 2]")};
  a.target = placed_layout{pb, parse_type(pb.mesh, "[4, {y}2]")};
  pr.arrays.push_back(a);
  const reshard_plan p = plan_reshard(pr);
  REQUIRE(p.world == 4);
  host_backend host(4);
  reshard_executor<host_backend> ex(host, p);
  REQUIRE(ex.source_bytes(0, 0) == 2 * 2 * 8);
  REQUIRE(ex.source_bytes(0, 2) == 0);
  REQUIRE(ex.target_bytes(0, 3) == 4 * 1 * 8);
  reshard_tiles t = make_reshard_tiles(ex);
  fill_reshard_sources(p, ex.local_ranks(), t);
  const auto out = t.out;
  t.out[2].resize(8);  // rank 2's target tile
  REQUIRE_THROWS_WITH(ex.run(t.sources(), t.targets()),
                      "array 'w' on rank 2: the target tile has 8 bytes, expected 32");
  t.out[2].assign(32, std::byte{0});
  t.in[3].resize(16);  // rank 3 is not on the source mesh
  REQUIRE_THROWS_WITH(ex.run(t.sources(), t.targets()),
                      "array 'w' on rank 3: the source tile has 16 bytes, expected 0 (the rank is not on its mesh)");
  t.in[3].clear();
  auto targets = t.targets();
  targets[3] = targets[2];
  REQUIRE_THROWS_WITH(ex.run(t.sources(), targets), "two target tiles overlap");
  REQUIRE(t.out == out);  // nothing moved
  ex.run(t.sources(), t.targets());
  REQUIRE(check_reshard_targets(p, ex.local_ranks(), t).ok());
  host_backend small(3);
  reshard_executor<host_backend> wrong(small, p);
  reshard_tiles u;
  REQUIRE_THROWS_WITH(wrong.run(u.sources(), u.targets()),
                      "the communicator has 3 ranks but the reshard runs on a world of 4 ranks");
  // A plan whose local pieces are not cut into its rounds (edited by hand).
  reshard_plan cut = p;
  cut.local_at.push_back(cut.local.size());
  reshard_executor<host_backend> uncut(host, cut);
  REQUIRE_THROWS_WITH(uncut.run(t.sources(), t.targets()),
                      "the plan's local_at does not cut its " + std::to_string(p.local.size()) +
                          " local pieces into its 1 round");
  // A rank's plan (reshard_options::of_rank) on a backend driving every rank.
  reshard_executor<host_backend> one(host, plan_reshard(pr, {.of_rank = 3}));
  REQUIRE_THROWS_WITH(one.run(t.sources(), t.targets()),
                      "the plan is rank 3's (reshard_options::of_rank), the backend drives 4 ranks");
  // An own program its executor refuses is refused by the reshard's one agreement, naming the
  // array, before the joint exchange moves anything (the own programs agree no more).
  a.name = "g";
  a.source = placed_layout{pa, parse_type(pa.mesh, "[4, 2] sum{x}")};
  a.target = placed_layout{pa, parse_type(pa.mesh, "[{x}4, 2]")};
  pr.arrays.push_back(a);
  reshard_plan bad = plan_reshard(pr);
  REQUIRE(bad.route == std::vector<reshard_route>{reshard_route::joint, reshard_route::own});
  program& g = bad.own[1].candidates[bad.own[1].chosen].prog;
  REQUIRE(g.steps.front().kind == op::reducescatter);
  g.steps.front().members[0] = 1;
  reshard_executor<host_backend> refuses(host, bad);
  reshard_tiles v = make_reshard_tiles(refuses);
  fill_reshard_sources(bad, refuses.local_ranks(), v);
  const auto before = v.out;
  REQUIRE_THROWS_WITH(refuses.run(v.sources(), v.targets()),
                      "array 'g': invalid program: step 0 (reducescatter): the groups must list every rank that "
                      "holds a tile exactly once (1 is listed twice)");
  REQUIRE(v.out == before);  // the joint array's targets untouched too
}

TEST_CASE("fused parameters: every array's tiles back to back in one buffer per rank", "[reshard]") {
  std::mt19937 rng(2727);
  testing::reshard_workload w;
  w.target_sums = true;
  std::uint64_t checked = 0;
  for (int i = 0; i < 300; ++i) {
    const testing::reshard_case c = testing::random_reshard(rng, w);
    INFO(c.text);
    const reshard_plan p = plan_reshard(c.problem, {.joint = i % 5 != 0});
    host_backend host(p.world);
    reshard_executor<host_backend> ex(host, p);
    testing::fused_tiles_run f = testing::fuse_all_tiles(p, ex.local_ranks(), rng);
    const auto before = f.in;
    ex.run(f.sources, f.targets);
    REQUIRE(f.in == before);
    const reshard_check k = check_reshard_targets(p, ex.local_ranks(), f.targets);
    REQUIRE(k.first == "");
    checked += k.checked;
    // The same bytes as tiles of their own.
    reshard_tiles t = make_reshard_tiles(ex);
    fill_reshard_sources(p, ex.local_ranks(), t);
    ex.run(t.sources(), t.targets());
    for (std::size_t j = 0; j < t.out.size(); ++j)
      if (!p.arrays[j % p.arrays.size()].target_pending())
        REQUIRE(std::equal(t.out[j].begin(), t.out[j].end(), f.targets[j].begin(), f.targets[j].end()));
  }
  CHECK(checked > 100000);
}

TEST_CASE("fused parameters: vLLM's qkv_proj written in place, and what is refused", "[reshard]") {
  // q [32, 16], k and v [8, 16] from {fsdp: 2, tp: 2} (FSDP2 over tensor parallelism) to
  // {tp: 4} on the same ranks, where rank r's qkv_proj tile is q's rows 8r..8r+8, then k's
  // 2r..2r+2, then v's.
  const placed_mesh train = parse_placed_mesh("{fsdp: 2, tp: 2}"), infer = parse_placed_mesh("{tp: 4}");
  reshard_problem pr;
  const std::pair<const char*, int> arrays[] = {{"q", 32}, {"k", 8}, {"v", 8}, {"o", 16}};
  for (const auto& [name, rows] : arrays) {
    const std::string n = std::to_string(rows);
    pr.arrays.push_back({name, element_type::f32, placed_layout{train, parse_type(train.mesh, "[{fsdp, tp}" + n + ", 16]")},
                         placed_layout{infer, parse_type(infer.mesh, "[{tp}" + n + ", 16]")}});
  }
  pr.arrays.push_back({"scale", element_type::f64, placed_layout{train, parse_type(train.mesh, "[{fsdp}8]")},
                       placed_layout{infer, parse_type(infer.mesh, "[8]")}});
  const reshard_plan p = plan_reshard(pr);
  const std::size_t A = p.arrays.size();
  host_backend host(4);
  reshard_executor<host_backend> ex(host, p);
  reshard_tiles t = make_reshard_tiles(ex);
  fill_reshard_sources(p, ex.local_ranks(), t);
  std::vector<std::vector<float>> qkv(4, std::vector<float>((8 + 2 + 2) * 16, -1.0F));
  std::vector<std::span<std::byte>> out = t.targets();
  for (rank_t r = 0; r < 4; ++r) {
    REQUIRE(fused_target_bytes(p, r, {"q", "k", "v"}) == qkv[r].size() * sizeof(float));
    REQUIRE(fused_source_bytes(p, r, {"k", "v", "o"}) == (2 + 2 + 4) * 16 * sizeof(float));
    for (const auto& [a, bytes] : fused_targets(p, r, {"q", "k", "v"}, std::as_writable_bytes(std::span(qkv[r]))))
      out[r * A + a] = bytes;
  }
  ex.run(t.sources(), out);
  REQUIRE(check_reshard_targets(p, ex.local_ranks(), out).ok());
  for (rank_t r = 0; r < 4; ++r)  // rank r's row j of qkv_proj: the global row of q, k or v
    for (std::size_t j = 0; j < 12; ++j) {
      const std::uint64_t a = j < 8 ? 0 : j < 10 ? 1 : 2;
      const std::uint64_t row = j < 8 ? 8 * r + j : j < 10 ? 2 * r + j - 8 : 2 * r + j - 10;
      for (std::size_t col = 0; col < 16; ++col)
        REQUIRE(qkv[r][j * 16 + col] == index_value<float>(a * reshard_array_offset + row * 16 + col));
    }
  std::vector<std::byte> buf(12 * 16 * 4);
  REQUIRE_THROWS_WITH(fused_targets(p, 0, {"q", "kk"}, buf), "fused tiles: no array is named 'kk'");
  REQUIRE_THROWS_WITH(fused_targets(p, 0, {"q", "k", "q"}, buf), "fused tiles: array 'q' is named twice");
  REQUIRE_THROWS_WITH(fused_targets(p, 0, {"q", "k"}, buf),
                      "fused target tiles of 'q', 'k' on rank 0: the buffer has 768 bytes, their tiles 640");
  REQUIRE_THROWS_WITH(fused_sources(p, 1, {"k", "v", "o"}, buf),
                      "fused source tiles of 'k', 'v', 'o' on rank 1: the buffer has 768 bytes, their tiles 512");
  REQUIRE_THROWS_WITH(fused_targets(p, 4, {"q"}, buf),
                      "fused target tiles of rank 4: the reshard runs on a world of 4 ranks");
  REQUIRE_THROWS_WITH(fused_targets(p, 0, {"v", "scale"}, buf),
                      "fused tiles: array 'scale' holds f64, array 'v' f32 (a fused buffer holds one element type)");
  // The sizes refuse what fused_targets refuses.
  REQUIRE_THROWS_WITH(fused_target_bytes(p, 0, {"q", "kk"}), "fused tiles: no array is named 'kk'");
  REQUIRE_THROWS_WITH(fused_source_bytes(p, 4, {"q"}), "fused source tiles of rank 4: the reshard runs on a world of 4 ranks");
  REQUIRE_THROWS_WITH(fused_target_bytes(p, 1, {"v", "scale"}),
                      "fused tiles: array 'scale' holds f64, array 'v' f32 (a fused buffer holds one element type)");
}

TEST_CASE("fused parameters: fewer key and value heads than ranks, each head on several (vLLM)", "[reshard]") {
  // q [32, 16] (8 heads of 4 rows), k and v [8, 16] (2 heads) from {fsdp: 2, tp: 2} to vLLM's
  // TP 4 on the same ranks, and to TP 2 on ranks 3 and 1: rank r's qkv_proj holds q's rows of
  // its heads, then the rows of its one key (value) head, which TP / 2 ranks side by side
  // hold: k and v typed on {kv: 2, rep: TP / 2}.
  const placed_mesh train = parse_placed_mesh("{fsdp: 2, tp: 2}");
  for (const std::string& devices : {std::string(), std::string(" @ [3, 1]")}) {
    const placed_mesh infer = parse_placed_mesh(devices.empty() ? "{tp: 4}" : "{tp: 2}" + devices);
    const std::uint64_t T = infer.mesh.devices;
    const placed_mesh kv = parse_placed_mesh("{kv: 2, rep: " + std::to_string(T / 2) + "}" + devices);
    reshard_problem pr;
    pr.world = 4;
    pr.arrays.push_back({"q", element_type::f32, placed_layout{train, parse_type(train.mesh, "[{fsdp, tp}32, 16]")},
                         placed_layout{infer, parse_type(infer.mesh, "[{tp}32, 16]")}});
    for (const char* name : {"k", "v"})
      pr.arrays.push_back({name, element_type::f32, placed_layout{train, parse_type(train.mesh, "[{fsdp, tp}8, 16]")},
                           placed_layout{kv, parse_type(kv.mesh, "[{kv}8, 16]")}});
    const reshard_plan p = plan_reshard(pr);
    host_backend host(4);
    reshard_executor<host_backend> ex(host, p);
    reshard_tiles t = make_reshard_tiles(ex);
    fill_reshard_sources(p, ex.local_ranks(), t);
    std::vector<std::span<std::byte>> out = t.targets();
    const std::uint64_t q_rows = 32 / T;
    std::vector<std::vector<float>> qkv(4);
    for (rank_t r = 0; r < 4; ++r) {
      const bool engine = infer.positions(4)[r] >= 0;
      qkv[r].assign(engine ? (q_rows + 4 + 4) * 16 : 0, -1.0F);
      REQUIRE(fused_target_bytes(p, r, {"q", "k", "v"}) == qkv[r].size() * sizeof(float));
      for (const auto& [a, bytes] : fused_targets(p, r, {"q", "k", "v"}, std::as_writable_bytes(std::span(qkv[r]))))
        out[r * 3 + a] = bytes;
    }
    ex.run(t.sources(), out);
    REQUIRE(check_reshard_targets(p, ex.local_ranks(), out).ok());
    for (rank_t r = 0; r < 4; ++r) {
      const std::int64_t pos = infer.positions(4)[r];
      if (pos < 0) continue;
      const auto at = static_cast<std::uint64_t>(pos), head = at / (T / 2);  // its key and value head
      for (std::uint64_t j = 0; j < q_rows + 8; ++j) {
        const std::uint64_t a = j < q_rows ? 0 : j < q_rows + 4 ? 1 : 2;
        const std::uint64_t row = j < q_rows ? q_rows * at + j : 4 * head + (j - q_rows) % 4;
        for (std::uint64_t col = 0; col < 16; ++col)
          REQUIRE(qkv[r][j * 16 + col] == index_value<float>(a * reshard_array_offset + row * 16 + col));
      }
    }
    for (rank_t r = 0; r < 4; ++r) CHECK(p.received_bytes[r] == p.lower_bound_bytes[r]);
  }
}

TEST_CASE("gradients: own all-reduces and reduce-scatters run as one call per kind and group", "[reshard]") {
  const reshard_problem pr = testing::gradient_reshard(4);
  const reshard_plan p = plan_reshard(pr);
  REQUIRE(p.count(reshard_route::own) == pr.arrays.size());
  host_backend host(8);
  const reshard_executor<host_backend> ex(host, p);
  const auto sets = ex.fused_arrays();
  // The plan's sets (tests/lower/test_reshard.cpp): every array whose program is one
  // all-reduce or reduce-scatter shares a call with the others of its kind, reduction,
  // element type and groups.
  REQUIRE(sets.size() == p.fused.size());
  for (std::size_t k = 0; k < sets.size(); ++k)
    REQUIRE(std::equal(sets[k].begin(), sets[k].end(), p.fused[k].arrays.begin(), p.fused[k].arrays.end()));
  std::vector<int> in_set(pr.arrays.size(), -1);
  for (std::size_t k = 0; k < sets.size(); ++k) {
    REQUIRE(sets[k].size() >= 2);
    const step& s0 = p.own[sets[k][0]].chosen_program().steps[0];
    for (std::size_t a : sets[k]) {
      in_set[a] = static_cast<int>(k);
      const step& s = p.own[a].chosen_program().steps[0];
      REQUIRE(pr.arrays[a].dtype == pr.arrays[sets[k][0]].dtype);
      REQUIRE((s.kind == s0.kind && s.reduce == s0.reduce && s.members == s0.members));
    }
  }
  for (std::size_t a = 0; a < pr.arrays.size(); ++a) {
    INFO(pr.arrays[a].name);
    REQUIRE(detail::fusible(p.own[a].chosen_program(), 8));
    REQUIRE(in_set[a] >= 0);
  }
  REQUIRE(in_set[0] == in_set[4]);  // w0 and w1
  REQUIRE(in_set[0] != in_set[3]);  // w0 and t0: other groups
  REQUIRE(in_set[0] != in_set[2]);  // w0 and d0: other element types
  REQUIRE(in_set[16] == in_set[17]);
  REQUIRE(testing::run_reshard_on_host(p).empty());
  // One call per array fuses nothing.
  const reshard_plan separate = plan_reshard(pr, {.joint = false});
  REQUIRE(reshard_executor<host_backend>(host, separate).fused_arrays().empty());
  // Nothing fused, 18 own programs: a joint plan is one call, one agreement; one call per
  // array, the reshard's and one per program.
  for (const bool joint : {true, false}) {
    const reshard_plan u = plan_reshard(pr, {.joint = joint, .fuse_array_bytes = 0});
    REQUIRE(u.fused.empty());
    counting_host counting(8);
    reshard_executor<counting_host> eu(counting, u);
    reshard_tiles t = make_reshard_tiles(eu);
    fill_reshard_sources(u, eu.local_ranks(), t);
    eu.run(t.sources(), t.targets());
    CHECK(counting.agreements == (joint ? 1 : 1 + pr.arrays.size()));
    CHECK(check_reshard_targets(u, eu.local_ranks(), t).ok());
  }
  // Under a budget the sets split to fit it, and every element still arrives.
  const std::uint64_t budget = testing::gradient_budget;  // two weights' reduce-scatter buffers
  const reshard_plan q = plan_reshard(pr, {.budget_bytes = budget});
  const reshard_executor<host_backend> eq(host, q);
  std::size_t weights = 0;
  for (const auto& set : eq.fused_arrays())
    if (pr.arrays[set[0]].name[0] == 'w') {
      REQUIRE(set.size() == 2);
      ++weights;
    }
  REQUIRE(weights == 2);
  REQUIRE(eq.bytes_held() <= budget);
  REQUIRE(testing::run_reshard_on_host(q).empty());
  // A plan whose fused sets cannot run as one call each is refused before anything moves.
  auto refused = [&](reshard_plan bad, const std::string& what) {
    reshard_executor<host_backend> eb(host, std::move(bad));
    reshard_tiles t = make_reshard_tiles(eb);
    fill_reshard_sources(p, eb.local_ranks(), t);
    const auto before = t.out;
    REQUIRE_THROWS_WITH(eb.run(t.sources(), t.targets()), what);
    REQUIRE(t.out == before);
  };
  reshard_plan bad = p;
  bad.fused[0].arrays[1] = 1;  // n0 all-reduces
  refused(bad, "fused collective 1 of the plan takes array 'n0', whose element type or step is not that of array 'w0'");
  bad = p;
  bad.fused[1].arrays = {0, 1};  // w0 is also in set 1
  refused(bad, "fused collective 2 of the plan lists array 'w0' twice or out of order");
  bad = p;
  bad.fused[4].arrays.pop_back();
  refused(bad, "fused collective 5 of the plan has fewer than two arrays");
}

TEST_CASE("random gradients: fused collectives on random meshes, axes, reductions and shapes", "[reshard]") {
  std::mt19937 rng(2611);
  std::size_t fused = 0, steps2 = 0, refused = 0, bounded = 0, split = 0, cast = 0;
  const double usual = reshard_options{}.fuse_set_calls;
  const std::size_t n = testing::scaled(2000);
  for (std::size_t i = 0; i < n; ++i) {
    const reshard_problem pr = testing::random_gradient_reshard(rng);
    const std::uint64_t budget = i % 3 == 2 ? 16384 + rng() % 65536 : 0;
    // Every fourth: calls bounded to 0.2-2.2 agreements' time, which splits most sets.
    const double calls = i % 4 == 1 ? 0.2 + static_cast<double>(rng() % 200) / 100 : usual;
    const reshard_plan p = plan_reshard(pr, {.budget_bytes = budget, .fuse_set_calls = calls});
    auto text_of = [](const array_layout& l) {
      const placed_layout& x = std::get<placed_layout>(l);
      return std::string(type_text(x.pm.mesh, x.type).view()) + " on " + placed_mesh_text(x.pm);
    };
    const std::string text = std::to_string(i) + ": " + text_of(pr.arrays[0].source) + " -> " +
                             text_of(pr.arrays[0].target) + ", budget " + std::to_string(budget);
    INFO(text);
    REQUIRE(testing::check_reshard_plan(p, budget) == "");
    const double most = calls * detail::call_seconds(builtin_profile, p.world);
    for (const reshard_fused& f : p.fused) {
      fused += f.arrays.size();
      steps2 += p.own[f.arrays[0]].chosen_program().steps.size() > 1;
      for (const std::uint32_t a : f.arrays) cast += p.arrays[a].casts();  // converted as packed, copied out
      REQUIRE(f.seconds <= most);
      bounded += calls < usual;
    }
    if (calls < usual) split += plan_reshard(pr, {.budget_bytes = budget}).fused.size() != p.fused.size();
    std::string wrong;
    try {
      wrong = testing::run_reshard_on_host(p);
    } catch (const redist_error& e) {  // an own program's buffers over the budget: refused, nothing moved
      REQUIRE(std::string(e.what()).find("more than the budget of " + std::to_string(budget)) != std::string::npos);
      ++refused;
    }
    REQUIRE(wrong == "");
  }
  CHECK(fused > n);           // the test is about fused calls: most problems have some
  CHECK(steps2 * 10 > n);     // and of two steps
  CHECK(refused * 10 < n);    // most budgets hold every own program
  CHECK(bounded * 20 > 3 * n);  // bounded calls still fuse
  CHECK(split * 25 > n);      // in other sets than unbounded ones
  CHECK(cast * 2 > n);        // mixed precision: 16-bit gradients reduced in f32, f32 ones into bf16
}

TEST_CASE("HSDP gradients: own programs of two collectives run as one call per step", "[reshard]") {
  // Reduce-scatter then all-reduce (w*), reduce-scatter then all-gather (v*, e*), all-reduce
  // then all-gather (n*): tests/lower/test_reshard.cpp checks the sets.
  const reshard_problem pr = testing::hsdp_gradient_reshard(3);
  const reshard_plan p = plan_reshard(pr);
  REQUIRE(p.fused.size() == 4);
  host_backend host(8);
  const reshard_executor<host_backend> ex(host, p);
  REQUIRE(ex.fused_arrays().size() == 4);
  std::uint64_t most = 0;
  for (const reshard_fused& f : p.fused) most = std::max(most, f.bytes);
  REQUIRE(ex.bytes_held() == most);
  REQUIRE(testing::run_reshard_on_host(p).empty());
  // A budget that holds two of the v* arrays' buffers (8192 elements of chunks, 2048 of
  // the reduce-scatter's result, each): v0 and v1 share a call, v2 runs its own program.
  const std::uint64_t budget = 2 * (8192 + 2048) * 4;
  const reshard_plan q = plan_reshard(pr, {.budget_bytes = budget});
  REQUIRE(q.fused.size() == 4);
  REQUIRE(q.fused[1].arrays == std::vector<std::uint32_t>{1, 5});
  REQUIRE(reshard_executor<host_backend>(host, q).bytes_held() <= budget);
  REQUIRE(testing::run_reshard_on_host(q).empty());
}

TEST_CASE("casts: random reshards converting between floating types on the way, every element", "[reshard][cast]") {
  std::mt19937 rng(2633);
  testing::reshard_workload w;
  w.casts = true;
  int casts = 0, pending = 0;
  for (int i = 0; i < 300; ++i) {
    const testing::reshard_case c = testing::random_reshard(rng, w);
    INFO(c.text);
    const reshard_plan p = plan_reshard(c.problem);
    for (const reshard_array& a : p.arrays) {
      casts += a.casts();
      pending += a.casts_pending();  // reduced in their program types, staged
    }
    REQUIRE(testing::run_reshard_on_host(p).empty());
    if (i % 3 == 0) {  // every rank's tiles in one buffer per end and element type
      host_backend host(p.world);
      reshard_executor<host_backend> ex(host, p);
      testing::fused_tiles_run f = testing::fuse_all_tiles(p, ex.local_ranks(), rng);
      ex.run(f.sources, f.targets);
      REQUIRE(check_reshard_targets(p, ex.local_ranks(), f.targets).first == "");
    }
  }
  CHECK(casts > 150);
  CHECK(pending > 15);
}

TEST_CASE("casts: an f32 trainer's weights to bf16 and f16 engines, rounded as PyTorch rounds", "[reshard][cast]") {
  // q [16, 8] f32 on {fsdp: 2, tp: 2} ([{fsdp, tp}16, 8]: FSDP2 over TP's rows) to bf16 on
  // {tp: 4} (the same ranks) and to f16 on {tp: 2} @ [3, 1]; values that both round, so every
  // target element is the nearest bf16 (f16) to its source element, ties to even.
  const placed_mesh train = parse_placed_mesh("{fsdp: 2, tp: 2}");
  for (const auto& [cast_to, mesh] : {std::pair{element_type::bf16, std::string("{tp: 4}")},
                                      std::pair{element_type::f16, std::string("{tp: 2} @ [3, 1]")}}) {
    const element_type to = cast_to;  // a variable the lambdas below may capture
    INFO(element_type_name(to) << " on " << mesh);
    const placed_mesh engine = parse_placed_mesh(mesh);
    reshard_problem pr;
    pr.world = 4;
    reshard_array a;
    a.name = "q";
    a.source = placed_layout{train, parse_type(train.mesh, "[{fsdp, tp}16, 8]")};
    a.target = placed_layout{engine, parse_type(engine.mesh, "[{tp}16, 8]")};
    a.target_dtype = to;
    pr.arrays.push_back(a);
    auto value = [](std::uint64_t g) { return static_cast<float>(std::sin(static_cast<double>(g) + 0.5) * 1000.0); };
    for (const std::uint64_t budget : {std::uint64_t{0}, std::uint64_t{16}}) {
      const reshard_plan p = plan_reshard(pr, {.budget_bytes = budget});
      host_backend host(4);
      reshard_executor<host_backend> ex(host, p);
      reshard_tiles t = make_reshard_tiles(ex);
      std::uint64_t checked = 0;
      for (rank_t r = 0; r < 4; ++r) {
        darray<float> s(train.mesh, std::get<placed_layout>(a.source).type, r,
                        std::span<float>(reinterpret_cast<float*>(t.in[r].data()), t.in[r].size() / 4));
        for_each_global(s, [&](std::uint64_t g, float& v) { v = value(g); });
        // Its target tile: 16 x 8 / TP elements of 2 bytes (none off the engine's ranks).
        REQUIRE(ex.target_bytes(0, r) == (engine.positions(4)[r] >= 0 ? 256 / engine.mesh.devices : 0));
      }
      ex.run(t.sources(), t.targets());
      for (rank_t r = 0; r < 4; ++r) {
        const std::int64_t pos = engine.positions(4)[r];
        if (pos < 0) continue;
        darray<std::uint16_t> d(engine.mesh, std::get<placed_layout>(a.target).type, static_cast<rank_t>(pos),
                                std::span<std::uint16_t>(reinterpret_cast<std::uint16_t*>(t.out[r].data()), t.out[r].size() / 2));
        for_each_global(d, [&](std::uint64_t g, std::uint16_t& v) {
          const std::uint16_t want = to == element_type::bf16 ? float_to_bf16_bits(value(g)) : float_to_f16_bits(value(g));
          REQUIRE(v == want);
          ++checked;
        });
      }
      CHECK(checked == 128);
      // Every rank receives its 16 x 8 / TP elements as 2-byte elements, less what it kept.
      CHECK(p.received_bytes == p.lower_bound_bytes);
    }
  }
}
