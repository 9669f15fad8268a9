// redist/lower/lower.hpp -- lowering a weak plan to a collective program with explicit
// rank groups (paper Sec. 6, Theorem 6.4, and the permutation optimizations of Sec. 7.3).
//
// The physical state is, for every rank, the block index of its tile along every
// dimension, and the index of the partial value it holds (partial sums: one more
// column, the sum index of core/offsets.hpp). Under the program semantics (program.hpp)
// each collective changes a rank's indices by a function of that rank's own indices:
//   allgather(i, F):     b_i <- b_i / F
//   alltoall(i -> j, F): b_i <- b_i / F,  b_j <- F * b_j + b_i % F
//   dynslice(i, F):      b_i <- F * b_i + s      (s: the chunk the rank keeps)
//   allreduce(F):        p <- p / F               (p: the partial's index)
//   reducescatter(i, F): p <- p / F,  b_i <- F * b_i + p % F
// (an allreduce is an allgather of the sum column, a reduce-scatter an alltoall from it)
// so the only freedom of a lowering is the chunk s every rank keeps at each dynslice
// (which ranks form a group changes no rank's result). Choosing the device map phi' of
// Fig. 10 amounts to choosing these chunks and the groups.
//
// The lowering therefore (1) solves, per rank, for the chunks that make the rank end with
// exactly its target tile (forward over the dynslice choices or backward over the
// gathered blocks, whichever is smaller); (2) keeps those choices where they are
// balanced (each chunk kept by equally many replicas, so that groups exist), otherwise
// fills in balanced ones; (3) forms groups of ranks in ascending order, which follow the
// mesh axes when the state does; (4) if some rank would not end with its target tile,
// inserts the single allpermute of Theorem 6.7, moved before the trailing allgathers
// (Sec. 7.3), keeping every tile that is already in place.
// This subsumes "bias the axis choice toward the target's axes": when a permutation-free
// lowering exists for the weak plan and step (1) finds it, no allpermute is emitted.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/core/mesh.hpp"
#include "redist/core/offsets.hpp"
#include "redist/lower/fuse.hpp"
#include "redist/lower/partial.hpp"
#include "redist/program.hpp"
#include "redist/search/constexpr_search.hpp"
#include "redist/search/tight_paths.hpp"
#include "redist/search/weak_graph.hpp"

