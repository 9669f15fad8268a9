// tests/support/verify.hpp -- an independent checker of collective programs.
//
// Follows every rank's tile as a box of global indices (per dimension [lo, hi)) through a
// `redist::program`, with exactly the semantics of DESIGN.md section 4:
//   allgather:  the boxes of a group must be adjacent in member order along concat_dim and
//               agree on every other dimension; every member ends with their union.
//   alltoall:   every member splits its box into n equal chunks along split_dim (on
//               uneven types ceil-sized, the last ones short or empty) and sends chunk m to
//               member m; member m concatenates what it received along concat_dim in
//               member order (the chunks must be adjacent there and agree elsewhere).
//   fused allgather / alltoall (program.hpp: grids of (dimension, parts), the first the
//               most significant digit of a member's position): member k's box (alltoall:
//               its chunk at the receiver's digits along the split grid) must lie at k's
//               digits along the concat grid; every member ends with the grid's union.
//   dynslice:   every rank splits its box into `parts` equal chunks along split_dim and
//               keeps chunk index[rank] (on uneven types chunks of ceil(extent / parts),
//               the last ones short or empty).
//   allpermute: rank r's box moves to rank dest[r]; dest must be a bijection.
//   allreduce / reducescatter (partial sums, an extension): the members' boxes must be
//               equal; every member ends with the sum of the group's partials (all of it,
//               or max, min, prod, avg: the step's reduce, which must be the source's kind;
//               or chunk m of it along split_dim for member m).
//   exchange (an extension): every rank ends with its listed box A_r, which must lie
//               inside the array and be covered by the union of the boxes held before the
//               step (by any ranks: the checker ignores which replica sends, and does not
//               assume the boxes tile evenly; it subtracts the boxes before from A_r). Every
//               rank must hold complete sums then (reduced before), the target none. Its cost
//               is the most one rank receives, max_r |A_r| - |A_r n B_r| with B_r the box r held.
// Uneven types (section 2): tiles are ceil(global / parts), boxes clipped to the array
// (short or empty); the local size of a step is its longest box per dimension.
// Partial sums are followed as sets of source partials: rank r starts with the partial
// numbered sum_index(source, r) (core/offsets.hpp); reductions take disjoint unions, and
// allgather / alltoall may only combine data holding the same set. At the end, the ranks
// that differ only along the target's sum axes must hold the target tile and disjoint
// sets that together are all the source's partials.
// The start boxes come from the source type's base offsets (core/offsets.hpp, Fig. 7a) and
// tiles, independently of the lowering; the end boxes must be the target's. The checker
// also recomputes the local sizes (every one within program.memory_bound_elements, the
// peak equal to program.peak_local_elements), the per-step and total costs from Fig. 11
// (core/cost.hpp; an exchange's as above), the per-step bookkeeping fields (after,
// local_after; every box of one shape after every step), and, for steps
// that claim an exact intermediate type, that the boxes are that type's tiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/core/cost.hpp"
#include "redist/core/dtype.hpp"
#include "redist/core/offsets.hpp"
#include "redist/program.hpp"

namespace redist::testing {

struct verify_result {
  bool ok = true;
  std::string message;             ///< on failure: which step, which rank, what is wrong
  std::uint64_t cost = 0;          ///< recomputed cost (Fig. 11), elements per device
  std::uint64_t peak = 0;          ///< recomputed peak local size
  std::uint64_t permute_cost = 0;  ///< cost of the allpermute steps
  std::size_t steps_checked = 0;
};

/// Concatenate strings and numbers (appending only: GCC 12 warns falsely, -Wrestrict,
/// about `"literal" + std::string`).
template <class... A>
std::string str_cat(const A&... a) {
  std::string s;
  auto put = [&s](const auto& x) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(x)>>)
      s += std::to_string(x);
    else
      s += x;
  };
  (put(a), ...);
  return s;
}

