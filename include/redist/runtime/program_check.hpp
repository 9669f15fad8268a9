// redist/runtime/program_check.hpp -- well-formedness of a collective program (DESIGN.md
// section 4) before anything follows it: groups that partition the ranks, dimensions in
// range, extents that split evenly, permutations that are bijections, and a last step that
// leaves the target's tiles. The executor checks every program with it before moving data;
// redist/draw.hpp before following boxes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/core/error.hpp"
#include "redist/program.hpp"
#include "redist/runtime/darray.hpp"

namespace redist {

namespace detail {

/// Shape evolution and well-formedness of a program: the tile extents before every step
/// and after the last, or the first problem found.
struct program_shapes {
  std::vector<extents> ext;  ///< ext[i] = extents before step i; ext.back() = target tile
  std::uint64_t cap = 0;     ///< the largest local size
  bool sums = false;         ///< the program adds partial values (allreduce, reducescatter)
  std::string error;         ///< empty if well-formed
};

inline std::string step_name(const program& p, std::size_t i) {
  return "step " + std::to_string(i) + " (" + std::string(op_name(p.steps[i].kind)) + ")";
}

/// True iff `v` (size D) lists every rank 0..D-1 exactly once.
inline bool is_permutation_of_ranks(const std::vector<rank_t>& v, std::uint64_t D) {
  if (v.size() != D) return false;
  std::vector<bool> seen(D, false);
  for (rank_t r : v) {
    if (r >= D || seen[r]) return false;
    seen[r] = true;
  }
  return true;
}

inline program_shapes check_program(const program& p) {
  program_shapes s;
  auto fail = [&](std::string msg) {
    s.error = "invalid program: " + std::move(msg);
    return s;
  };
  if (error e = check(p.m, p.source)) return fail("source type: " + e.message.str());
  if (error e = check(p.m, p.target)) return fail("target type: " + e.message.str());
  if (error e = check_same_global(p.source, p.target)) return fail(e.message.str());
  const std::uint64_t D = p.m.devices;
  const int R = p.source.rank;
  extents x = tile_extents(p.m, p.source);
  s.ext.push_back(x);
  s.cap = x.size();
  auto dim_ok = [&](int d) { return d >= 0 && d < R; };
  // The problem with a step's groups (allgather, alltoall, allreduce, reducescatter), or "".
  auto groups_problem = [&](const step& st) -> std::string {
    if (st.parts == 0) return "group size 0";
    if (!is_permutation_of_ranks(st.members, D))
      return "the groups must list every rank of the " + std::to_string(D) + " devices exactly once";
    if (D % st.parts != 0)
      return "the " + std::to_string(D) + " devices do not split into groups of " + std::to_string(st.parts);
    return {};
  };
  // The problem with splitting the tile into st.parts chunks along st.split_dim, or "";
  // without one, the split is applied to x.
  auto split = [&](const step& st) -> std::string {
    if (!dim_ok(st.split_dim)) return "split_dim " + std::to_string(st.split_dim) + " out of range";
    if (st.parts == 0 || x[st.split_dim] % st.parts != 0)
      return "extent " + std::to_string(x[st.split_dim]) + " of dimension " + std::to_string(st.split_dim) +
             " cannot be split into " + std::to_string(st.parts);
    x[st.split_dim] /= st.parts;
    return {};
  };
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    const step& st = p.steps[i];
    const std::string name = step_name(p, i);
    std::string problem;
    switch (st.kind) {
      case op::allgather:
      case op::alltoall:
        if (!(problem = groups_problem(st)).empty()) break;
        if (!dim_ok(st.concat_dim)) {
          problem = "concat_dim " + std::to_string(st.concat_dim) + " out of range";
          break;
        }
        if (st.kind == op::alltoall && !(problem = split(st)).empty()) break;
        x[st.concat_dim] *= st.parts;
        break;
      case op::dynslice:
        if (st.index.size() != D) {
          problem = "index must have one entry per rank";
          break;
        }
        for (rank_t v : st.index)
          if (v >= st.parts) problem = "index " + std::to_string(v) + " is not below parts " + std::to_string(st.parts);
        if (problem.empty()) problem = split(st);
        break;
      case op::allpermute:
        if (!is_permutation_of_ranks(st.dest, D)) problem = "dest must be a permutation of the ranks";
        break;
      case op::allreduce:
      case op::reducescatter:
        if (!(problem = groups_problem(st)).empty()) break;
        if (st.kind == op::reducescatter) problem = split(st);
        s.sums = true;
        break;
    }
    if (!problem.empty()) return fail(name + ": " + problem);
    if (st.after.rank == R) {  // the recorded shape (tiles per dimension), when present
      for (int d = 0; d < R; ++d)
        if (st.after.parts[d] == 0 || p.source.dims[d].global / st.after.parts[d] != x[d])
          return fail(name + ": its recorded shape disagrees with its semantics (tile " + extents_text(x) + ")");
    }
    s.ext.push_back(x);
    s.cap = std::max(s.cap, x.size());
  }
  const extents want = tile_extents(p.m, p.target);
  if (!(x == want))
    return fail("the last step leaves tiles of shape " + extents_text(x) + ", the target's tiles are " +
                extents_text(want));
  return s;
}

}  // namespace detail

}  // namespace redist