namespace redist {

namespace detail {

/// Per-rank state: rank + 1 columns per rank (the blocks of every dimension, then the
/// index of the partial value), and the tiles per dimension.
struct block_state {
  int rank = 0;  ///< columns: the array's rank + 1
  std::uint64_t devices = 0;
  std::vector<std::uint64_t> b;
  shape parts{};
  constexpr std::uint64_t* at(std::uint64_t r) { return b.data() + r * static_cast<std::uint64_t>(rank); }
  constexpr const std::uint64_t* at(std::uint64_t r) const { return b.data() + r * static_cast<std::uint64_t>(rank); }
  /// Number of values column d takes.
  [[nodiscard]] constexpr std::uint64_t radix(int d) const { return d < parts.rank ? parts.parts[d] : parts.sums; }
};

/// The state of a type under the default device map. The index of the partial is the
/// mixed-radix number of the sum axes' coordinates in the order `sum_order` (default:
/// the type's, ascending ids): summation is commutative, so any order describes the
/// same data, and a reduction consumes the fastest digits.
constexpr block_state state_of(const device_mesh& m, const dist_type& t, const std::uint8_t* sum_order = nullptr) {
  const int cols = t.rank + 1;
  block_state s{cols, m.devices, std::vector<std::uint64_t>(m.devices * static_cast<std::uint64_t>(cols), 0), shape_of(m, t)};
  dist_type ordered = t;
  if (sum_order)
    for (int i = 0; i < t.nsum; ++i) ordered.sum[i] = sum_order[i];
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    for (int d = 0; d < t.rank; ++d) s.at(r)[d] = block_index(m, t.dims[d], r);
    s.at(r)[t.rank] = sum_index(m, ordered, r);
  }
  return s;
}

/// Apply a weak edge to one rank's blocks; `s` is the dynslice chunk.
constexpr void apply_edge(const weak_edge& e, std::uint64_t* b, std::uint64_t s) {
  const std::uint64_t f = e.factor;
  switch (e.kind) {
    case op::allgather:
    case op::allreduce: b[e.from] /= f; break;
    case op::alltoall:
    case op::reducescatter: {
      std::uint64_t t = b[e.from] % f;
      b[e.from] /= f;
      b[e.to] = b[e.to] * f + t;
      break;
    }
    case op::dynslice: b[e.to] = b[e.to] * f + s; break;
    default: break;
  }
}

/// Apply a weak edge to every rank; `chunks` holds the dynslice chunk of every rank.
constexpr void apply_all(block_state& st, const weak_edge& e, const std::vector<rank_t>* chunks = nullptr) {
  for (std::uint64_t r = 0; r < st.devices; ++r) apply_edge(e, st.at(r), chunks ? (*chunks)[r] : 0);
  if (e.from >= 0) (e.from < st.parts.rank ? st.parts.parts[e.from] : st.parts.sums) /= e.factor;
  if (e.to >= 0) st.parts.parts[e.to] *= e.factor;
}

constexpr bool same_blocks(const std::uint64_t* a, const std::uint64_t* b, int n) {
  for (int d = 0; d < n; ++d)
    if (a[d] != b[d]) return false;
  return true;
}

/// Step (1): the dynslice chunks that take one rank from `src` to `dst`, if any.
/// `choice` receives one value per dynslice step (in path order).
constexpr bool solve_rank(const std::vector<weak_step>& path, const std::uint64_t* src, const std::uint64_t* dst, int rank,
                          std::uint64_t S, std::uint64_t G, std::vector<std::uint64_t>& choice) {
  std::uint64_t b[max_dims]{};
  choice.assign(choice.size(), 0);
  if (S <= G) {  // forward over the dynslice choices
    for (std::uint64_t c = 0; c < S; ++c) {
      for (int d = 0; d < rank; ++d) b[d] = src[d];
      std::uint64_t rest = c;
      std::size_t k = 0;
      for (const auto& st : path) {
        std::uint64_t s = 0;
        if (st.edge.kind == op::dynslice) {
          s = rest % st.edge.factor;
          rest /= st.edge.factor;
          choice[k++] = s;
        }
        apply_edge(st.edge, b, s);
      }
      if (same_blocks(b, dst, rank)) return true;
    }
    return false;
  }
  for (std::uint64_t u = 0; u < G; ++u) {  // backward over the gathered blocks
    for (int d = 0; d < rank; ++d) b[d] = dst[d];
    std::uint64_t rest = u;
    std::size_t k = choice.size();
    for (std::size_t q = path.size(); q-- > 0;) {
      const weak_edge& e = path[q].edge;
      const std::uint64_t f = e.factor;
      if (e.kind == op::allgather || e.kind == op::allreduce) {
        b[e.from] = b[e.from] * f + rest % f;
        rest /= f;
      } else if (e.kind == op::alltoall || e.kind == op::reducescatter) {
        std::uint64_t t = b[e.to] % f;
        b[e.to] /= f;
        b[e.from] = b[e.from] * f + t;
      } else if (e.kind == op::dynslice) {
        choice[--k] = b[e.to] % f;
        b[e.to] /= f;
      }
    }
    if (same_blocks(b, src, rank)) return true;
  }
  return false;
}

/// Ranks ordered by (blocks with blocks[i] divided by f, blocks[i] % f, rank), with the
/// boundaries of the classes of equal keys (ranks that differ at most in blocks[i] % f):
/// class c is ord[bounds[c], bounds[c+1]). i = -1 groups ranks holding the same tile.
/// Keys are mixed-radix numbers below the device count, packed with the rank into one
/// 64-bit word, so ordering is one integer sort.
struct key_classes {
  std::vector<rank_t> ord;
  std::vector<std::size_t> bounds;
};

constexpr key_classes classes_by_key(const block_state& st, int i, std::uint64_t f) {
  std::vector<std::uint64_t> packed(st.devices, 0);
  for (std::uint64_t r = 0; r < st.devices; ++r) {
    const std::uint64_t* b = st.at(r);
    std::uint64_t key = 0;
    for (int d = 0; d < st.rank; ++d) key = key * (d == i ? st.radix(d) / f : st.radix(d)) + (d == i ? b[d] / f : b[d]);
    const std::uint64_t pos = i >= 0 ? b[i] % f : 0;
    packed[r] = ((key * f + pos) << 32) | r;
  }
  std::sort(packed.begin(), packed.end());
  key_classes kc{std::vector<rank_t>(st.devices, 0), {0}};
  for (std::uint64_t q = 0; q < st.devices; ++q) {
    kc.ord[q] = static_cast<rank_t>(packed[q] & 0xffffffffu);
    if (q + 1 == st.devices || (packed[q] >> 32) / f != (packed[q + 1] >> 32) / f) kc.bounds.push_back(q + 1);
  }
  return kc;
}

/// Groups for an allgather or alltoall that removes a factor f from dimension i: within
/// every class of equal keys (rho * f ranks, rho at each position), group g takes the
/// g-th rank of each position, in position order. Empty if some class is unbalanced
/// (then no groups exist).
constexpr std::vector<rank_t> form_groups(const block_state& st, int i, std::uint64_t f) {
  key_classes kc = classes_by_key(st, i, f);
  std::vector<rank_t> members;
  members.reserve(st.devices);
  for (std::size_t c = 0; c + 1 < kc.bounds.size(); ++c) {
    const std::size_t pos = kc.bounds[c], end = kc.bounds[c + 1];
    if ((end - pos) % f != 0) return {};
    const std::size_t rho = (end - pos) / f;
    for (std::size_t q = pos; q < end; ++q)
      if (st.at(kc.ord[q])[i] % f != (q - pos) / rho) return {};
    for (std::size_t g = 0; g < rho; ++g)
      for (std::uint64_t t = 0; t < f; ++t) members.push_back(kc.ord[pos + t * rho + g]);
  }
  return members;
}

/// A syntactic type whose base offsets under the default device map are exactly the
/// state's blocks, if one exists; otherwise a representative of the weak type.
constexpr dist_type type_of_state(const device_mesh& m, const dist_type& global, const block_state& st, bool& exact) {
  const int R = global.rank;
  dim cols[max_dims + 1]{};  // sub-axes of every column, minor-to-major (column R: the sums)
  std::uint64_t used = 0;
  exact = true;
  for (int d = 0; d <= R && exact; ++d) {
    const std::uint64_t k = st.radix(d);
    std::uint64_t acc = 1;
    while (acc < k) {
      int found = -1;
      for (int a = 0; a < m.nsub && found < 0; ++a) {
        if (used & (std::uint64_t{1} << a) || (k / acc) % m.sub[a].size != 0) continue;
        bool ok = true;
        for (std::uint64_t r = 0; r < st.devices && ok; ++r) ok = (st.at(r)[d] / acc) % m.sub[a].size == m.coord(a, r);
        if (ok) found = a;
      }
      if (found < 0) { exact = false; break; }
      used |= std::uint64_t{1} << found;
      cols[d].axes[cols[d].n++] = static_cast<std::uint8_t>(found);
      acc *= m.sub[found].size;
    }
  }
  if (!exact) {
    // A representative: give every column unused sub-axes of the right prime sizes.
    used = 0;
    for (int d = 0; d <= R; ++d) {
      cols[d].n = 0;
      std::uint64_t k = st.radix(d);
      for (int a = 0; a < m.nsub && k > 1; ++a) {
        if (used & (std::uint64_t{1} << a) || k % m.sub[a].size != 0) continue;
        used |= std::uint64_t{1} << a;
        cols[d].axes[cols[d].n++] = static_cast<std::uint8_t>(a);
        k /= m.sub[a].size;
      }
    }
  }
  dist_type t = global;
  for (int d = 0; d < R; ++d) {
    t.dims[d].n = cols[d].n;
    for (int i = 0; i < cols[d].n; ++i) t.dims[d].axes[i] = cols[d].axes[i];
  }
  t.nsum = 0;
  for (int a = 0; a < m.nsub; ++a)  // the sum axes as a sorted set
    for (int i = 0; i < cols[R].n; ++i)
      if (cols[R].axes[i] == a) t.sum[t.nsum++] = static_cast<std::uint8_t>(a);
  return t;
}

/// A program lists every rank in every step: refuse meshes of more than max_program_devices.
constexpr error check_program_devices(const device_mesh& m) {
  if (m.devices <= max_program_devices) return {};
  text t("the mesh has ");
  t.append_uint(m.devices).append(" devices; collective programs are made for at most ").append_uint(max_program_devices);
  return error::make(errc::capacity, t.view());
}

}  // namespace detail