namespace testing_detail {

/// Boxes of all ranks: lo/hi at [r * R + d].
struct boxes {
  int R = 0;
  std::uint64_t D = 0;
  std::vector<std::uint64_t> lo, hi;
  boxes(int r, std::uint64_t d)
      : R(r), D(d), lo(d * static_cast<std::uint64_t>(r)), hi(d * static_cast<std::uint64_t>(r)) {}
  std::uint64_t& l(std::uint64_t r, int d) {
    return lo[r * static_cast<std::uint64_t>(R) + static_cast<std::uint64_t>(d)];
  }
  std::uint64_t& h(std::uint64_t r, int d) {
    return hi[r * static_cast<std::uint64_t>(R) + static_cast<std::uint64_t>(d)];
  }
  [[nodiscard]] std::uint64_t ext(std::uint64_t r, int d) const {
    const std::size_t q = r * static_cast<std::uint64_t>(R) + static_cast<std::uint64_t>(d);
    return hi[q] - lo[q];
  }
  [[nodiscard]] std::uint64_t size(std::uint64_t r) const {
    std::uint64_t s = 1;
    for (int d = 0; d < R; ++d) s *= ext(r, d);
    return s;
  }
  [[nodiscard]] std::string text(std::uint64_t r) const {
    std::string s = "[";
    for (int d = 0; d < R; ++d) {
      const std::size_t q = r * static_cast<std::uint64_t>(R) + static_cast<std::uint64_t>(d);
      s += str_cat(d ? ", " : "", lo[q], ":", hi[q]);
    }
    s += ")";
    return s;
  }
};

/// The boxes of a type under the default device map: base offset + tile (Fig. 7a), with
/// the tile ceil(global / parts) and the box clipped to the array (DESIGN.md section 2).
inline boxes boxes_of(const device_mesh& m, const dist_type& t) {
  boxes b(t.rank, m.devices);
  std::uint64_t off[max_dims]{};
  for (std::uint64_t r = 0; r < m.devices; ++r) {
    base_offsets(m, t, r, off);
    for (int d = 0; d < t.rank; ++d) {
      const std::uint64_t n = t.dims[d].global, c = ceil_div(n, parts(m, t.dims[d]));
      b.l(r, d) = std::min(off[d], n);
      b.h(r, d) = clip_add(off[d], c, n);  // saturating: sizes near 2^64 do not wrap
    }
  }
  return b;
}

/// out = a + b if a and b (sorted) are disjoint.
inline bool disjoint_union(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
                           std::vector<std::uint32_t>& out) {
  out.clear();
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return std::adjacent_find(out.begin(), out.end()) == out.end();
}

inline std::string set_text(const std::vector<std::uint32_t>& k) {
  std::string s = "{";
  for (std::size_t i = 0; i < k.size(); ++i) s += str_cat(i ? "," : "", k[i]);
  s += "}";
  return s;
}

/// A box as [lo, hi) per dimension, for the exchange's coverage check.
struct range_box {
  std::vector<std::uint64_t> lo, hi;
};

/// The parts of `a` outside `b` (at most 2 per dimension, disjoint), appended to out.
inline void subtract(const range_box& a, const range_box& b, std::vector<range_box>& out) {
  const std::size_t R = a.lo.size();
  for (std::size_t d = 0; d < R; ++d)
    if (b.hi[d] <= a.lo[d] || a.hi[d] <= b.lo[d]) {  // disjoint: a stays whole
      out.push_back(a);
      return;
    }
  range_box rest = a;  // cut off the slabs of `rest` outside b, one dimension at a time
  for (std::size_t d = 0; d < R; ++d) {
    if (rest.lo[d] < b.lo[d]) {
      range_box slab = rest;
      slab.hi[d] = b.lo[d];
      out.push_back(slab);
      rest.lo[d] = b.lo[d];
    }
    if (b.hi[d] < rest.hi[d]) {
      range_box slab = rest;
      slab.lo[d] = b.hi[d];
      out.push_back(slab);
      rest.hi[d] = b.hi[d];
    }
  }
}

/// Check that `members` is `parts`-sized groups partitioning 0..D-1.
inline bool check_groups(const step& s, std::uint64_t D, std::string& why) {
  if (s.parts < 1) {
    why = "parts is 0";
    return false;
  }
  if (s.members.size() != D) {
    why = str_cat("members lists ", s.members.size(), " ranks, the mesh has ", D);
    return false;
  }
  if (s.members.size() % s.parts != 0) {
    why = "members is not a whole number of groups";
    return false;
  }
  std::vector<bool> seen(D, false);
  for (rank_t r : s.members) {
    if (r >= D) {
      why = str_cat("member rank ", r, " out of range");
      return false;
    }
    if (seen[r]) {
      why = str_cat("rank ", r, " is in two groups");
      return false;
    }
    seen[r] = true;
  }
  return true;
}

}  // namespace testing_detail

