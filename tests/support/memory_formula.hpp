// tests/support/memory_formula.hpp -- the executor's memory formula (runtime/executor.hpp),
// written again from its documentation for the tests to compare with peak_bytes_held():
// the bytes one rank's executor holds on top of the caller's tiles, exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "redist/core/dtype.hpp"
#include "redist/exchange.hpp"
#include "redist/program.hpp"

namespace redist::testing {

/// How the backend moves strided blocks: in place (host backend, MPI datatypes) or packed.
struct formula_backend {
  bool alltoall_in_place = true;
  bool allgather_in_place = true;
  bool exchange_in_place = true;  ///< or packed (backends driving one rank of several)
  bool all_local = false;         ///< the backend drives every rank (exchanges copy tile to tile)
};

/// Tile extents after every step, following section 4's semantics (ext[0] = source tile).
inline std::vector<std::vector<std::uint64_t>> tile_shapes(const program& p) {
  std::vector<std::uint64_t> x;
  const extents e0 = tile_extents(p.m, p.source);
  for (int d = 0; d < e0.rank; ++d) x.push_back(e0[d]);
  std::vector<std::vector<std::uint64_t>> out{x};
  if (p.uneven()) {  // boxes of different lengths: the longest per dimension (DESIGN.md section 2)
    for (std::size_t i = 1; i <= p.steps.size(); ++i) {
      const box_trace bt = trace_boxes(p, i);
      for (std::size_t d = 0; d < x.size(); ++d) {
        x[d] = 0;
        for (const box& b : bt.boxes) x[d] = std::max(x[d], b.extent(static_cast<int>(d)));
      }
      out.push_back(x);
    }
    return out;
  }
  for (const step& s : p.steps) {
    if (s.kind == op::exchange)  // the longest box per dimension (boxes are shorter on uneven types)
      for (std::size_t d = 0; d < x.size(); ++d) {
        x[d] = 0;
        for (std::uint64_t r = 0; r < p.m.devices; ++r)
          x[d] = std::max(x[d], s.boxes[2 * (r * x.size() + d) + 1] - s.boxes[2 * (r * x.size() + d)]);
      }
    if (s.fused()) {  // grids of dimensions (program.hpp)
      for (int q = 0; q < s.split_grid.n; ++q) x[static_cast<std::size_t>(s.split_grid.dim[q])] /= s.split_grid.parts[q];
      for (int q = 0; q < s.concat_grid.n; ++q) x[static_cast<std::size_t>(s.concat_grid.dim[q])] *= s.concat_grid.parts[q];
    } else {
      if (s.kind == op::dynslice || s.kind == op::reducescatter || s.kind == op::alltoall)
        x[static_cast<std::size_t>(s.split_dim)] /= s.parts;
      if (s.kind == op::allgather || s.kind == op::alltoall || (s.kind == op::partial && s.concat_dim >= 0))
        x[static_cast<std::size_t>(s.concat_dim)] *= s.parts;  // a padded partial step grows as an allgather
    }
    out.push_back(x);
  }
  return out;
}

inline std::uint64_t product(const std::vector<std::uint64_t>& x) {
  std::uint64_t n = 1;
  for (std::uint64_t v : x) n *= v;
  return n;
}

/// Splitting x into n chunks along d leaves the chunks contiguous and back to back.
inline bool chunks_contiguous(const std::vector<std::uint64_t>& x, int d, std::uint64_t n) {
  if (n == 1) return true;
  for (int k = 0; k < d; ++k)
    if (x[static_cast<std::size_t>(k)] != 1) return false;
  return true;
}

/// The bytes the executor holds for rank `rank` for program p, elements of `e` bytes.
inline std::uint64_t expected_bytes_held(const program& p, std::uint64_t e, formula_backend fb = {},
                                         std::uint64_t pack_chunk_bytes = std::uint64_t{1} << 20, rank_t rank = 0) {
  const auto t = tile_shapes(p);
  const std::size_t S = p.steps.size();
  const std::uint64_t out = product(t[S]);
  std::uint64_t A = 0, B = 0, Ps = 0, Pr = 0;
  // Where t_i lives, counting back from the end: where t_{i+1} does before an unpadded
  // partial step, else region A after the output tile or region B, the output tile (if it
  // fits) or region B after region A.
  enum class at { output, a, b };
  std::vector<at> home(S + 1, at::output);
  for (std::size_t i = S; i-- > 1;) {
    const std::uint64_t ti = product(t[i]);
    if (p.steps[i].kind == op::partial && p.steps[i].concat_dim < 0) home[i] = home[i + 1];
    else if (home[i + 1] == at::a) home[i] = ti <= out ? at::output : at::b;
    else home[i] = at::a;
    if (home[i] == at::a) A = std::max(A, ti);
    if (home[i] == at::b) B = std::max(B, ti);
  }
  bool packs_sends = false;  // some step packs sends (whatever this rank sends)
  for (std::size_t s = 0; s < S; ++s) {
    const step& st = p.steps[s];
    const std::uint64_t n = st.parts, L = product(t[s]);
    const bool as_exchange = moves_as_exchange(p, s);  // steps on uneven tiles that run as exchanges
    const std::uint64_t C = std::min(pack_chunk_bytes, std::max(product(t[0]), out) * e / 2);
    auto piece = [&](std::uint64_t block) { return n * std::min(block, std::max<std::uint64_t>(1, C / (n * e))); };
    if (st.fused()) {  // packed on every backend, in pieces (an allgather's: below, after every send)
      if (st.kind == op::alltoall) {
        Pr = std::max(Pr, piece(L / n));
        Ps = std::max(Ps, piece(L / n));
        packs_sends = true;
      }
      continue;
    }
    const bool send_ok = st.kind == op::alltoall || st.kind == op::reducescatter ? chunks_contiguous(t[s], st.split_dim, n)
                                                                                  : true;
    const bool recv_ok =
        st.kind == op::alltoall || st.kind == op::allgather ? chunks_contiguous(t[s + 1], st.concat_dim, n) : true;
    // Padded blocks that reach past the tile after, or padded chunks of a split extent that
    // n does not divide (uneven types): packed, clipped to the tiles.
    const auto dc = static_cast<std::size_t>(st.concat_dim), ds = static_cast<std::size_t>(st.split_dim);
    const bool clipped = (st.kind == op::allgather || st.kind == op::alltoall) && !as_exchange &&
                         (n * t[s][dc] != t[s + 1][dc] || (st.kind == op::alltoall && t[s][ds] % n != 0));
    if (st.kind == op::allgather && !as_exchange && (clipped || (!recv_ok && !fb.allgather_in_place)))
      Pr = std::max(Pr, piece(L));
    if (st.kind == op::alltoall && !as_exchange && (clipped || (!(send_ok && recv_ok) && !fb.alltoall_in_place))) {
      const std::uint64_t block = L / t[s][ds] * ((t[s][ds] + n - 1) / n);  // a padded chunk: ceil(t / n) rows
      Ps = std::max(Ps, piece(block));
      Pr = std::max(Pr, piece(block));
      packs_sends = true;
    }
    if (st.kind == op::reducescatter && t[s][static_cast<std::size_t>(st.split_dim)] % n != 0) {
      Ps = std::max(Ps, piece(product(t[s + 1])));  // padded to n chunks of the new tile, in pieces
      packs_sends = true;
    } else if (st.kind == op::reducescatter && !send_ok) {
      Ps = std::max(Ps, piece(L / n));
      packs_sends = true;
    }
    if (as_exchange && !fb.all_local && !fb.exchange_in_place) {
      packs_sends = true;
      // packed: the distinct pieces the rank sends to the others (each packed once), and
      // what it receives, whole
      const exchange_plan x = plan_exchange(p, s);
      std::vector<box> sent_boxes;
      for (const exchange_piece& pc : x.pieces)
        if (pc.from == rank && pc.to != rank) sent_boxes.push_back(pc.b);
      std::sort(sent_boxes.begin(), sent_boxes.end());
      sent_boxes.erase(std::unique(sent_boxes.begin(), sent_boxes.end()), sent_boxes.end());
      std::uint64_t sent = 0;
      for (const box& b : sent_boxes) sent += b.size();
      Ps = std::max(Ps, sent);
      Pr = std::max(Pr, x.received[rank]);
    }
  }
  // A fused allgather packs no sends: where no step packs sends, its receives may take the
  // larger end tile.
  const std::uint64_t in_out = std::max(product(t[0]), out);
  for (std::size_t s = 0; s < S; ++s) {
    const step& st = p.steps[s];
    if (!st.fused() || st.kind != op::allgather) continue;
    const std::uint64_t n = st.parts, L = product(t[s]);
    const std::uint64_t C = std::min(pack_chunk_bytes, packs_sends ? in_out * e / 2 : in_out * e);
    Pr = std::max(Pr, n * std::min(L, std::max<std::uint64_t>(1, C / (n * e))));
  }
  return (A + B + Ps + Pr) * e;
}

}  // namespace redist::testing