/// Lower one weak path (from shape_of(a) to shape_of(b)) to a collective program.
/// Usable in constant evaluation.
/// With `annotate`, every step also records a syntactic type of its result
/// (step::type_after, informational; O(devices * sub-axes) per step).
/// `sum_order` orders the source's pending-sum axes (see detail::state_of).
constexpr result<program> lower_path(const device_mesh& m, const dist_type& a, const dist_type& b, const weak_problem& p,
                                      const std::vector<weak_step>& path, std::uint64_t element_bytes = 4,
                                      bool annotate = true, const std::uint8_t* sum_order = nullptr) {
  using namespace detail;
  result<program> res;
  if (res.err = detail::check_program_devices(m); res.err) return res;
  program& prog = res.value;
  prog.m = m;
  prog.source = a;
  prog.target = b;
  prog.element_bytes = element_bytes;
  prog.memory_bound_elements = p.bound;
  const int R = a.rank + 1;  // state columns: the dimensions and the partial's index
  const std::uint64_t D = m.devices;

  // Split off the trailing allgathers.
  std::size_t prefix = path.size();
  while (prefix > 0 && path[prefix - 1].edge.kind == op::allgather) --prefix;

  // (1) per-rank solutions.
  std::uint64_t S = 1, G = 1;
  std::size_t ndyn = 0;
  bool budget = true;
  for (const auto& st : path) {
    std::uint64_t* acc = st.edge.kind == op::dynslice ? &S : (st.edge.kind == op::allgather || st.edge.kind == op::allreduce) ? &G : nullptr;
    if (acc) budget = budget && mul_ok(*acc, st.edge.factor, *acc);
    ndyn += st.edge.kind == op::dynslice;
  }
  block_state src = state_of(m, a, sum_order), dst = state_of(m, b);
  std::vector<std::uint64_t> want(D * ndyn, 0);
  std::vector<char> solved(D, 0);  // (vector<bool> is not constexpr with clang 14)
  const std::uint64_t tries = S < G ? S : G;
  if (budget && ndyn > 0 && tries <= (std::uint64_t{1} << 22) / (D ? D : 1)) {
    std::vector<std::uint64_t> choice(ndyn, 0);
    for (std::uint64_t r = 0; r < D; ++r) {
      if (solve_rank(path, src.at(r), dst.at(r), R, S, G, choice)) {
        solved[r] = 1;
        for (std::size_t k = 0; k < ndyn; ++k) want[r * ndyn + k] = choice[k];
      }
    }
  }

  // (2)-(3) walk the prefix.
  block_state cur = src;
  std::uint64_t local = local_size(m, a);
  prog.peak_local_elements = local;
  auto emit = [&](step&& s) {
    s.after = cur.parts;
    s.local_after = local;
    if (annotate) s.type_after = type_of_state(m, a, cur, s.type_exact);
    prog.cost_elements += s.cost;
    prog.peak_local_elements = std::max(prog.peak_local_elements, local);
    prog.steps.push_back(std::move(s));
  };
  auto collective = [&](const weak_edge& e) {
    step s;
    s.kind = e.kind;
    s.parts = e.factor;
    const bool sums = e.kind == op::allreduce || e.kind == op::reducescatter;
    s.concat_dim = sums ? -1 : e.from;
    s.split_dim = e.kind == op::alltoall || e.kind == op::reducescatter ? e.to : -1;
    if (sums) s.reduce = a.reduce;  // the source's kind: a program keeps it (make_weak_problem)
    s.members = form_groups(cur, e.from, e.factor);
    if (s.members.size() != D) {
      res.err = error::make(errc::rule, "internal error: no groups exist for a collective");
      return false;
    }
    apply_all(cur, e);
    const std::uint64_t before = local;
    local = p.ctx.local_size(cur.parts);  // padded tiles on uneven dimensions
    s.cost = cost_elements(e.kind, before, local);
    emit(std::move(s));
    return true;
  };
  std::size_t k = 0;
  for (std::size_t q = 0; q < prefix; ++q) {
    const weak_edge& e = path[q].edge;
    if (e.kind != op::dynslice) {
      if (!collective(e)) return res;
      continue;
    }
    // Balanced dynslice choices: within every class of ranks holding the same tile, each
    // chunk is kept by the same number of ranks; prefer the solved choice.
    step s;
    s.kind = op::dynslice;
    s.split_dim = e.to;
    s.parts = e.factor;
    s.index.assign(D, 0);
    key_classes kc = classes_by_key(cur, -1, 1);  // classes of ranks holding the same tile
    const std::vector<rank_t>& ord = kc.ord;
    for (std::size_t c = 0; c + 1 < kc.bounds.size(); ++c) {
      const std::size_t pos = kc.bounds[c], end = kc.bounds[c + 1];
      const std::uint64_t cap = (end - pos) / e.factor;
      std::vector<std::uint64_t> taken(e.factor, 0);
      std::vector<char> set(end - pos, 0);
      for (std::size_t q = pos; q < end; ++q) {
        rank_t r = ord[q];
        if (!solved[r]) continue;
        std::uint64_t v = want[r * ndyn + k];
        if (taken[v] < cap) { s.index[r] = static_cast<rank_t>(v); ++taken[v]; set[q - pos] = 1; }
      }
      std::uint64_t v = 0;
      for (std::size_t q = pos; q < end; ++q) {
        if (set[q - pos]) continue;
        while (taken[v] >= cap) ++v;
        s.index[ord[q]] = static_cast<rank_t>(v);
        ++taken[v];
      }
    }
    apply_all(cur, e, &s.index);
    local = p.ctx.local_size(cur.parts);
    s.cost = 0;
    emit(std::move(s));
    ++k;
  }

  // (4) the final permutation, before the trailing allgathers.
  auto after_tail = [&](const std::uint64_t* pre, std::uint64_t* out) {
    for (int d = 0; d < R; ++d) out[d] = pre[d];
    for (std::size_t q = prefix; q < path.size(); ++q) apply_edge(path[q].edge, out, 0);
  };
  std::vector<std::uint64_t> img(D * static_cast<std::uint64_t>(R), 0);
  bool in_place = true;
  for (std::uint64_t r = 0; r < D; ++r) {
    after_tail(cur.at(r), img.data() + r * static_cast<std::uint64_t>(R));
    in_place = in_place && same_blocks(img.data() + r * static_cast<std::uint64_t>(R), dst.at(r), R);
  }
  if (!in_place) {
    // Ranks sorted by the tile they need / the tile their data becomes; match equal keys,
    // keeping tiles that are already in place.
    step s;
    s.kind = op::allpermute;
    s.dest.assign(D, 0);
    std::vector<char> sent(D, 0), got(D, 0);
    for (std::uint64_t r = 0; r < D; ++r) {
      if (same_blocks(img.data() + r * static_cast<std::uint64_t>(R), dst.at(r), R)) {
        s.dest[r] = static_cast<rank_t>(r);
        sent[r] = got[r] = 1;
      }
    }
    // Tiles as mixed-radix numbers in the target's tiling, packed with the rank.
    auto packed = [&](const std::uint64_t* row, std::uint64_t r) {
      std::uint64_t key = 0;
      for (int d = 0; d < R; ++d) key = key * dst.radix(d) + row[d];
      return (key << 32) | r;
    };
    std::vector<std::uint64_t> senders, receivers;
    for (std::uint64_t r = 0; r < D; ++r) {
      if (!sent[r]) senders.push_back(packed(img.data() + r * static_cast<std::uint64_t>(R), r));
      if (!got[r]) receivers.push_back(packed(dst.at(r), r));
    }
    std::sort(senders.begin(), senders.end());
    std::sort(receivers.begin(), receivers.end());
    for (std::size_t q = 0; q < senders.size(); ++q) {
      if (senders[q] >> 32 != receivers[q] >> 32) {
        res.err = error::make(errc::rule, "internal error: the final permutation does not exist");
        return res;
      }
      s.dest[senders[q] & 0xffffffffu] = static_cast<rank_t>(receivers[q] & 0xffffffffu);
    }
    block_state moved = cur;
    for (std::uint64_t r = 0; r < D; ++r)
      for (int d = 0; d < R; ++d) moved.at(s.dest[r])[d] = cur.at(r)[d];
    cur = moved;
    s.cost = cost_elements(op::allpermute, local, local);
    emit(std::move(s));
  }
  for (std::size_t q = prefix; q < path.size(); ++q)
    if (!collective(path[q].edge)) return res;

  for (std::uint64_t r = 0; r < D; ++r) {
    if (!same_blocks(cur.at(r), dst.at(r), R)) {
      res.err = error::make(errc::rule, "internal error: the lowered program does not reach the target");
      return res;
    }
  }
  return res;
}