/// Verify `p` as described at the top of this file.
inline verify_result verify(const program& p) {
  using testing_detail::boxes;
  verify_result res;
  const device_mesh& m = p.m;
  const int R = p.source.rank;
  const std::uint64_t D = m.devices;
  auto fail = [&](std::size_t si, const std::string& what) {
    res.ok = false;
    res.message = si < p.steps.size() ? str_cat("step ", si, " (", op_name(p.steps[si].kind), "): ", what)
                                      : str_cat("after the last step: ", what);
    return res;
  };
  if (p.placed())  // tests/tools/check_program.py follows them independently
    return fail(p.steps.size(), "a program on device sets (format 2): this checker follows format 1 only");
  if (error e = check(m, p.source); !e.ok())
    return fail(p.steps.size(), str_cat("ill-formed source: ", e.message.str()));
  if (error e = check(m, p.target); !e.ok())
    return fail(p.steps.size(), str_cat("ill-formed target: ", e.message.str()));
  if (!same_global(p.source, p.target)) return fail(p.steps.size(), "source and target global shapes differ");
  if (D > (std::uint64_t{1} << 20)) return fail(p.steps.size(), "mesh too large for the checker");

  boxes cur = testing_detail::boxes_of(m, p.source);
  // Partial sums: the set of source partials each rank's data adds up.
  const std::uint64_t nsrc = sum_parts(m, p.source);
  std::vector<std::vector<std::uint32_t>> K(D);
  for (std::uint64_t r = 0; r < D; ++r) K[r] = {static_cast<std::uint32_t>(sum_index(m, p.source, r))};
  auto same_partials = [&](std::size_t g, rank_t a, rank_t b, std::string& why) {
    if (K[a] == K[b]) return true;
    why = str_cat("group ", g, ": ranks ", a, " and ", b, " hold different partial sums ", testing_detail::set_text(K[a]),
                  " and ", testing_detail::set_text(K[b]));
    return false;
  };
  std::uint64_t local = local_size(m, p.source);
  std::uint64_t created = 1;  // pending parts created by partial steps (rank 0 keeps its value in each)
  res.peak = local;
  // Uneven types (DESIGN.md section 2): the boxes of a step may differ in shape.
  const bool uneven = !even(m, p.source) || !even(m, p.target);
  auto check_dim = [&](int d) { return d >= 0 && d < R; };

  for (std::size_t si = 0; si < p.steps.size(); ++si) {
    const step& s = p.steps[si];
    boxes next = cur;
    std::vector<std::vector<std::uint32_t>> nextK = K;
    // An allgather's boxes (and a padded partial step's): member k's box is the k-th block
    // along concat_dim of the group's, every member ends with their concatenation.
    auto gather_boxes = [&](std::string& problem) {
      if (!check_dim(s.concat_dim)) {
        problem = str_cat("concat_dim ", s.concat_dim, " out of range");
        return false;
      }
      if (!testing_detail::check_groups(s, D, problem)) return false;
      const int c = s.concat_dim;
      for (std::size_t g = 0; g * s.parts < s.members.size(); ++g) {
        const rank_t* grp = s.members.data() + g * s.parts;
        for (std::uint64_t k = 1; k < s.parts; ++k) {
          const rank_t a = grp[k - 1], b = grp[k];
          if (!same_partials(g, a, b, problem)) return false;
          if (cur.h(a, c) != cur.l(b, c)) {
            problem = str_cat("group ", g, ": rank ", b, "'s box ", cur.text(b), " does not follow member ", a,
                              "'s box ", cur.text(a), " along dimension ", c);
            return false;
          }
          for (int d = 0; d < R; ++d)
            if (d != c && (cur.l(a, d) != cur.l(b, d) || cur.h(a, d) != cur.h(b, d))) {
              problem = str_cat("group ", g, ": ranks ", a, " and ", b, " disagree on dimension ", d, " (", cur.text(a),
                                " vs ", cur.text(b), ")");
              return false;
            }
        }
        for (std::uint64_t k = 0; k < s.parts; ++k) {
          next.l(grp[k], c) = cur.l(grp[0], c);
          next.h(grp[k], c) = cur.h(grp[s.parts - 1], c);
        }
      }
      return true;
    };
    std::string why;
    std::uint64_t exchange_cost = 0;  // an exchange's: the most elements one rank receives
    if ((s.kind == op::allgather || s.kind == op::alltoall) && s.fused()) {
      // Fused (program.hpp): grids of distinct dimensions; member k's chunk at the digits
      // of the receiver along the split grid, placed at the digits of k along the concat grid.
      const step_grid& cg = s.concat_grid;
      const step_grid& sg = s.split_grid;
      if (uneven) return fail(si, "a fused step on uneven tiles");
      if (!testing_detail::check_groups(s, D, why)) return fail(si, why);
      if (cg.size() != s.parts || (s.kind == op::alltoall ? sg.size() != s.parts : sg.n != 0))
        return fail(si, "the grids' parts do not multiply to the group size");
      std::vector<bool> listed(static_cast<std::size_t>(R), false);
      for (const step_grid* g : {&cg, &sg})
        for (int q = 0; q < g->n; ++q) {
          if (!check_dim(g->dim[q]) || listed[static_cast<std::size_t>(g->dim[q])])
            return fail(si, str_cat("dimension ", g->dim[q], " out of range or listed twice"));
          listed[static_cast<std::size_t>(g->dim[q])] = true;
        }
      const std::uint64_t n = s.parts;
      std::vector<std::uint64_t> lo(static_cast<std::size_t>(R)), hi(lo), blo(lo), bhi(lo);
      auto chunk = [&](rank_t r, std::uint64_t mm, std::vector<std::uint64_t>& l, std::vector<std::uint64_t>& h) {
        for (int d = 0; d < R; ++d) {
          l[static_cast<std::size_t>(d)] = cur.l(r, d);
          h[static_cast<std::size_t>(d)] = cur.h(r, d);
        }
        for (int q = 0; q < sg.n; ++q) {
          const auto d = static_cast<std::size_t>(sg.dim[q]);
          if (cur.ext(r, sg.dim[q]) % sg.parts[q] != 0) return false;
          const std::uint64_t e = cur.ext(r, sg.dim[q]) / sg.parts[q];
          l[d] += sg.digit(mm, q) * e;
          h[d] = l[d] + e;
        }
        return true;
      };
      for (std::size_t g = 0; g * n < s.members.size(); ++g) {
        const rank_t* grp = s.members.data() + g * n;
        for (std::uint64_t k = 1; k < n; ++k)
          if (!same_partials(g, grp[0], grp[k], why)) return fail(si, why);
        for (std::uint64_t mm = 0; mm < n; ++mm) {
          if (!chunk(grp[0], mm, blo, bhi))
            return fail(si, str_cat("rank ", grp[0], "'s box ", cur.text(grp[0]), " does not split over the grid"));
          for (std::uint64_t k = 0; k < n; ++k) {
            if (!chunk(grp[k], mm, lo, hi))
              return fail(si, str_cat("rank ", grp[k], "'s box ", cur.text(grp[k]), " does not split over the grid"));
            for (int d = 0; d < R; ++d) {
              const auto i = static_cast<std::size_t>(d);
              std::uint64_t wl = blo[i], wh = bhi[i];
              for (int q = 0; q < cg.n; ++q)
                if (cg.dim[q] == d) {
                  wl = blo[i] + cg.digit(k, q) * (bhi[i] - blo[i]);
                  wh = wl + (bhi[i] - blo[i]);
                }
              if (lo[i] != wl || hi[i] != wh)
                return fail(si, str_cat("group ", g, ": what rank ", grp[mm], " receives from member ", k, " (rank ",
                                        grp[k], ") is not at its place in the grid along dimension ", d));
            }
          }
          for (int d = 0; d < R; ++d) {
            const auto i = static_cast<std::size_t>(d);
            std::uint64_t f = 1;
            for (int q = 0; q < cg.n; ++q)
              if (cg.dim[q] == d) f = cg.parts[q];
            next.l(grp[mm], d) = blo[i];
            next.h(grp[mm], d) = blo[i] + f * (bhi[i] - blo[i]);
          }
        }
      }
    } else switch (s.kind) {  // (gather_boxes: above)
      case op::allgather: {
        if (!gather_boxes(why)) return fail(si, why);
        break;
      }
      case op::alltoall: {
        if (!check_dim(s.concat_dim)) return fail(si, str_cat("concat_dim ", s.concat_dim, " out of range"));
        if (!check_dim(s.split_dim)) return fail(si, str_cat("split_dim ", s.split_dim, " out of range"));
        if (!testing_detail::check_groups(s, D, why)) return fail(si, why);
        const int c = s.concat_dim, sp = s.split_dim;
        const std::uint64_t n = s.parts;
        for (std::size_t g = 0; g * n < s.members.size(); ++g) {
          const rank_t* grp = s.members.data() + g * n;
          for (std::uint64_t k = 1; k < n; ++k)
            if (!same_partials(g, grp[k - 1], grp[k], why)) return fail(si, why);
          for (std::uint64_t k = 0; k < n; ++k)
            if (cur.ext(grp[k], sp) % n != 0 && !uneven)
              return fail(si, str_cat("rank ", grp[k], "'s box ", cur.text(grp[k]), " cannot be split into ", n,
                                      " chunks along dimension ", sp));
          // chunk(k, mm): member k's mm-th chunk along sp.
          auto chunk = [&](std::uint64_t k, std::uint64_t mm, std::vector<std::uint64_t>& lo,
                           std::vector<std::uint64_t>& hi) {
            const rank_t r = grp[k];
            for (int d = 0; d < R; ++d) {
              lo[static_cast<std::size_t>(d)] = cur.l(r, d);
              hi[static_cast<std::size_t>(d)] = cur.h(r, d);
            }
            const std::uint64_t e = (cur.ext(r, sp) + n - 1) / n;  // uneven types: ceil-sized chunks
            lo[static_cast<std::size_t>(sp)] = std::min(cur.h(r, sp), cur.l(r, sp) + mm * e);
            hi[static_cast<std::size_t>(sp)] = std::min(cur.h(r, sp), cur.l(r, sp) + (mm + 1) * e);
          };
          std::vector<std::uint64_t> alo(static_cast<std::size_t>(R)), ahi(static_cast<std::size_t>(R)),
              blo(static_cast<std::size_t>(R)), bhi(static_cast<std::size_t>(R)), flo(static_cast<std::size_t>(R));
          for (std::uint64_t mm = 0; mm < n; ++mm) {
            const rank_t recv = grp[mm];
            chunk(0, mm, alo, ahi);
            flo = alo;
            for (std::uint64_t k = 1; k < n; ++k) {
              chunk(k, mm, blo, bhi);
              if (ahi[static_cast<std::size_t>(c)] != blo[static_cast<std::size_t>(c)])
                return fail(si, str_cat("group ", g, ": the chunk rank ", recv, " receives from rank ", grp[k],
                                        " does not follow the one from rank ", grp[k - 1], " along dimension ", c));
              for (int d = 0; d < R; ++d)
                if (d != c && (alo[static_cast<std::size_t>(d)] != blo[static_cast<std::size_t>(d)] ||
                               ahi[static_cast<std::size_t>(d)] != bhi[static_cast<std::size_t>(d)]))
                  return fail(si, str_cat("group ", g, ": the chunks rank ", recv, " receives from ranks ", grp[k - 1],
                                          " and ", grp[k], " disagree on dimension ", d));
              alo = blo;
              ahi = bhi;
            }
            for (int d = 0; d < R; ++d) {
              next.l(recv, d) = d == c ? flo[static_cast<std::size_t>(d)] : alo[static_cast<std::size_t>(d)];
              next.h(recv, d) = ahi[static_cast<std::size_t>(d)];
            }
          }
        }
        break;
      }
      case op::dynslice: {
        if (!check_dim(s.split_dim)) return fail(si, str_cat("split_dim ", s.split_dim, " out of range"));
        if (s.parts < 1) return fail(si, "parts is 0");
        if (s.index.size() != D)
          return fail(si, str_cat("index has ", s.index.size(), " entries, the mesh has ", D, " ranks"));
        const int sp = s.split_dim;
        for (std::uint64_t r = 0; r < D; ++r) {
          if (cur.ext(r, sp) % s.parts != 0 && !uneven)
            return fail(si, str_cat("rank ", r, "'s box ", cur.text(r), " cannot be split into ", s.parts,
                                    " chunks along dimension ", sp));
          if (s.index[r] >= s.parts) return fail(si, str_cat("rank ", r, " keeps chunk ", s.index[r], " of ", s.parts));
          // Uneven types: chunks of ceil(extent / parts), the last ones short or empty.
          const std::uint64_t e = (cur.ext(r, sp) + s.parts - 1) / s.parts, end = cur.h(r, sp);
          next.l(r, sp) = std::min(end, cur.l(r, sp) + s.index[r] * e);
          next.h(r, sp) = std::min(end, next.l(r, sp) + e);
        }
        break;
      }
      case op::allpermute: {
        if (s.dest.size() != D)
          return fail(si, str_cat("dest has ", s.dest.size(), " entries, the mesh has ", D, " ranks"));
        std::vector<bool> got(D, false);
        for (std::uint64_t r = 0; r < D; ++r) {
          const rank_t t = s.dest[r];
          if (t >= D) return fail(si, str_cat("rank ", r, " sends to rank ", t, ", out of range"));
          if (got[t]) return fail(si, str_cat("rank ", t, " receives two tiles (dest is not a bijection)"));
          got[t] = true;
          nextK[t] = K[r];
          for (int d = 0; d < R; ++d) {
            next.l(t, d) = cur.l(r, d);
            next.h(t, d) = cur.h(r, d);
          }
        }
        break;
      }
      case op::allreduce:
      case op::reducescatter: {
        const bool scatter = s.kind == op::reducescatter;
        if (scatter && !check_dim(s.split_dim)) return fail(si, str_cat("split_dim ", s.split_dim, " out of range"));
        if (p.source.nsum > 0 && s.reduce != p.source.reduce)  // one reduction kind per array
          return fail(si, str_cat("reduces by ", reduction_name(s.reduce), " partials that combine by ",
                                  reduction_name(p.source.reduce)));
        if (!testing_detail::check_groups(s, D, why)) return fail(si, why);
        const std::uint64_t n = s.parts;
        // On uneven programs a reduce-scatter splits the padded tile (the longest box) into
        // n chunks of ceil(padded / n), the last ones short or empty, each clipped to the
        // member's box.
        std::uint64_t padded = 0;
        if (scatter && p.uneven())
          for (std::uint64_t r = 0; r < D; ++r) padded = std::max(padded, cur.ext(static_cast<rank_t>(r), s.split_dim));
        for (std::size_t g = 0; g * n < s.members.size(); ++g) {
          const rank_t* grp = s.members.data() + g * n;
          std::vector<std::uint32_t> all = K[grp[0]], tmp;
          for (std::uint64_t k = 1; k < n; ++k) {
            const rank_t a = grp[0], b = grp[k];
            for (int d = 0; d < R; ++d)
              if (cur.l(a, d) != cur.l(b, d) || cur.h(a, d) != cur.h(b, d))
                return fail(si, str_cat("group ", g, ": ranks ", a, " and ", b, " reduce different boxes ", cur.text(a),
                                        " and ", cur.text(b)));
            if (!testing_detail::disjoint_union(all, K[b], tmp))
              return fail(si, str_cat("group ", g, ": rank ", b, "'s partials ", testing_detail::set_text(K[b]),
                                      " are already in the sum ", testing_detail::set_text(all)));
            all = tmp;
          }
          for (std::uint64_t k = 0; k < n; ++k) {
            const rank_t r = grp[k];
            nextK[r] = all;
            if (!scatter) continue;
            if (padded > 0) {
              const std::uint64_t c = (padded + n - 1) / n, l = cur.l(r, s.split_dim), h = cur.h(r, s.split_dim);
              next.l(r, s.split_dim) = std::min(l + k * c, h);
              next.h(r, s.split_dim) = std::min(l + (k + 1) * c, h);
              continue;
            }
            if (cur.ext(r, s.split_dim) % n != 0)
              return fail(si, str_cat("rank ", r, "'s box ", cur.text(r), " cannot be split into ", n,
                                      " chunks along dimension ", s.split_dim));
            const std::uint64_t e = cur.ext(r, s.split_dim) / n;
            next.l(r, s.split_dim) = cur.l(r, s.split_dim) + k * e;
            next.h(r, s.split_dim) = next.l(r, s.split_dim) + e;
          }
        }
        break;
      }
      case op::partial: {  // local: every group's first member keeps its value, the others hold none
        if (p.target.nsum == 0 || s.reduce != p.target.reduce)
          return fail(si, str_cat("creates values pending by ", reduction_name(s.reduce), " for a target ",
                                  type_text(m, p.target).view()));
        if (s.concat_dim >= 0) {  // padded: the boxes as an allgather's, the first member's value
          if (s.reduce == reduction::avg) return fail(si, "avg pads no tiles");
          if (!gather_boxes(why)) return fail(si, why);
          for (std::size_t g = 0; g * s.parts < s.members.size(); ++g)
            for (std::uint64_t k = 1; k < s.parts; ++k) nextK[s.members[g * s.parts + k]].clear();
          created *= s.parts;
          break;
        }
        if (!testing_detail::check_groups(s, D, why)) return fail(si, why);
        for (std::size_t g = 0; g * s.parts < s.members.size(); ++g) {
          const rank_t* grp = s.members.data() + g * s.parts;
          for (std::uint64_t k = 1; k < s.parts; ++k) {
            for (int d = 0; d < R; ++d)
              if (cur.l(grp[0], d) != cur.l(grp[k], d) || cur.h(grp[0], d) != cur.h(grp[k], d))
                return fail(si, str_cat("group ", g, ": ranks ", grp[0], " and ", grp[k], " hold different boxes ",
                                        cur.text(grp[0]), " and ", cur.text(grp[k])));
            if (!same_partials(g, grp[0], grp[k], why)) return fail(si, why);
            nextK[grp[k]].clear();
          }
        }
        created *= s.parts;
        break;
      }
      case op::exchange: {
        if (s.boxes.size() != 2 * D * static_cast<std::uint64_t>(R))
          return fail(si, str_cat("boxes lists ", s.boxes.size(), " range ends, expected 2 x ", R, " dimensions x ", D,
                                  " ranks"));
        if (std::any_of(K.begin(), K.end(), [&](const auto& k) { return k.size() != nsrc; }))
          return fail(si, "an exchange while ranks hold partial sums (every pending sum must be reduced before it)");
        for (std::uint64_t r = 0; r < D; ++r)
          for (int d = 0; d < R; ++d) {
            next.l(r, d) = s.boxes[2 * (r * static_cast<std::uint64_t>(R) + static_cast<std::uint64_t>(d))];
            next.h(r, d) = s.boxes[2 * (r * static_cast<std::uint64_t>(R) + static_cast<std::uint64_t>(d)) + 1];
            if (next.l(r, d) > next.h(r, d) || next.h(r, d) > p.source.dims[d].global)
              return fail(si, str_cat("rank ", r, "'s box ", next.text(r), " is not inside the array (dimension ", d,
                                      " has ", p.source.dims[d].global, " indices)"));
          }
        // Coverage: A_r minus every distinct box held before must leave nothing.
        std::vector<testing_detail::range_box> held;
        for (std::uint64_t r = 0; r < D; ++r) {
          testing_detail::range_box b{std::vector<std::uint64_t>(static_cast<std::size_t>(R)),
                              std::vector<std::uint64_t>(static_cast<std::size_t>(R))};
          for (int d = 0; d < R; ++d) {
            b.lo[static_cast<std::size_t>(d)] = cur.l(r, d);
            b.hi[static_cast<std::size_t>(d)] = cur.h(r, d);
          }
          held.push_back(std::move(b));
        }
        auto box_less = [](const testing_detail::range_box& a, const testing_detail::range_box& b) {
          return a.lo != b.lo ? a.lo < b.lo : a.hi < b.hi;
        };
        auto box_eq = [](const testing_detail::range_box& a, const testing_detail::range_box& b) { return a.lo == b.lo && a.hi == b.hi; };
        std::sort(held.begin(), held.end(), box_less);
        held.erase(std::unique(held.begin(), held.end(), box_eq), held.end());
        std::uint64_t most = 0;
        for (std::uint64_t r = 0; r < D; ++r) {
          std::vector<testing_detail::range_box> left(1), cut;
          left[0].lo.resize(static_cast<std::size_t>(R));
          left[0].hi.resize(static_cast<std::size_t>(R));
          std::uint64_t both = 1;  // |A_r n B_r|
          for (int d = 0; d < R; ++d) {
            left[0].lo[static_cast<std::size_t>(d)] = next.l(r, d);
            left[0].hi[static_cast<std::size_t>(d)] = next.h(r, d);
            const std::uint64_t lo = std::max(next.l(r, d), cur.l(r, d)), hi = std::min(next.h(r, d), cur.h(r, d));
            both *= hi > lo ? hi - lo : 0;
          }
          const std::uint64_t got = next.size(r) - both;  // received from other ranks
          if (got == 0) left.clear();  // r holds all of A_r (or A_r is empty)
          for (const testing_detail::range_box& b : held) {
            cut.clear();
            for (const testing_detail::range_box& a : left) testing_detail::subtract(a, b, cut);
            std::swap(left, cut);
            if (left.empty()) break;
          }
          if (!left.empty()) {
            std::string where = "[";
            for (int d = 0; d < R; ++d)
              where += str_cat(d ? ", " : "", left[0].lo[static_cast<std::size_t>(d)], ":",
                               left[0].hi[static_cast<std::size_t>(d)]);
            return fail(si, str_cat("rank ", r, "'s box ", next.text(r), " is not covered by the boxes held before: no rank holds ",
                                    where, ")"));
          }
          most = std::max(most, got);
        }
        exchange_cost = most;
        break;
      }
    }
    // Every rank holds a tile of one shape; on uneven types boxes may be shorter, and the
    // tile (its local size) is the longest box per dimension.
    std::uint64_t tile_ext[max_dims]{};
    std::uint64_t after = 1;
    for (int d = 0; d < R; ++d) {
      for (std::uint64_t r = 0; r < D; ++r) tile_ext[d] = std::max(tile_ext[d], next.ext(r, d));
      after *= tile_ext[d];
    }
    for (std::uint64_t r = 0; r < D && !uneven; ++r)
      for (int d = 0; d < R; ++d)
        if (next.ext(r, d) != tile_ext[d])
          return fail(si, str_cat("rank ", r, "'s box ", next.text(r), " has a different shape than rank 0's ",
                                  next.text(0)));
    if (after > p.memory_bound_elements)
      return fail(si, str_cat("local size ", after, " exceeds the memory bound ", p.memory_bound_elements));
    const std::uint64_t c = s.kind == op::exchange ? exchange_cost : cost_elements(s.kind, local, after);
    if (s.cost != c)
      return fail(si, str_cat("step cost ", s.cost, s.kind == op::exchange ? ", the most one rank receives is " : ", Fig. 11 gives ", c));
    if (s.local_after != after) return fail(si, str_cat("local_after ", s.local_after, ", the boxes hold ", after));
    if (s.after.rank != R) return fail(si, str_cat("after has rank ", s.after.rank));
    if (s.after.sums * nextK[0].size() != nsrc * created)
      return fail(si, str_cat("after.sums = ", s.after.sums, " but ranks hold sums of ", nextK[0].size(),
                              " of the source's ", nsrc, " partials"));
    for (int d = 0; d < R; ++d)
      if (s.after.parts[d] == 0 || (p.source.dims[d].global + s.after.parts[d] - 1) / s.after.parts[d] != tile_ext[d])
        return fail(si, str_cat("after.parts[", d, "] = ", s.after.parts[d], " but tiles have extent ", tile_ext[d]));
    if (s.type_exact) {
      if (!same_global(s.type_after, p.source) || check(m, s.type_after).code != errc::ok)
        return fail(si, "type_after is ill-formed or of another global shape");
      boxes want = testing_detail::boxes_of(m, s.type_after);
      for (std::uint64_t r = 0; r < D; ++r)
        for (int d = 0; d < R; ++d)
          if (want.l(r, d) != next.l(r, d) || want.h(r, d) != next.h(r, d))
            return fail(si, str_cat("type_exact is set but ", std::string(type_text(m, s.type_after).view()), " puts ",
                                    want.text(r), " on rank ", r, ", which holds ", next.text(r)));
    }
    res.cost += c;
    if (s.kind == op::allpermute) res.permute_cost += c;
    local = after;
    res.peak = std::max(res.peak, local);
    cur = std::move(next);
    K = std::move(nextK);
    ++res.steps_checked;
  }

  const std::size_t end = p.steps.size();
  const boxes want = testing_detail::boxes_of(m, p.target);
  for (std::uint64_t r = 0; r < D; ++r)
    for (int d = 0; d < R; ++d)
      if (cur.l(r, d) != want.lo[r * static_cast<std::uint64_t>(R) + static_cast<std::uint64_t>(d)] ||
          cur.h(r, d) != want.hi[r * static_cast<std::uint64_t>(R) + static_cast<std::uint64_t>(d)])
        return fail(end, str_cat("rank ", r, " ends with ", cur.text(r), " but its target tile is ", want.text(r)));
  // Partial sums: the ranks that differ only along the target's sum axes hold disjoint
  // sets of the source's partials that together are all of them.
  std::vector<std::vector<std::uint32_t>> total(D);
  std::uint64_t tsum_mask = 0;
  for (int i = 0; i < p.target.nsum; ++i) tsum_mask |= std::uint64_t{1} << p.target.sum[i];
  for (std::uint64_t r = 0; r < D; ++r) {
    std::uint64_t key = r;  // the rank with its coordinates along the target's sum axes zeroed
    for (int k = 0; k < m.nsub; ++k)
      if (tsum_mask & (std::uint64_t{1} << k)) key -= m.coord(k, r) * m.sub[k].stride;
    std::vector<std::uint32_t> tmp;
    if (!testing_detail::disjoint_union(total[key], K[r], tmp))
      return fail(end, str_cat("rank ", r, "'s partials ", testing_detail::set_text(K[r]),
                               " are also held by another rank of its sum group"));
    total[key] = tmp;
  }
  for (std::uint64_t key = 0; key < D; ++key)
    if (!total[key].empty() && total[key].size() != nsrc)
      return fail(
          end, str_cat("the ranks summed with rank ", key, " hold ", total[key].size(), " of the ", nsrc, " partials"));
  if (local_size(m, p.source) > p.memory_bound_elements)
    return fail(end, "the source's local size exceeds the memory bound");
  if (res.peak != p.peak_local_elements)
    return fail(end, str_cat("peak_local_elements is ", p.peak_local_elements, ", the true peak is ", res.peak));
  if (res.cost != p.cost_elements)
    return fail(end, str_cat("cost_elements is ", p.cost_elements, ", Fig. 11 gives ", res.cost));
  return res;
}

/// A one-line description of a problem, for test failure messages.
inline std::string describe(const program& p) {
  std::string s = str_cat(mesh_text(p.m).view(), " ", type_text(p.m, p.source).view(), " -> ",
                          type_text(p.m, p.target).view(), ":");
  for (const step& st : p.steps) s += str_cat(" ", op_name(st.kind));
  s += str_cat(" (cost ", p.cost_elements, ")");
  return s;
}

}  // namespace redist::testing