/// The program a weak path becomes: lower_path, then, under the time objective, its
/// adjacent collectives fused where predicted faster (lower/fuse.hpp). Under
/// objective::bytes, lower_path's program: one weak step per collective, as in the paper.
/// A target with pending axes the source lacks: the path reaches the weak problem's target
/// (partial_reach: before_partial(a, b), or with pad_pending before_padded_partial), and the
/// partial steps that create them end the program (lower/partial.hpp).
constexpr result<program> lower_and_fuse(const device_mesh& m, const dist_type& a, const dist_type& b,
                                         const weak_problem& p, const std::vector<weak_step>& path,
                                         std::uint64_t element_bytes = 4, bool annotate = true,
                                         const std::uint8_t* sum_order = nullptr) {
  result<program> r =
      lower_path(m, a, partial_reach(m, a, b, p.pad_pending), p, path, element_bytes, annotate, sum_order);
  if (r.ok() && p.goal == objective::time) fuse_collectives(r.value, p.profile, p.element_bytes);
  if (r.ok()) append_partial(r.value, b);
  return r;
}

/// Predicted seconds of collective step s (not one that moves as an exchange) on ranks that
/// hold `local` elements before it, in a program whose larger end tile holds `in_out`
/// elements (end_tile_elements): core/time_model.hpp step_seconds, the search's edge weight
/// (a fused step: fused_step_seconds, in pieces); an allpermute is priced as moving its tile
/// unless every rank keeps its own (0).
constexpr double collective_step_seconds(const time_profile& P, const step& s, std::uint64_t local,
                                         std::uint64_t element_bytes, std::uint64_t in_out) {
  bool moves = s.kind != op::allpermute;
  for (std::size_t r = 0; !moves && r < s.dest.size(); ++r) moves = s.dest[r] != r;
  if (!moves) return 0.0;
  return s.fused() ? fused_step_seconds(P, s.kind, s.parts, local, s.local_after, element_bytes, in_out)
                   : step_seconds(P, s.kind, s.parts, local, s.local_after, element_bytes);
}

/// Predicted picoseconds of a lowered collective program under the problem's time
/// objective (0 under objective::bytes): collective_step_seconds of its steps.
constexpr std::uint64_t lowered_time(const weak_problem& p, const program& prog) {
  if (p.goal != objective::time) return 0;
  std::uint64_t t = 0, local = local_size(prog.m, prog.source);
  const std::uint64_t in_out = end_tile_elements(prog);
  for (const step& s : prog.steps) {
    const std::uint64_t ps = picoseconds(collective_step_seconds(p.profile, s, local, p.element_bytes, in_out));
    t = t > UINT64_MAX - ps ? UINT64_MAX : t + ps;
    local = s.local_after;
  }
  return t;
}

/// Under the time objective, 1 if the executor's two scratch tiles for prog
/// (runtime/executor.hpp memory formula: A and B, the largest tiles program.hpp's
/// tile_homes keeps in scratch regions A and B) together exceed its larger end tile, else
/// 0. Such a program leaves the executor less than the end tile for the pieces of a step it
/// packs (a reduce-scatter on strided chunks, a fused all-to-all) within 2x max(in, out),
/// so lowering ranks it after every other (the paper's programs, objective::bytes, are
/// ranked as in the paper).
constexpr std::uint64_t scratch_deep(const weak_problem& p, const program& prog) {
  const std::size_t S = prog.steps.size();
  if (p.goal != objective::time || S < 3 || prog.uneven()) return 0;
  const std::uint64_t out = prog.steps.back().local_after;
  auto tile = [&](std::size_t i) { return prog.steps[i - 1].local_after; };  // t_i, 0 < i < S
  const std::vector<tile_home> home = tile_homes(prog.steps, [&](std::size_t i) { return tile(i) <= out; });
  std::uint64_t A = 0, B = 0;
  for (std::size_t i = 1; i < S; ++i) {
    if (home[i] == tile_home::scratch_a) A = std::max(A, tile(i));
    if (home[i] == tile_home::scratch_b) B = std::max(B, tile(i));
  }
  return A + B > end_tile_elements(prog) ? 1 : 0;
}

/// Predicted picoseconds of the partial steps every program of problem p from a to b ends
/// with (lower/partial.hpp; 0 without new pending axes or under objective::bytes).
constexpr std::uint64_t partial_tail_time(const device_mesh& m, const dist_type& a, const dist_type& b,
                                          const weak_problem& p) {
  if (p.goal != objective::time || new_pending_mask(a, b) == 0) return 0;
  program tail;
  tail.m = m;
  tail.target = partial_reach(m, a, b, p.pad_pending);
  std::uint64_t t = 0, local = local_size(m, tail.target);
  append_partial(tail, b);
  for (const step& s : tail.steps) {
    t += picoseconds(collective_step_seconds(p.profile, s, local, p.element_bytes, local));
    local = s.local_after;
  }
  return t;
}

namespace detail {
/// What lowered programs are ranked by, in this order: predicted time (objective::time;
/// lowered_time), bytes (Fig. 11), then the most bytes any rank receives (Fig. 11 charges
/// an allgather or an alltoall the whole tile where a rank receives (n-1)/n of it, and a
/// permutation moves whole tiles where the collectives it replaces keep part of them in
/// place), then steps.
struct program_rank {
  std::uint64_t deep = 0;  ///< 1: the executor's two scratch tiles exceed the end tile (scratch_deep)
  std::uint64_t time = 0, cost = 0, received = 0;
  std::size_t steps = 0;
  friend constexpr bool operator<(const program_rank& x, const program_rank& y) {
    if (x.deep != y.deep) return x.deep < y.deep;
    if (x.time != y.time) return x.time < y.time;
    if (x.cost != y.cost) return x.cost < y.cost;
    if (x.received != y.received) return x.received < y.received;
    return x.steps < y.steps;
  }
};

/// The rank of lowered program prog of problem p.
constexpr program_rank rank_of(const weak_problem& p, const program& prog) {
  return {scratch_deep(p, prog), lowered_time(p, prog), prog.cost_elements, prog.received_elements(), prog.steps.size()};
}

/// A lowered candidate and its rank.
struct ranked_program {
  program prog;
  program_rank rank;
};

/// The rank of a weak path before lowering: every program lowered from it ranks no better
/// (the lowering adds at most a permutation, which adds bytes, receives and a step).
/// Under the time objective the lowering fuses collectives (lower/fuse.hpp): the rank
/// counts the fusions of adjacent steps as fuse_collectives decides them.
constexpr program_rank path_rank(const weak_problem& p, const std::vector<weak_step>& path) {
  program_rank r;
  r.steps = path.size();
  std::uint64_t local = p.ctx.local_size(p.source);
  const std::uint64_t in_out = std::max(local, p.target_local);  // end_tile_elements of what it lowers to
  const bool fuse = p.goal == objective::time;
  // The last step as fusion leaves it: its kind, dimensions, group size, tile before, time.
  op kind = op::dynslice;
  std::uint32_t dims = 0;
  std::uint64_t n = 0, before = 0, last = 0;
  for (const weak_step& st : path) {
    const weak_edge& e = st.edge;
    const std::uint64_t after = p.ctx.local_size(st.after);
    const std::uint32_t mine = e.kind == op::allgather ? std::uint32_t{1} << e.from
                               : e.kind == op::alltoall ? (std::uint32_t{1} << e.from) | (std::uint32_t{1} << e.to)
                                                        : 0;
    std::uint64_t t = st.weight.time;
    bool fused = false;
    if (fuse && mine != 0 && e.kind == kind && (dims & mine) == 0) {
      const detail::fuse_times f =
          detail::fuse_prediction(p.profile, e.kind, n, e.factor, before, local, after, p.element_bytes, in_out);
      if (f.faster()) {  // replace the last step's time by the fused step's
        r.time -= last;
        t = last = f.fused;
        dims |= mine;
        n *= e.factor;
        r.cost -= cost_elements(e.kind, before, local);
        r.cost += cost_elements(e.kind, before, after);
        --r.steps;
        fused = true;
      }
    }
    if (!fused) {
      r.cost += st.weight.cost;
      kind = e.kind;
      dims = mine;
      n = e.factor;
      before = local;
      last = t;
    }
    r.time = r.time > UINT64_MAX - t ? UINT64_MAX : r.time + t;
    r.received += received_elements(e.kind, e.factor, local, after);
    local = after;
  }
  return r;
}

/// Lower a path, trying every order of the source's pending-sum axes when the path
/// reduces some (at most 24 orders); keeps the best program and its order.
constexpr result<ranked_program> lower_any_sum_order(const device_mesh& m, const dist_type& a, const dist_type& b,
                                                     const weak_problem& p, const std::vector<weak_step>& path,
                                                     std::uint64_t element_bytes,
                                                     std::array<std::uint8_t, max_subaxes>& order) {
  auto ranked = [&](const std::uint8_t* sum_order) {
    result<program> r = lower_and_fuse(m, a, b, p, path, element_bytes, false, sum_order);
    result<ranked_program> out;
    out.err = r.err;
    if (r.ok()) {
      out.value.rank = rank_of(p, r.value);
      out.value.prog = std::move(r.value);
    }
    return out;
  };
  for (int i = 0; i < a.nsum; ++i) order[static_cast<std::size_t>(i)] = a.sum[i];
  bool reduces = false;
  for (const auto& st : path) reduces = reduces || st.edge.kind == op::allreduce || st.edge.kind == op::reducescatter;
  result<ranked_program> best = ranked(order.data());
  if (!reduces || a.nsum < 2 || (best.ok() && best.value.prog.count(op::allpermute) == 0)) return best;
  std::array<std::uint8_t, max_subaxes> cur = order;
  const auto end = cur.begin() + a.nsum;
  for (int tries = 0; tries < 24 && std::next_permutation(cur.begin(), end); ++tries) {
    result<ranked_program> r = ranked(cur.data());
    if (r.ok() && (!best.ok() || r.value.rank < best.value.rank)) {
      best = std::move(r);
      order = cur;
    }
    if (best.ok() && best.value.prog.count(op::allpermute) == 0) break;
  }
  return best;
}
}  // namespace detail

/// The weak path `lower` turns into the program, and the order of the source's pending-
/// sum axes it lowers with; `err` is set when no path lowers.
struct lowering_choice {
  std::vector<weak_step> path;
  std::array<std::uint8_t, max_subaxes> sum_order{};
  error err{};
};

/// Choose what to lower: the best program (detail::program_rank: less predicted time, fewer
/// bytes, then fewer bytes received, then fewer steps; then the first in enumeration order)
/// among the shortest paths the search enumerated (weak_plan::ties; the tie_limit best of
/// them by detail::path_rank are lowered) and, unless one of those is
/// already best possible, weak paths up to two steps longer. The enumeration is
/// canonical: every node of a shortest path other than the target has a smaller (cost,
/// height, steps) than the target, so both searches settle it with its exact distance
/// before they stop, and the depth-first walk over those distances visits the same paths
/// in the same order. The run-time and compile-time searches therefore yield the same
/// program. A path is lowered only if its rank before lowering (detail::path_rank) can
/// still beat the best so far. Usable in constant evaluation.
constexpr lowering_choice choose_lowering(const device_mesh& m, const dist_type& a, const dist_type& b,
                                          const weak_problem& p, const weak_plan& wp, std::uint64_t element_bytes = 4) {
  lowering_choice chosen;
  if (!wp.found) {
    chosen.err = error::make(errc::no_plan, "no redistribution exists within the memory budget");
    return chosen;
  }
  std::array<std::uint8_t, max_subaxes> order{};
  const std::vector<std::vector<weak_step>> primary{wp.steps};
  const std::vector<std::vector<weak_step>>& candidates = wp.ties.empty() ? primary : wp.ties;
  // The weak optimum, plus the partial steps every program of a target with new pending
  // axes ends with (lower/partial.hpp; outside the graph, the same for every path).
  const std::uint64_t floor_time = wp.total.time + partial_tail_time(m, a, b, p);
  const std::uint64_t floor = wp.total.cost;
  const std::uint64_t least_received = movement_lower_bound(m, a, b);
  detail::ranked_program best;
  bool have = false;  // best holds a lowered program
  // The edges of every path lowered so far: the candidates below overlap (the fewest-bytes
  // paths may be ties, and the second near-path phase walks the first's paths again), and a
  // path lowers to the same program every time, so it is lowered once.
  std::vector<std::vector<weak_edge>> lowered;
  auto consider = [&](const std::vector<weak_step>& path) {
    if (have && !(detail::path_rank(p, path) < best.rank)) return error{};  // cannot win
    std::vector<weak_edge> edges;
    for (const weak_step& st : path) edges.push_back(st.edge);
    for (const std::vector<weak_edge>& seen : lowered)
      if (seen == edges) return error{};
    lowered.push_back(std::move(edges));
    result<detail::ranked_program> r = detail::lower_any_sum_order(m, a, b, p, path, element_bytes, order);
    if (r.ok() && (!have || r.value.rank < best.rank)) {
      best = std::move(r.value);
      have = true;
      chosen.path = path;
      chosen.sum_order = order;
    }
    return r.err;
  };
  // Nothing beats a program of the weak optimum's cost that receives the lower bound.
  auto optimal = [&] {
    return have && best.rank.time == floor_time && best.rank.cost == floor && best.rank.received <= least_received;
  };
  auto at_floor = [&] { return best.rank.time == floor_time && best.rank.cost == floor; };
  // The ties, best rank before lowering first (detail::path_rank: the fusions the lowering
  // will make, then bytes, bytes received, steps), in canonical order among equals; at most
  // tie_limit of them are lowered (each lowering costs O(devices)), of the up to
  // tie_enumeration_limit the search enumerated. Lowered, a tie either needs no permutation
  // and keeps its rank, or ranks worse; so once one needs none, the rest cannot beat it.
  const std::size_t lowered_at_most = tie_limit(m.devices);
  auto lower_best = [&](const std::vector<std::vector<weak_step>>& paths) {
    std::vector<std::pair<detail::program_rank, std::size_t>> by_rank;
    for (std::size_t i = 0; i < paths.size(); ++i) by_rank.emplace_back(detail::path_rank(p, paths[i]), i);
    std::sort(by_rank.begin(), by_rank.end(), [](const auto& x, const auto& y) {
      return x.first < y.first || (!(y.first < x.first) && x.second < y.second);
    });
    error first{};
    for (std::size_t k = 0; k < by_rank.size() && k < lowered_at_most && !optimal(); ++k) {
      const error e = consider(paths[by_rank[k].second]);
      if (k == 0) first = e;
      if (have && at_floor() && best.prog.count(op::allpermute) == 0) break;
    }
    return first;
  };
  chosen.err = lower_best(candidates);
  if (!have) return chosen;
  chosen.err = error{};
  // Under the time objective the weak graph does not see the permutation a path may need
  // once lowered: the paper's paths (fewest bytes, found by the constexpr search, which both
  // faces run alike) are candidates too.
  auto time_weights = [&](std::vector<weak_step>& path) {
    std::uint64_t local = p.ctx.local_size(p.source);
    for (weak_step& st : path) {
      const std::uint64_t after = p.ctx.local_size(st.after);
      st.weight = p.weight(st.edge, local, after);
      local = after;
    }
  };
  weak_problem q = p;
  q.goal = objective::bytes;
  weak_plan fewest;
  if (p.goal == objective::time && (!optimal() || best.rank.deep != 0)) {
    fewest = search_constexpr(q);
    if (fewest.found) {
      std::vector<std::vector<weak_step>> paths = fewest.ties;
      if (paths.empty()) paths.push_back(fewest.steps);
      for (std::vector<weak_step>& path : paths) time_weights(path);
      lower_best(paths);
    }
  }
  // A costlier weak path may need no permutation, or need it on a smaller tile, or keep
  // more of each tile in place. Lower the weak paths cheaper than the best program so
  // far, then, if the best still permutes, those of equal cost; at most two steps more
  // than the shortest (bytes are not all that counts: every collective has a latency).
  // The budget follows the best program, so the walk prunes what can no longer win.
  // Under the time objective the walk deepens one step at a time (shortest paths first),
  // each depth taking the paths of exactly its length, up to `most` of them: the time
  // potential prunes little, so a depth-first walk would spend its expansions on long paths,
  // and every step costs a latency; yet the shorter paths often all need a permutation
  // that a longer one avoids. It prices a prefix as its lowering will fuse it
  // (detail::path_rank): three all-to-alls of which two fuse cost less than their weights
  // add up to, and the sum would prune them.
  const bool deepen = p.goal == objective::time;
  for (int phase = 0; phase < 2 && !optimal() && (phase == 0 || best.prog.count(op::allpermute) > 0); ++phase) {
    const std::uint64_t slack = phase == 0 ? 1 : 0;
    auto best_key = [&] { return p.goal == objective::time ? best.rank.time : best.rank.cost; };
    std::uint64_t budget = best_key() < slack ? 0 : best_key() - slack;
    const std::size_t longest = wp.steps.size() + 2, most = std::min<std::size_t>(tie_limit(m.devices), 8);
    std::size_t expansions = 1500, paths = 0;  // expansions for all the depths of the phase together
    auto take = [&](const std::vector<weak_step>& path, std::uint64_t) {
      consider(path);
      budget = std::min(budget, best_key() < slack ? 0 : best_key() - slack);
      return ++paths < most && !optimal();
    };
    auto fused_time = [&](const std::vector<weak_step>& path, std::uint64_t sum) {
      // Only an all-gather or all-to-all after one of its kind may fuse.
      const std::size_t n = path.size();
      const op k = path.back().edge.kind;
      const bool fuses = n >= 2 && (k == op::allgather || k == op::alltoall) && path[n - 2].edge.kind == k;
      return fuses ? detail::path_rank(p, path).time : sum;
    };
    for (std::size_t len = deepen ? 1 : longest; len <= longest && expansions > 0 && !optimal(); ++len, paths = 0)
      expansions = deepen ? near_paths(p, budget, len, len, most, expansions, take, fused_time)
                          : near_paths(p, budget, 0, len, most, expansions, take);
  }
  // Last, where the best so far permutes or is deep (scratch_deep; the walks above stop at
  // the weak optimum whatever its depth), the path of the paper's program (the bytes
  // objective's choice among its ties and near paths): the walk above is bounded and may not
  // reach a costlier path that needs no permutation, and so that the program chosen is never
  // predicted slower than the paper's where the walk's best permutes.
  if (fewest.found && (best.rank.deep != 0 || best.prog.count(op::allpermute) > 0)) {
    lowering_choice paper = choose_lowering(m, a, b, q, fewest, element_bytes);
    if (!paper.err) {
      time_weights(paper.path);
      consider(paper.path);
    }
  }
  return chosen;
}

/// Lower a weak plan: the program of choose_lowering's path, with its types annotated.
constexpr result<program> lower(const device_mesh& m, const dist_type& a, const dist_type& b, const weak_problem& p,
                                const weak_plan& wp, std::uint64_t element_bytes = 4) {
  const lowering_choice c = choose_lowering(m, a, b, p, wp, element_bytes);
  if (c.err) {
    result<program> r;
    r.err = c.err;
    return r;
  }
  return lower_and_fuse(m, a, b, p, c.path, element_bytes, true, c.sum_order.data());
}

/// b creates pending axes that a partitions a dimension with, so that the planners lower
/// both routes of creating them (lower/partial.hpp) and keep the better program.
constexpr bool pads_pending(const device_mesh& m, const dist_type& a, const dist_type& b) {
  return !(before_padded_partial(m, a, b) == before_partial(a, b));
}

/// Program x (of problem px) ranks before program y (of problem py) by detail::program_rank:
/// less predicted time under the time objective, fewer bytes, fewer received, fewer steps.
constexpr bool ranks_before(const weak_problem& px, const program& x, const weak_problem& py, const program& y) {
  return detail::rank_of(px, x) < detail::rank_of(py, y);
}

}  // namespace redist
