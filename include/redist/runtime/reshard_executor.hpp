// redist/runtime/reshard_executor.hpp -- runs a joint plan of many arrays
// (lower/reshard.hpp) on the caller's tiles, through a backend (runtime/backend.hpp).
//
// The caller's tiles. For every local rank i (backend.local_ranks()[i]) and array a, entry
// i * A + a of `in` is the rank's source tile of array a and the same entry of `out` its
// target tile: row-major bytes of the padded tile of the array's type on its mesh
// (local_size * element bytes, runtime/darray.hpp), or empty where the rank is not on that
// mesh. Inputs are never written; outputs must not overlap inputs or one another.
//
// The joint exchange. With every rank in this process (the host backend) each piece is
// copied straight from the sender's source tile to the receiver's target tile: nothing is
// held. With one rank per process every round is one message round (runtime/backend.hpp):
// the receives posted first, the pieces the rank keeps copied from its source tiles to its
// target tiles while messages fly (those of each round in that round,
// reshard_plan::local_of), and either
//   in place (strided_message_backend; reshard_messages::automatic takes it where the
//     backend hands exchanges in place, MPI's mpi_options::exchange_in_place, the default,
//     and the plan's messages average at least reshard_in_place_bytes): each message is one
//     datatype of its pieces in the tiles (MPI: a struct of subarrays, or between two ranks
//     of one node a single copy of each piece, backends/mpi.hpp), moved by the backend
//     itself, nothing held here; or
//   packed (message_backend): each message packed (its pieces back to back, in the plan's
//     order) and sent at once, and unpacked into the target tiles as it arrives. One buffer
//     holds a round's sends, then its receives; it is allocated once, the largest over the
//     rounds: at most the plan's budget. A pipelined plan (lower/reshard.hpp) runs its
//     rounds two at a time where the backend can (pipelined_message_backend: MPI, NCCL):
//     round k + 1 posted and packed before round k is waited for (NCCL: packed on the second
//     stream while round k's group runs), its messages at the other end of the buffer,
//     which holds the largest two consecutive rounds: still at most the budget. Elsewhere
//     one at a time.
//
// Memory. The tiles, the message buffer and every copy live in the backend's memory space
// (runtime/memory.hpp): host memory, or with the NCCL backend memory of the rank's CUDA
// device, every copy enqueued on its stream (run() then returns before the data has moved,
// as the executor's does). A message's pieces are packed, and unpacked, as one batch of
// copies (detail::strided_copies: one kernel launch on NCCL). A tile the space cannot use
// (host memory given to the NCCL backend) is refused before anything moves.
//
// Large worlds. An executor of one rank of several keeps, once built, only the plan's pieces
// that its rank sends, receives or keeps (plan() then holds those), so that what it holds and
// visits at every run grows with its rank's pieces, not with the world's. It takes a rank's
// plan (reshard_options::of_rank: planned with those pieces alone, lower/reshard.hpp) for its
// one rank as well as the whole plan; the agreement's hash covers what both carry
// (benchmarks/reshard_planning.cpp).
//
// Casts. An array whose target holds another floating-point type (reshard_array::target_dtype,
// lower/reshard.hpp) has target tiles of that type; its pieces are converted
// (runtime/cast.hpp) as they are copied where one copy takes them from tile to tile (the host
// backend, the pieces a rank keeps), and on the way in the narrower type otherwise: converted
// as they are packed when narrowing, as they are unpacked when widening. Such a plan's
// messages are packed, never in place. Host and MPI memory convert on the CPU, NCCL's on the
// device (backends/cuda_strided.hpp's converting kernel, the same formulas); a backend whose
// memory has no converting copies (mem.cast_batch, runtime/memory.hpp), or cannot run them
// here (mem.cast_unavailable()), refuses the plan before anything moves.
//
// Own programs (arrays whose route is own) run after the rounds, one executor each
// (runtime/executor.hpp), on the element type of their program type (its arithmetic where the
// program reduces partial values; reshard_array::program_type); their executors' buffers are
// allocated when this executor is built and count in bytes_held(). An array that casts
// pending values runs its program on tiles of its program type where its own differ: its
// source converted into one before the program, its target out of one after (converting
// copies, as for the joint exchange's casts); those tiles count in bytes_held() too. A
// program the plan chunks (reshard_plan::chunks) runs once per chunk, on the caller's tiles
// where a chunk is one run of them, else on a buffer of one chunk (staged the same way).
// A joint plan is one call: run()'s agreement covers every own program (the plan's hash
// covers their programs, its checks their tiles and what their executors refuse), so they
// run without agreements of their own (executor::run_agreed). With one call per array
// (reshard_plan::joint false) each program makes its executor's agreement, once for all its
// chunks (the same program on the same shapes), as separate calls would. Under a budget an
// own program whose buffers exceed it is refused by run().
//
// Fused collectives. The plan's fused sets (reshard_plan::fused, lower/reshard.hpp: own
// programs of even all-reduces, reduce-scatters and all-gathers over every rank, step by step
// the same calls, such as FSDP's, DDP's and HSDP's gradients) run as one call per step over
// two flat buffers of the arrays' program type, as FSDP's and DDP's buckets do, following
// detail::schedule_fused: every rank packs its source tiles as the first step sends them (a
// reduce-scatter's block m holds chunk m of every array, one strided copy per array,
// converting where the array's source holds another type: bf16 gradients into an f32
// reduce-scatter), each step runs once from one buffer into the other, a repack between
// steps where the next sends another arrangement (after an all-gather's member blocks, before
// a reduce-scatter), and the result is copied into the target tiles (converting likewise).
// The buffers (per local rank) count in bytes_held(). The sets run first, then
// the other own programs in array order. A set the executor cannot run as one call per step
// (an array that is not own or not fusible, other calls, a set of one) is refused by run(),
// naming it.
//
// Errors. run() checks the tiles of every local rank (sizes, overlaps) and the plan against
// the backend, then makes one agreement call (every rank compares a hash of the plan and
// whether its checks passed), and only then moves data: a bad tile on any rank throws
// redist_error(errc::runtime) on every rank, naming the array and the rank, before anything
// moves.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/core/element_type.hpp"
#include "redist/exchange.hpp"
#include "redist/lower/reshard.hpp"
#include "redist/runtime/backend.hpp"
#include "redist/runtime/executor.hpp"
#include "redist/runtime/half.hpp"
#include "redist/runtime/memory.hpp"
#include "redist/runtime/pack.hpp"

namespace redist {

namespace detail {

/// Where a piece lies in a tile, in bytes: the tile's extents with the last one in bytes (a
/// 0-dimensional array: one dimension of e bytes), and the piece's region in them.
struct byte_region {
  std::array<std::uint64_t, max_dims> ext{};
  int rank = 0;
  tile_region region;
  [[nodiscard]] std::span<const std::uint64_t> extents() const { return {ext.data(), static_cast<std::size_t>(rank)}; }
};

/// Piece `b` of a tile holding box `tile` (extents `te`, the padded tile) of e-byte elements.
inline byte_region piece_region(const box& b, const box& tile, std::span<const std::uint64_t> te, std::uint64_t e) {
  byte_region r;
  r.rank = std::max(b.rank, 1);
  if (b.rank == 0) {
    r.ext[0] = e;
    r.region.size[0] = e;
    return r;
  }
  for (int d = 0; d < b.rank; ++d) {
    const auto k = static_cast<std::size_t>(d);
    r.ext[k] = te[k];
    r.region.start[k] = b.lo[k] - tile.lo[k];
    r.region.size[k] = b.extent(d);
  }
  const auto last = static_cast<std::size_t>(b.rank - 1);
  r.ext[last] *= e;
  r.region.start[last] *= e;
  r.region.size[last] *= e;
  return r;
}

/// The same piece packed alone, row-major.
inline byte_region packed_region(const box& b, std::uint64_t e) {
  std::array<std::uint64_t, max_dims> te{};
  for (int d = 0; d < b.rank; ++d) te[static_cast<std::size_t>(d)] = b.extent(d);
  return piece_region(b, b, std::span<const std::uint64_t>(te.data(), static_cast<std::size_t>(b.rank)), e);
}

/// The copies of region f of bytes `from` to region t of bytes `to` (the same sizes),
/// appended to `out`.
inline void region_copies(std::vector<byte_copy>& out, const std::byte* from, const byte_region& f, std::byte* to,
                          const byte_region& t) {
  for_region_copies(f.extents(), f.region, t.extents(), t.region,
                    [&](const strided_copy& c) { out.push_back({c, from, to}); });
}

/// Copy region f of bytes `from` to region t of bytes `to` (the same sizes), in host memory.
inline void copy_region(const std::byte* from, const byte_region& f, std::byte* to, const byte_region& t) {
  for_region_copies(f.extents(), f.region, t.extents(), t.region,
                    [&](const strided_copy& c) { host_memory{}.strided(c, from, to); });
}

/// The extents of layout l's tile: the type's, or the box layout's padded tile.
inline extents layout_extents(const array_layout& l) {
  if (const auto* t = std::get_if<placed_layout>(&l)) return tile_extents(t->pm.mesh, t->type);
  return tile_extents(std::get<box_layout>(l));
}

/// Execute converting copies in memory space mem (mem.cast_batch, runtime/memory.hpp; a plan
/// that casts is refused before anything moves where the space has none).
template <class M>
void cast_copies(const M& mem, std::span<const cast_copy> v) {
  if constexpr (requires { mem.cast_batch(v); })
    if (!v.empty()) mem.cast_batch(v);
}

/// A byte copy of a strided copy of e-byte elements.
inline strided_copy in_bytes(strided_copy c, std::uint64_t e) {
  c.width *= e;
  c.src *= e;
  c.src_pitch *= e;
  c.src_step *= e;
  c.dst *= e;
  c.dst_pitch *= e;
  c.dst_step *= e;
  return c;
}

/// Copy c the other way: from its destination to its source.
inline strided_copy reversed(strided_copy c) {
  std::swap(c.src, c.dst);
  std::swap(c.src_pitch, c.dst_pitch);
  std::swap(c.src_step, c.dst_step);
  return c;
}

/// The copies, in elements, of chunk j of chunks k (lower/reshard.hpp reshard_chunks) from a
/// tile in which its shape is c into the chunk packed row-major, appended to `out`: one
/// strided copy per index of the chunk's dimensions before the last cut one and the uncut
/// ones just before it (those run as the copy's `count`), each the runs of that cut
/// dimension (`rows`, one per unit of the tile) of its chunk's rows and everything after.
/// Without cut dimensions, the whole tile.
inline void chunk_copies(const reshard_chunks& k, const chunk_shape& c, std::uint64_t j, std::vector<strided_copy>& out) {
  const int R = c.rank;
  auto at = [](int q) { return static_cast<std::size_t>(q); };
  std::array<std::uint64_t, max_dims> off{}, ts{}, cs{};  // the chunk's first row in each unit; tile and chunk strides
  for (int q = R - 1; q >= 0; --q) {
    if (k.units[at(q)] != 0) {
      const std::uint64_t per = c.unit[at(q)] / k.rows[at(q)];
      off[at(q)] = (j % per) * k.rows[at(q)];
      j /= per;
    }
    ts[at(q)] = q == R - 1 ? 1 : ts[at(q + 1)] * c.tile[at(q + 1)];
    cs[at(q)] = q == R - 1 ? 1 : cs[at(q + 1)] * c.extent[at(q + 1)];
  }
  int last = R - 1;
  while (last >= 0 && k.units[at(last)] == 0) --last;
  strided_copy base;
  if (last < 0) {
    base.width = c.elements();
    base.src_pitch = base.dst_pitch = base.src_step = base.dst_step = base.width;
    out.push_back(base);
    return;
  }
  int m = last;  // dimensions m .. last - 1: not cut, the copy's count
  while (m > 0 && k.units[at(m - 1)] == 0) --m;
  base.width = k.rows[at(last)] * ts[at(last)];
  base.rows = c.runs[at(last)];
  base.src_pitch = c.unit[at(last)] * ts[at(last)];
  base.dst_pitch = base.width;
  for (int q = m; q < last; ++q) base.count *= c.tile[at(q)];
  base.src_step = last > 0 ? ts[at(last - 1)] : 0;
  base.dst_step = last > 0 ? cs[at(last - 1)] : 0;
  std::uint64_t outer = 1;
  for (int q = 0; q < m; ++q) outer *= c.extent[at(q)];
  for (std::uint64_t o = 0; o < outer; ++o) {
    strided_copy y = base;
    y.src = off[at(last)] * ts[at(last)];
    y.dst = 0;
    std::uint64_t rest = o;
    for (int q = m - 1; q >= 0; --q) {
      const std::uint64_t i = rest % c.extent[at(q)];
      rest /= c.extent[at(q)];
      const std::uint64_t r = k.rows[at(q)];
      y.src += (k.units[at(q)] != 0 ? (i / r) * c.unit[at(q)] + off[at(q)] + i % r : i) * ts[at(q)];
      y.dst += i * cs[at(q)];
    }
    out.push_back(y);
  }
}

/// Runs one own program on byte tiles, with the program's element type.
struct own_runner {
  virtual ~own_runner() = default;
  virtual std::uint64_t bytes_held() const = 0;
  /// "" or why its executor cannot run the program here (executor_core::error).
  virtual const std::string& error() const = 0;
  /// Runs the program; with `agree`, its first call makes the executor's agreement (one
  /// call per array), else none (the reshard's agreement covered it).
  virtual void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
                   bool agree) = 0;
};

template <class T, class B>
struct typed_runner final : own_runner {
  using buffer_type = decltype(memory_of(std::declval<B&>()).template allocate<std::byte>(0));

  typed_runner(B& b, const program& p) : b_(b), ex(b, p) {}
  B& b_;
  executor<T, B> ex;

  /// Staged sides (lower/reshard.hpp): the caller's tiles hold `from` (source) and `to`
  /// (target) elements, the program runs on T, element type t, once per chunk of k (once:
  /// k.count 1); shape[0], shape[1]: the chunks in the caller's source and target tiles,
  /// holds[0][i], holds[1][i]: whether local rank i has such a tile. A side staged
  /// (lower/reshard.hpp staged_sides: of another type than t, or whose chunks are not runs
  /// of the caller's tiles) runs on a buffer of a chunk of T, copied (converted) from the
  /// caller's source before each call, or into its target after it; the other sides on the
  /// caller's tiles.
  void stage(element_type from, element_type to, element_type t, const reshard_chunks& k,
             const std::array<chunk_shape, 2>& shape, const std::array<bool, 2>& staged,
             const std::array<std::vector<char>, 2>& holds) {
    types_ = {from, to};
    type_ = t;
    chunks_ = k;
    const auto mem = memory_of(b_);
    for (std::size_t side = 0; side < 2; ++side) {
      side_& x = sides_[side];
      x.shape = shape[side];
      x.staged = staged[side];
      for (std::size_t i = 0; i < holds[side].size(); ++i)
        x.bufs.push_back(mem.template allocate<std::byte>(x.staged && holds[side][i] ? x.shape.elements() * sizeof(T) : 0));
    }
    staged_ = 0;
    for (std::size_t i = 0; i < holds[0].size(); ++i)
      staged_ = std::max(staged_, (sides_[0].staged && holds[0][i] ? sides_[0].shape.elements() * sizeof(T) : 0) +
                                      (sides_[1].staged && holds[1][i] ? sides_[1].shape.elements() * sizeof(T) : 0));
    staging_ = true;
  }
  std::uint64_t bytes_held() const override { return ex.bytes_held() + staged_; }
  const std::string& error() const override { return ex.error(); }

  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
           bool agree) override {
    if (!staging_) return run_typed(in, out, agree);
    const auto mem = memory_of(b_);
    const std::size_t L = in.size();
    std::vector<std::span<const std::byte>> ins(L);
    std::vector<std::span<std::byte>> outs(L);
    std::vector<cast_copy> casts;
    std::vector<byte_copy> copies;
    std::vector<strided_copy> where;
    // Chunk j of side x: spans[i], where the program reads (writes) local rank i's chunk; where
    // staged, the copies (conversions) between the caller's tile and the buffer in `copies`
    // and `casts` (into the buffer: into).
    auto chunk = [&](side_& x, std::size_t side, std::uint64_t j, bool into, auto tiles, auto& spans) {
      where.clear();
      chunk_copies(chunks_, x.shape, j, where);
      const element_type caller = types_[side];
      const std::uint64_t ec = element_type_bytes(caller);
      for (std::size_t i = 0; i < L; ++i) {
        if (tiles[i].empty()) {
          spans[i] = {};
        } else if (!x.staged) {  // one run of the tile
          spans[i] = tiles[i].subspan(where[0].src * ec, where[0].width * ec);
        } else {
          spans[i] = {x.bufs[i].data(), x.shape.elements() * sizeof(T)};
          auto* tile = const_cast<std::byte*>(reinterpret_cast<const std::byte*>(tiles[i].data()));
          for (const strided_copy& c : where) {
            if (caller == type_) {
              const strided_copy b = in_bytes(c, ec);
              if (into) copies.push_back({b, tile, x.bufs[i].data()});
              else copies.push_back({reversed(b), x.bufs[i].data(), tile});
            } else if (into) {
              casts.push_back({c, tile, caller, x.bufs[i].data(), type_});
            } else {
              casts.push_back({reversed(c), x.bufs[i].data(), type_, tile, caller});
            }
          }
        }
      }
    };
    auto flush = [&] {
      cast_copies(mem, std::span<const cast_copy>(casts));
      strided_copies(mem, std::span<const byte_copy>(copies));
      casts.clear();
      copies.clear();
    };
    for (std::uint64_t j = 0; j < chunks_.count; ++j) {
      chunk(sides_[0], 0, j, true, in, ins);
      flush();
      chunk(sides_[1], 1, j, false, out, outs);  // its copies out of the buffers after the program
      run_typed(ins, outs, agree && j == 0);  // the first chunk's agreement covers the rest: the same program and shapes
      flush();
    }
  }

 private:
  struct side_ {
    std::vector<buffer_type> bufs;  ///< per local rank, where staged and it holds a tile
    chunk_shape shape;
    bool staged = false;
  };
  std::array<side_, 2> sides_;           ///< source, target
  std::array<element_type, 2> types_{};  ///< the caller's source and target element types
  element_type type_{};
  reshard_chunks chunks_;
  std::uint64_t staged_ = 0;
  bool staging_ = false;

  void run_typed(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out, bool agree) {
    const program& p = ex.prog();
    std::vector<darray<T>> ins, outs;
    const auto local = ex.local_ranks();
    for (std::size_t i = 0; i < local.size(); ++i) {
      const std::int64_t sp = p.source_position(local[i]), tp = p.target_position(local[i]);
      auto as_t = [](auto bytes) {  // the caller's bytes of T (tiles of this array's element type)
        using V = std::conditional_t<std::is_const_v<typename decltype(bytes)::element_type>, const T, T>;
        return std::span<V>(reinterpret_cast<V*>(bytes.data()), bytes.size() / sizeof(T));
      };
      if (p.boxed_source()) {  // a box layout: every world rank's entry, a tile or none
        const std::span<const T> s = as_t(in[i]);
        ins.push_back(darray<T>::of_layout(p.source_layout, local[i], std::span<T>(const_cast<T*>(s.data()), s.size())));
      } else if (sp < 0) {
        ins.push_back(darray<T>::none(p.m, p.source));
      } else {
        const std::span<const T> s = as_t(in[i]);
        ins.emplace_back(p.m, p.source, static_cast<rank_t>(sp), std::span<T>(const_cast<T*>(s.data()), s.size()));
      }
      if (p.boxed_target()) outs.push_back(darray<T>::of_layout(p.target_layout, local[i], as_t(out[i])));
      else if (tp < 0) outs.push_back(darray<T>::none(p.target_mesh(), p.target));
      else outs.emplace_back(p.target_mesh(), p.target, static_cast<rank_t>(tp), as_t(out[i]));
    }
    if (agree) ex.run(std::span<const darray<T>>(ins), std::span<darray<T>>(outs));
    else ex.run_agreed(std::span<const darray<T>>(ins), std::span<darray<T>>(outs));
  }
};

/// Own programs run as one collective over flat buffers (the header comment).
struct fused_call {
  virtual ~fused_call() = default;
  virtual std::uint64_t bytes_held() const = 0;
  /// in[i * A + a], out[i * A + a] as in reshard_executor::run.
  virtual void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
                   std::size_t A) = 0;
  std::vector<std::size_t> arrays;  ///< the arrays it moves, ascending
};

/// A fused_call on elements of e bytes (element type t), compiled once per backend: all
/// but the collective calls, which typed_fused_call<T, B> makes in T.
template <class B>
struct fused_call_core : fused_call {
  using buffer_type = decltype(memory_of(std::declval<B&>()).template allocate<std::byte>(0));

  /// The arrays `which` with their own programs `progs`, run on elements of type t (e
  /// bytes); types[k]: array k's source and target element types, converted from and to t
  /// as the caller's tiles are packed and copied out where they differ
  /// (reshard_array::program_type).
  fused_call_core(B& b, std::vector<std::size_t> which, std::span<const program* const> progs,
                  std::span<const rank_t> local, element_type t, std::span<const std::array<element_type, 2>> types,
                  std::size_t e)
      : b_(b), steps_(progs.front()->steps), local_(local.begin(), local.end()) {
    arrays = std::move(which);
    actions_ = schedule_fused(steps_);
    sums_ = fused_state_elements(progs);
    // Where array i lies in an arrangement at state k: its tile (extents `ext`) cut into n
    // chunks along dimension d, chunk m at element m * block + at (n = 1: the whole tile).
    struct place {
      std::uint64_t n = 1, block = 0, at = 0;
      int d = 0;
    };
    auto state_extents = [](const program& p, std::size_t k) {
      return k == 0 ? tile_extents(p.m, p.source) : tile_extents(p.m, p.steps[k - 1].type_after);
    };
    auto locals = [](const program& p, std::size_t k) { return k == 0 ? p.source_local() : p.steps[k - 1].local_after; };
    // before[k][i]: the elements of the arrays before i at state k.
    std::vector<std::vector<std::uint64_t>> before(steps_.size() + 1, std::vector<std::uint64_t>(progs.size() + 1, 0));
    for (std::size_t k = 0; k < before.size(); ++k)
      for (std::size_t i = 0; i < progs.size(); ++i) before[k][i + 1] = before[k][i] + locals(*progs[i], k);
    auto where = [&](std::size_t i, std::size_t k, fused_arrangement x, bool caller) {
      place w;
      if (caller) return w;
      if (x == fused_arrangement::tiles) {
        w.at = before[k][i];
      } else if (x == fused_arrangement::chunks) {  // sent by the reduce-scatter at step k
        w.n = steps_[k].parts;
        w.d = progs[i]->steps[k].split_dim;
        w.block = sums_[k + 1];
        w.at = before[k + 1][i];
      } else {  // left by the all-gather at step k - 1
        w.n = steps_[k - 1].parts;
        w.d = progs[i]->steps[k - 1].concat_dim;
        w.block = sums_[k - 1];
        w.at = before[k - 1][i];
      }
      return w;
    };
    for (const fused_action& x : actions_) {
      std::vector<array_copy> v;
      for (std::size_t i = 0; !x.call && i < progs.size(); ++i) {
        const place from = where(i, x.state, x.in, x.from < 0), to = where(i, x.state, x.out, x.to < 0);
        strided_copy c;
        if (from.n == 1 && to.n == 1) {
          c.width = locals(*progs[i], x.state);
          c.src = from.at;
          c.dst = to.at;
        } else {  // one side a whole tile (schedule_fused repacks through tiles)
          const bool into_blocks = to.n > 1;
          const place& blocks = into_blocks ? to : from;
          const place& whole = into_blocks ? from : to;
          const extents ext = state_extents(*progs[i], x.state);
          const split_view sv = make_split_view(ext.span(), blocks.d, blocks.n);
          c.count = blocks.n;
          c.rows = sv.outer;
          c.width = sv.run;
          c.src = whole.at;
          c.src_step = sv.run;
          c.src_pitch = sv.row;
          c.dst = blocks.at;
          c.dst_step = blocks.block;
          c.dst_pitch = sv.run;
          if (!into_blocks) {
            std::swap(c.src, c.dst);
            std::swap(c.src_step, c.dst_step);
            std::swap(c.src_pitch, c.dst_pitch);
          }
        }
        const element_type from_type = x.from < 0 ? types[i][0] : t, to_type = x.to < 0 ? types[i][1] : t;
        v.push_back({from_type == to_type ? in_bytes(c, e) : c, from_type, to_type});
      }
      copies_.push_back(std::move(v));
    }
    const std::array<std::uint64_t, 2> n = fused_buffers(actions_, sums_);
    const auto mem = memory_of(b_);
    for (std::size_t q = 0; q < 2; ++q)
      for (std::size_t i = 0; i < local_.size(); ++i) buf_[q].push_back(mem.template allocate<std::byte>(n[q] * e));
    held_ = (n[0] + n[1]) * e;
  }

  std::uint64_t bytes_held() const override { return held_; }

  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
           std::size_t A) override {
    if (!prepared_) {
      for (const step& s : steps_) b_.prepare_groups(s.members, s.parts);
      prepared_ = true;
    }
    const auto mem = memory_of(b_);
    std::vector<byte_copy> copies;
    std::vector<cast_copy> casts;
    for (std::size_t q = 0; q < actions_.size(); ++q) {
      const fused_action& x = actions_[q];
      if (!x.call) {
        copies.clear();
        for (std::size_t i = 0; i < local_.size(); ++i)
          for (std::size_t k = 0; k < arrays.size(); ++k) {
            const std::size_t t = i * A + arrays[k];
            const std::byte* from = x.from < 0 ? in[t].data() : buf_[static_cast<std::size_t>(x.from)][i].data();
            std::byte* to = x.to < 0 ? out[t].data() : buf_[static_cast<std::size_t>(x.to)][i].data();
            const array_copy& c = copies_[q][k];
            if (c.from == c.to) copies.push_back({c.c, from, to});
            else casts.push_back({c.c, from, c.from, to, c.to});
          }
        strided_copies(mem, std::span<const byte_copy>(copies));
        cast_copies(mem, std::span<const cast_copy>(casts));
        casts.clear();
        continue;
      }
      const step& s = steps_[x.state];
      std::vector<std::byte*> sp(b_.devices(), nullptr), rp(b_.devices(), nullptr);
      for (std::size_t i = 0; i < local_.size(); ++i) {
        sp[local_[i]] = buf_[static_cast<std::size_t>(x.from)][i].data();
        rp[local_[i]] = buf_[static_cast<std::size_t>(x.to)][i].data();
      }
      bind(sp, rp);
      for (std::size_t g = 0; g < s.group_count(); ++g) {
        const std::span<const rank_t> grp = s.group(g);
        if (std::none_of(grp.begin(), grp.end(), [&](rank_t r) { return sp[r] != nullptr; })) continue;
        collective(s, grp, s.kind == op::reducescatter ? sums_[x.state + 1] : sums_[x.state]);
      }
    }
  }

 protected:
  /// The buffers of the next collectives: rank r's send[r] and recv[r].
  virtual void bind(std::span<std::byte* const> send, std::span<std::byte* const> recv) = 0;
  /// Step s's collective (allgather, allreduce or reducescatter) of `count` elements on
  /// group g, between the bound buffers.
  virtual void collective(const step& s, std::span<const rank_t> g, std::uint64_t count) = 0;
  B& b_;

 private:
  std::vector<step> steps_;
  std::vector<rank_t> local_;
  std::vector<fused_action> actions_;
  std::vector<std::uint64_t> sums_;            ///< elements of every array's tile per state, summed
  /// One array's copy in an action: in bytes where both sides hold the same element type,
  /// otherwise in elements, converting from `from` to `to` (the caller's tiles and T's).
  struct array_copy {
    strided_copy c;
    element_type from, to;
  };
  std::vector<std::vector<array_copy>> copies_;  ///< per action, per array (none for a call)
  std::array<std::vector<buffer_type>, 2> buf_;    ///< per local rank
  std::uint64_t held_ = 0;
  bool prepared_ = false;
};

/// fused_call_core's collectives in T.
template <class T, class B>
struct typed_fused_call final : fused_call_core<B> {
  typed_fused_call(B& b, std::vector<std::size_t> which, std::span<const program* const> progs,
                   std::span<const rank_t> local, element_type t, std::span<const std::array<element_type, 2>> types)
      : fused_call_core<B>(b, std::move(which), progs, local, t, types, sizeof(T)) {}

 private:
  void bind(std::span<std::byte* const> send, std::span<std::byte* const> recv) override {
    typed_pointers(send, sp_);
    typed_pointers(recv, rp_);
  }
  void collective(const step& s, std::span<const rank_t> g, std::uint64_t count) override {
    const block_io<T> io{std::span<T* const>(sp_), std::span<T* const>(rp_)};
    B& b = this->b_;
    if (s.kind == op::allgather) {
      b.allgather(g, io, count);
    } else if constexpr (reducing_backend_for<B, T>) {
      if (s.kind == op::allreduce) b.allreduce(g, io, count, s.reduce);
      else b.reducescatter(g, io, count, s.reduce);
    }
  }
  std::vector<T*> sp_, rp_;
};

/// The C++ type of an element type: its arithmetic type where `reduces` (f64 double, f32
/// float, bf16 bfloat16, f16 float16 (runtime/half.hpp), i64, i32, i8, u8), otherwise an
/// unsigned integer of its size (the data only moves).
template <class F>
void with_element_type(element_type t, bool reduces, F&& f) {
  if (reduces) {
    switch (t) {
      case element_type::f64: return f(double{});
      case element_type::f32: return f(float{});
      case element_type::bf16: return f(bfloat16{});
      case element_type::f16: return f(float16{});
      case element_type::i64: return f(std::int64_t{});
      case element_type::i32: return f(std::int32_t{});
      case element_type::i8: return f(std::int8_t{});
      case element_type::u8: return f(std::uint8_t{});
    }
  }
  switch (element_type_bytes(t)) {
    case 8: return f(std::uint64_t{});
    case 4: return f(std::uint32_t{});
    case 2: return f(std::uint16_t{});
    default: return f(std::uint8_t{});
  }
}

}  // namespace detail

/// How the messages of a one-rank-per-process backend move (the header comment).
enum class reshard_messages : std::uint8_t {
  automatic,  ///< in place where the backend hands exchanges in place and the plan's messages
              ///< average at least reshard_in_place_bytes, packed otherwise
  packed,
  in_place,   ///< where the backend can (strided_message_backend), else packed
};

/// The average message size from which automatic moves messages in place: the reshard
/// benchmark (docs/benchmarks.md, 8 MPI ranks) measured in place 1.6-1.8x faster on a 256 MiB
/// state (messages of 6-10 MiB) and packed 1.2-1.4x faster on a 3.7 MiB one (60-160 KiB).
inline constexpr std::uint64_t reshard_in_place_bytes = std::uint64_t{1} << 20;

template <class B>
class reshard_executor {
  using buffer_type = decltype(memory_of(std::declval<B&>()).template allocate<std::byte>(0));

 public:
  reshard_executor(B& backend, reshard_plan plan, reshard_messages how = reshard_messages::automatic)
      : b_(backend), p_(std::move(plan)), how_(how) {
    const auto local = b_.local_ranks();
    local_.assign(local.begin(), local.end());
    const std::uint64_t W = p_.world;
    const std::size_t A = p_.arrays.size();
    // Every world rank's tile bytes of every array, before and after (0 off the mesh).
    for (const bool source : {true, false})
      for (std::size_t a = 0; a < A; ++a) {
        const array_layout& l = source ? p_.arrays[a].source : p_.arrays[a].target;
        for (const std::uint64_t n : layout_tile_elements(l, W))
          (source ? in_bytes_ : out_bytes_).push_back(n * (source ? p_.arrays[a].element_bytes() : p_.arrays[a].target_element_bytes()));
      }
    if (W != b_.devices()) {
      error_ = "the communicator has " + std::to_string(b_.devices()) + " ranks but the reshard runs on a world of " +
               std::to_string(W) + " ranks";
      return;
    }
    index_.assign(W, local_.size());
    for (std::size_t i = 0; i < local_.size(); ++i) index_[local_[i]] = i;
    if (p_.of_rank && (local_.size() != 1 || local_[0] != *p_.of_rank)) {
      error_ = "the plan is rank " + std::to_string(*p_.of_rank) + "'s (reshard_options::of_rank), the backend drives " +
               (local_.size() == 1 ? "rank " + std::to_string(local_[0]) : std::to_string(local_.size()) + " ranks");
      return;
    }
    if constexpr (!message_backend<B> && !strided_message_backend<B>) {
      if (local_.size() != W && !p_.rounds.empty()) {
        error_ = "the joint exchange needs a backend driving every rank, or one rank with message_round "
                 "(runtime/backend.hpp: MPI, NCCL)";
        return;
      }
    }
    // Every array's boxes and padded tile extents before and after, per world rank.
    src_box_.resize(A);
    dst_box_.resize(A);
    src_ext_.resize(A);
    dst_ext_.resize(A);
    for (std::size_t a = 0; a < A; ++a) {
      const reshard_array& x = p_.arrays[a];
      src_box_[a] = layout_boxes(x.source, W);
      dst_box_[a] = layout_boxes(x.target, W);
      src_ext_[a] = detail::layout_extents(x.source);
      dst_ext_[a] = detail::layout_extents(x.target);
    }
    hash_ = plan_hash();
    for (std::size_t a = 0; a < A && error_.empty(); ++a) {
      const reshard_array& x = p_.arrays[a];
      if (!x.casts()) continue;
      casting_ = casting_ || !x.casts_pending();
      if (!element_type_casts(x.dtype, x.target_type()))
        error_ = "array '" + x.name + "': the plan casts " + std::string(element_type_name(x.dtype)) + " to " +
                 std::string(element_type_name(x.target_type())) + " (casts are between f64, f32, bf16, f16)";
      else if (p_.route[a] != (x.casts_pending() ? reshard_route::own : reshard_route::joint))
        error_ = "array '" + x.name + "': the plan casts it but moves it " +
                 (x.casts_pending() ? "in the joint exchange, which cannot reduce" : "by its own program");
      else if (const std::string why = cast_unavailable(); !why.empty())
        error_ = "array '" + x.name + "': casting " + std::string(element_type_name(x.dtype)) + " to " +
                 std::string(element_type_name(x.target_type())) + " needs converting copies, which " + why;
    }
    // One rank of several (MPI, NCCL): how its messages go, from every piece; then keep only
    // the pieces it sends, receives or keeps (the hash covered them all), so that what it
    // holds and visits at every run grows with its own pieces, not with the world's.
    in_place_ = choose_in_place();
    has_local_ = p_.local_count > 0;
    // The local pieces round by round (a plan without local_at, made by hand: all in the
    // first round).
    if (p_.local_at.empty()) p_.local_at = {0, p_.local.size()};
    if (p_.local_at.size() < 2 || p_.local_at.size() > std::max<std::size_t>(p_.rounds.size(), 1) + 1 ||
        p_.local_at.front() != 0 || p_.local_at.back() != p_.local.size() ||
        !std::is_sorted(p_.local_at.begin(), p_.local_at.end()))
      error_ = "the plan's local_at does not cut its " + std::to_string(p_.local.size()) + " local pieces into its " +
               std::to_string(p_.rounds.size()) + (p_.rounds.size() == 1 ? " round" : " rounds");
    else if (local_.size() != W) {
      auto mine = [&](const reshard_piece& pc) { return index_[pc.from] < local_.size() || index_[pc.to] < local_.size(); };
      for (reshard_round& r : p_.rounds) {
        std::erase_if(r.pieces, [&](const reshard_piece& pc) { return !mine(pc); });
        r.pieces.shrink_to_fit();
      }
      std::size_t kept = 0;
      for (std::size_t k = 0; k + 1 < p_.local_at.size(); ++k) {
        const std::size_t first = p_.local_at[k], last = p_.local_at[k + 1];
        p_.local_at[k] = kept;
        for (std::size_t i = first; i < last; ++i)
          if (mine(p_.local[i])) p_.local[kept++] = p_.local[i];
      }
      p_.local_at.back() = kept;
      p_.local.resize(kept);
      p_.local.shrink_to_fit();
    }
    if (!error_.empty()) return;
    // Own programs: fused collectives first (the header comment), then one executor each.
    const std::vector<char> fused = build_fused_calls();
    if (!error_.empty()) return;
    own_.resize(A);
    for (std::size_t a = 0; a < A; ++a) {
      if (p_.route[a] != reshard_route::own || fused[a]) continue;
      const reshard_array& x = p_.arrays[a];
      const program& prog = p_.own_program(a);
      const bool reduces = x.source_pending() || x.target_pending();  // reduces, or creates (a partial step)
      const element_type t = x.program_type();
      detail::with_element_type(t, reduces, [&](auto e) {
        using T = decltype(e);
        if constexpr (backend_for<B, T>) {
          auto r = std::make_unique<detail::typed_runner<T, B>>(b_, prog);
          if (x.casts_pending() || p_.chunked(a)) {
            const reshard_chunks whole;
            const reshard_chunks& k = p_.chunked(a) ? p_.chunks[a] : whole;
            std::array<std::vector<char>, 2> holds;
            for (const rank_t q : local_) {
              holds[0].push_back(tile_bytes(a, q, true) > 0);
              holds[1].push_back(tile_bytes(a, q, false) > 0);
            }
            r->stage(x.dtype, x.target_type(), t, k,
                     {detail::chunk_shape_of(k, std::get<placed_layout>(x.source)),
                      detail::chunk_shape_of(k, std::get<placed_layout>(x.target))},
                     detail::staged_sides(x, k), holds);
          }
          own_[a] = std::move(r);
        } else {
          error_ = "array '" + x.name + "': the backend cannot move " + std::string(element_type_name(t)) +
                   " elements";
        }
      });
      if (!error_.empty()) return;
      if (const std::string& e = own_[a]->error(); !e.empty()) {  // refused by every rank's agreement in run()
        error_ = "array '" + x.name + "': " + e;
        return;
      }
      const std::uint64_t held = own_[a]->bytes_held();
      own_held_ = std::max(own_held_, held);
      if (p_.budget_bytes > 0 && held > p_.budget_bytes && error_.empty())
        error_ = "array '" + x.name + "': its own program " + (p_.chunked(a) ? "chunk by chunk " : "") + "holds " +
                 std::to_string(held) + " bytes, more than the budget of " + std::to_string(p_.budget_bytes) +
                 (p_.chunked(a) ? " (planned within " + std::to_string(p_.chunks[a].held_bytes) + ")" : "");
    }
    // Message buffers: one rank of several, packing. Pipelined, round k + 1 lies beside
    // round k: even rounds at the start of the buffer, odd ones at its end.
    if (local_.size() == 1 && local_.size() != W && !in_place_) {
      const rank_t me = local_[0];
      for (const reshard_round& r : p_.rounds) {
        std::uint64_t s = 0;
        for (const reshard_piece& pc : r.pieces)
          if (pc.from == me || pc.to == me) s += p_.piece_bytes(pc);
        round_bytes_.push_back(s);
      }
      for (std::size_t k = 0; k < round_bytes_.size(); ++k)
        buf_bytes_ = std::max(buf_bytes_, round_bytes_[k] + (p_.pipelined && k + 1 < round_bytes_.size() ? round_bytes_[k + 1] : 0));
      buf_ = memory_of(b_).template allocate<std::byte>(buf_bytes_);
    }
  }

  reshard_executor(const reshard_executor&) = delete;
  reshard_executor& operator=(const reshard_executor&) = delete;

  /// The plan; where this executor drives one rank of several, with only that rank's pieces.
  [[nodiscard]] const reshard_plan& plan() const { return p_; }
  [[nodiscard]] std::span<const rank_t> local_ranks() const { return local_; }
  /// Bytes this executor holds beyond the caller's tiles, per local rank: the message buffer
  /// (a round's sends, then its receives: at most the plan's budget) and the largest own
  /// program's buffers.
  [[nodiscard]] std::uint64_t bytes_held() const { return buf_bytes_ + own_held_; }
  /// The own programs that share their collective calls, set by set (the header comment).
  [[nodiscard]] std::vector<std::vector<std::size_t>> fused_arrays() const {
    std::vector<std::vector<std::size_t>> v;
    for (const auto& f : fused_) v.push_back(f->arrays);
    return v;
  }
  /// The message buffer alone (the joint exchange's transient bytes).
  [[nodiscard]] std::uint64_t message_bytes() const { return buf_bytes_; }
  /// The bytes of rank r's source (target) tile of array a: 0 where r is not on its mesh.
  [[nodiscard]] std::uint64_t source_bytes(std::size_t a, rank_t r) const { return tile_bytes(a, r, true); }
  [[nodiscard]] std::uint64_t target_bytes(std::size_t a, rank_t r) const { return tile_bytes(a, r, false); }

  /// Move every array (the header comment): in[i * A + a], out[i * A + a].
  void run(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    std::string err = error_;
    if (err.empty()) err = check_tiles(in, out);
    const agreement ag = b_.agree(hash_, err.empty());
    if (!err.empty()) throw redist_error(errc::runtime, err);
    if (!ag.all_ok)
      throw redist_error(errc::runtime, "another rank rejected the reshard (see its message); nothing was moved");
    if (!ag.same)
      throw redist_error(errc::runtime, "ranks disagree on the reshard plan (hash mismatch); nothing was moved");
    const std::size_t A = p_.arrays.size();
    if (local_.size() == p_.world) run_local(in, out);
    else if (in_place_) run_in_place(in, out);
    else if constexpr (message_backend<B>) run_messages(in, out);
    for (const auto& f : fused_) f->run(in, out, A);
    for (std::size_t a = 0; a < A; ++a) {
      if (!own_[a]) continue;
      std::vector<std::span<const std::byte>> i1;
      std::vector<std::span<std::byte>> o1;
      for (std::size_t i = 0; i < local_.size(); ++i) {
        i1.push_back(in[i * A + a]);
        o1.push_back(out[i * A + a]);
      }
      own_[a]->run(i1, o1, !p_.joint);  // a joint plan is one call: the agreement above covered every program
    }
  }

 private:
  /// The plan's fused collectives (the header comment), each checked. Returns which arrays
  /// they take; sets error_ where one cannot run.
  std::vector<char> build_fused_calls() {
    const std::size_t A = p_.arrays.size();
    std::vector<char> taken(A, 0);
    for (std::size_t k = 0; k < p_.fused.size() && error_.empty(); ++k) {
      const std::vector<std::uint32_t>& set = p_.fused[k].arrays;
      const std::string which = "fused collective " + std::to_string(k + 1) + " of the plan";
      if (set.size() < 2) {
        error_ = which + " has fewer than two arrays";
        return taken;
      }
      std::vector<std::size_t> arrays;
      std::vector<const program*> progs;
      for (std::size_t i = 0; i < set.size(); ++i) {
        const std::size_t a = set[i];
        std::string why;
        if (a >= A) why = "names array " + std::to_string(a) + " of " + std::to_string(A);
        else if (taken[a] || (i > 0 && a <= set[i - 1])) why = "lists array '" + p_.arrays[a].name + "' twice or out of order";
        else
          switch (detail::fuse_refused(p_, a, set[0])) {
            case detail::fuse_refusal::none: break;
            case detail::fuse_refusal::joint: why = "takes array '" + p_.arrays[a].name + "', which is joint"; break;
            case detail::fuse_refusal::not_fusible:
              why = "takes array '" + p_.arrays[a].name +
                    "', whose own program is not even all-reduces, reduce-scatters and all-gathers over every rank";
              break;
            case detail::fuse_refusal::other_call:
              why = "takes array '" + p_.arrays[a].name + "', whose element type or step is not that of array '" +
                    p_.arrays[set[0]].name + "'";
              break;
          }
        if (!why.empty()) {
          error_ = which + " " + why;
          return taken;
        }
        taken[a] = 1;
        arrays.push_back(a);
        progs.push_back(&p_.own[a].chosen_program());
      }
      const element_type pt = p_.arrays[set[0]].program_type();
      std::vector<std::array<element_type, 2>> types;  // each array's source and target types
      for (const std::size_t a : arrays) types.push_back({p_.arrays[a].dtype, p_.arrays[a].target_type()});
      const bool reduces = detail::fused_reduces(*progs.front());
      detail::with_element_type(pt, reduces, [&](auto t) {
        using T = decltype(t);
        constexpr bool can = reducing_backend_for<B, T>;
        if constexpr (backend_for<B, T>) {
          for (const step& s : progs.front()->steps)
            if (s.kind != op::allgather && error_.empty())
              error_ = !can ? which + ": the backend cannot reduce " + std::string(element_type_name(pt)) + " elements"
                       : !reducible<T>(s.reduce) ? which + ": " + unreducible_text(s.reduce)
                                                 : "";
          if (error_.empty())
            fused_.push_back(std::make_unique<detail::typed_fused_call<T, B>>(b_, std::move(arrays), progs, local_, pt, types));
        } else {
          error_ = which + ": the backend cannot move " + std::string(element_type_name(pt)) + " elements";
        }
      });
      if (!error_.empty()) return taken;
      const std::uint64_t held = fused_.back()->bytes_held();
      own_held_ = std::max(own_held_, held);
      if (p_.budget_bytes > 0 && held > p_.budget_bytes)
        error_ = which + " holds " + std::to_string(held) + " bytes, more than the budget of " +
                 std::to_string(p_.budget_bytes);
    }
    return taken;
  }

  [[nodiscard]] std::uint64_t tile_bytes(std::size_t a, rank_t r, bool source) const {
    return (source ? in_bytes_ : out_bytes_)[a * p_.world + r];
  }

  std::string check_tiles(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) const {
    const std::size_t A = p_.arrays.size();
    const std::size_t n = local_.size() * A;
    if (in.size() != n || out.size() != n)
      return "expected " + std::to_string(n) + " source and target tiles (" + std::to_string(local_.size()) +
             " local ranks x " + std::to_string(A) + " arrays), got " + std::to_string(in.size()) + " and " +
             std::to_string(out.size());
    std::vector<std::pair<const std::byte*, const std::byte*>> ranges;
    for (std::size_t i = 0; i < local_.size(); ++i)
      for (std::size_t a = 0; a < A; ++a) {
        const rank_t r = local_[i];
        for (bool src : {true, false}) {
          const std::size_t have = src ? in[i * A + a].size() : out[i * A + a].size();
          const std::uint64_t want = tile_bytes(a, r, src);
          if (have != want)
            return "array '" + p_.arrays[a].name + "' on rank " + std::to_string(r) + ": the " +
                   (src ? "source" : "target") + " tile has " + std::to_string(have) + " bytes, expected " +
                   std::to_string(want) + (want == 0 ? " (the rank is not on its mesh)" : "");
          if (have == 0) continue;
          const std::byte* at = src ? in[i * A + a].data() : out[i * A + a].data();
          if (const std::string why = memory_of(b_).check_pointer(at); !why.empty())
            return "array '" + p_.arrays[a].name + "' on rank " + std::to_string(r) + ": the " +
                   (src ? "source" : "target") + " tile " + why;
        }
        const std::span<const std::byte> o = out[i * A + a];
        if (!o.empty()) ranges.emplace_back(o.data(), o.data() + o.size());
      }
    for (std::size_t k = 0; k < n; ++k) {
      const std::span<const std::byte> s = in[k];
      if (s.empty()) continue;
      for (const auto& [lo, hi] : ranges)
        if (s.data() < hi && lo < s.data() + s.size())
          return "array '" + p_.arrays[k % A].name + "' on rank " + std::to_string(local_[k / A]) +
                 ": a target tile overlaps this source tile";
    }
    std::sort(ranges.begin(), ranges.end());
    for (std::size_t k = 1; k < ranges.size(); ++k)
      if (ranges[k].first < ranges[k - 1].second) return "two target tiles overlap";
    return {};
  }

  /// Where a piece lies on its way: the sender's source tile, a packed message, the
  /// receiver's target tile.
  enum class side : std::uint8_t { source, packed, target };

  [[nodiscard]] element_type side_type(const reshard_piece& pc, side s) const {
    const reshard_array& x = p_.arrays[pc.array];
    return s == side::source ? x.dtype : s == side::packed ? x.wire_type() : x.target_type();
  }

  /// Piece pc's region on side s, in units of e bytes per element (1: in elements).
  [[nodiscard]] detail::byte_region region(const reshard_piece& pc, side s, std::uint64_t e) const {
    if (s == side::packed) return detail::packed_region(pc.b, e);
    return s == side::source ? detail::piece_region(pc.b, src_box_[pc.array][pc.from], src_ext_[pc.array].span(), e)
                             : detail::piece_region(pc.b, dst_box_[pc.array][pc.to], dst_ext_[pc.array].span(), e);
  }
  [[nodiscard]] detail::byte_region src_region(const reshard_piece& pc) const {
    return region(pc, side::source, p_.arrays[pc.array].element_bytes());
  }
  [[nodiscard]] detail::byte_region dst_region(const reshard_piece& pc) const {
    return region(pc, side::target, p_.arrays[pc.array].target_element_bytes());
  }

  /// A batch of piece copies: of bytes where both sides hold the same element type,
  /// converting (runtime/cast.hpp) where they do not.
  struct piece_copies {
    std::vector<detail::byte_copy> bytes;
    std::vector<detail::cast_copy> casts;
  };

  /// Append the copy of piece pc from side fs at `from` to side ts at `to`.
  void add_copy(piece_copies& v, const reshard_piece& pc, const std::byte* from, side fs, std::byte* to, side ts) const {
    const element_type ft = side_type(pc, fs), tt = side_type(pc, ts);
    if (ft == tt) {
      const std::uint64_t e = element_type_bytes(ft);
      detail::region_copies(v.bytes, from, region(pc, fs, e), to, region(pc, ts, e));
      return;
    }
    const detail::byte_region f = region(pc, fs, 1), t = region(pc, ts, 1);
    for_region_copies(f.extents(), f.region, t.extents(), t.region,
                      [&](const detail::strided_copy& c) { v.casts.push_back({c, from, ft, to, tt}); });
  }

  /// "" if the backend's memory converts elements (mem.cast_batch, and mem.cast_unavailable()
  /// empty where it has one), else why not, after "which".
  [[nodiscard]] std::string cast_unavailable() const {
    const auto mem = memory_of(b_);
    if constexpr (!requires { mem.cast_batch(std::span<const detail::cast_copy>()); })
      return "this backend's memory does not have (host, MPI and NCCL do)";
    else if constexpr (requires { mem.cast_unavailable(); })
      return mem.cast_unavailable();
    else
      return {};
  }

  /// Execute a batch (the byte copies and the converting ones write apart).
  void run_copies(const piece_copies& v) const {
    const auto mem = memory_of(b_);
    detail::strided_copies(mem, std::span<const detail::byte_copy>(v.bytes));
    detail::cast_copies(mem, std::span<const detail::cast_copy>(v.casts));
  }

  /// Every rank here: each piece from the sender's source tile to the receiver's target tile.
  void run_local(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    const std::size_t A = p_.arrays.size();
    piece_copies copies;
    auto move = [&](const reshard_piece& pc) {
      add_copy(copies, pc, in[index_[pc.from] * A + pc.array].data(), side::source,
               out[index_[pc.to] * A + pc.array].data(), side::target);
    };
    for (const reshard_piece& pc : p_.local) move(pc);
    for (const reshard_round& r : p_.rounds)
      for (const reshard_piece& pc : r.pieces) move(pc);
    run_copies(copies);
  }

  /// Whether the backend moves the pieces in place (strided_message_backend, when it hands
  /// exchanges' blocks in place: MPI's exchange_in_place), which it cannot where an array
  /// casts.
  [[nodiscard]] bool choose_in_place() const {
    if constexpr (strided_message_backend<B>) {
      if (casting_ || how_ == reshard_messages::packed || (how_ == reshard_messages::automatic && !b_.strided_blocks(op::exchange)))
        return false;
      if (how_ == reshard_messages::in_place) return true;
      std::uint64_t bytes = 0, messages = 0;
      for (const reshard_round& r : p_.rounds) {
        messages += r.messages;
        bytes += r.bytes;
      }
      return messages > 0 && bytes / messages >= reshard_in_place_bytes;
    }
    return false;
  }

  /// One rank of several, in place: a message round of pieces in the tiles per round.
  void run_in_place(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out) {
    if constexpr (strided_message_backend<B>) {
      const rank_t me = local_[0];
      auto piece = [](const std::byte* base, const detail::byte_region& r) {
        message_piece m;
        m.base = base;
        m.rank = r.rank;
        m.extents = r.ext;
        m.region = r.region;
        return m;
      };
      for (std::size_t k = 0; k < p_.rounds.size() || (k == 0 && has_local_); ++k) {
        std::vector<strided_message> sends, recvs;
        if (k < p_.rounds.size())
          for (const reshard_piece& pc : p_.rounds[k].pieces) {  // in message order: runs of (from, to)
            if (pc.from == me) {
              if (sends.empty() || sends.back().peer != pc.to) sends.push_back({pc.to, {}});
              sends.back().pieces.push_back(piece(in[pc.array].data(), src_region(pc)));
            } else if (pc.to == me) {
              if (recvs.empty() || recvs.back().peer != pc.from) recvs.push_back({pc.from, {}});
              recvs.back().pieces.push_back(piece(out[pc.array].data(), dst_region(pc)));
            }
          }
        b_.message_round(std::span<const strided_message>(sends), std::span<const strided_message>(recvs),
                         [&] { keep_local(in, out, k); });
      }
    }
  }

  /// The pieces this rank keeps in round k, from its source tiles to its target tiles.
  void keep_local(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out,
                  std::size_t k) {
    piece_copies copies;
    for (const reshard_piece& pc : p_.local_of(k))
      if (pc.to == local_[0]) add_copy(copies, pc, in[pc.array].data(), side::source, out[pc.array].data(), side::target);
    run_copies(copies);
  }

  /// One rank of several: a message round per round of the plan, two at a time where the
  /// plan is pipelined and the backend can (pipelined_message_backend).
  void run_messages(std::span<const std::span<const std::byte>> in, std::span<const std::span<std::byte>> out)
    requires message_backend<B>
  {
    const rank_t me = local_[0];
    const std::size_t n = std::max<std::size_t>(p_.rounds.size(), has_local_ ? 1 : 0);
    // Every round's messages, runs of pieces with the same (from, to), in its part of the
    // buffer (sends, then receives), and the pieces [first, last) of each message.
    struct round_messages {
      message_set m;
      std::vector<std::pair<std::size_t, std::size_t>> sp, rp;
    };
    std::vector<round_messages> rounds(n);
    for (std::size_t k = 0; k < p_.rounds.size(); ++k) {
      const std::vector<reshard_piece>& v = p_.rounds[k].pieces;
      round_messages& r = rounds[k];
      std::byte* const base = buf_.data() + (p_.pipelined && k % 2 == 1 ? buf_bytes_ - round_bytes_[k] : 0);
      std::uint64_t so = 0, ro = 0;
      for (const reshard_piece& pc : v)
        if (pc.from == me) ro += p_.piece_bytes(pc);  // the receives follow the sends
      for (std::size_t i = 0; i < v.size();) {
        std::size_t j = i;
        std::uint64_t bytes = 0;
        while (j < v.size() && v[j].from == v[i].from && v[j].to == v[i].to) bytes += p_.piece_bytes(v[j++]);
        if (v[i].from == me) {
          r.m.sends.push_back({v[i].to, base + so, bytes});
          r.sp.emplace_back(i, j);
          so += bytes;
        } else if (v[i].to == me) {
          r.m.recvs.push_back({v[i].from, base + ro, bytes});
          r.rp.emplace_back(i, j);
          ro += bytes;
        }
        i = j;
      }
    }
    piece_copies copies;
    // A message's pieces back to back, as one batch of copies: packed from the tiles, or
    // unpacked into them (converted to the wire type, or from it, where the array casts).
    auto move = [&](std::size_t k, std::size_t m, bool pack) {
      copies.bytes.clear();
      copies.casts.clear();
      const std::vector<reshard_piece>& v = p_.rounds[k].pieces;
      const auto [first, last] = (pack ? rounds[k].sp : rounds[k].rp)[m];
      std::byte* at = (pack ? rounds[k].m.sends : rounds[k].m.recvs)[m].data;
      for (std::size_t i = first; i < last; ++i) {
        const reshard_piece& pc = v[i];
        if (pack) add_copy(copies, pc, in[pc.array].data(), side::source, at, side::packed);
        else add_copy(copies, pc, at, side::packed, out[pc.array].data(), side::target);
        at += p_.piece_bytes(pc);
      }
      run_copies(copies);
    };
    auto pack = [&](std::size_t k, std::size_t m) { move(k, m, true); };
    auto unpack = [&](std::size_t k, std::size_t m) { move(k, m, false); };
    auto keep = [&](std::size_t k) { keep_local(in, out, k); };
    if constexpr (pipelined_message_backend<B>) {
      if (p_.pipelined) {
        b_.message_rounds(n, [&](std::size_t k) -> const message_set& { return rounds[k].m; }, pack, keep, unpack);
        return;
      }
    }
    for (std::size_t k = 0; k < n; ++k)
      b_.message_round(
          std::span<const message>(rounds[k].m.sends), std::span<const message>(rounds[k].m.recvs),
          [&](std::size_t m) { pack(k, m); },
          [&] { keep(k); },
          [&](std::size_t m) { unpack(k, m); });
  }

  /// FNV-1a over what every rank must agree on: the world, whether rounds are pipelined, the
  /// arrays, the own programs (so that ranks whose own programs differ, planned under other
  /// profiles, refuse before anything moves, not after the joint exchange), the budget, and
  /// every round's counts and bytes (the whole plan's, which a rank's plan carries too, so
  /// that ranks built from whole plans and from their own agree).
  [[nodiscard]] std::uint64_t plan_hash() const {
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](std::uint64_t v) {
      for (int i = 0; i < 8; ++i) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 1099511628211ull;
      }
    };
    mix(p_.world);
    mix(p_.pipelined);
    mix(p_.joint);
    mix(p_.arrays.size());
    for (std::size_t a = 0; a < p_.arrays.size(); ++a) {
      mix(static_cast<std::uint64_t>(p_.arrays[a].dtype));
      mix(static_cast<std::uint64_t>(p_.arrays[a].target_type()));
      mix(static_cast<std::uint64_t>(p_.route[a]));
      if (p_.route[a] == reshard_route::own) mix(program_hash(p_.own_program(a)));
      if (p_.chunked(a))
        for (std::size_t k = 0; k < max_dims; ++k) {
          mix(p_.chunks[a].units[k]);
          mix(p_.chunks[a].rows[k]);
        }
      for (const auto* bx : {&src_box_[a], &dst_box_[a]})
        for (const box& b : *bx)
          for (int d = 0; d < b.rank; ++d) {
            mix(b.lo[static_cast<std::size_t>(d)]);
            mix(b.hi[static_cast<std::size_t>(d)]);
          }
    }
    mix(p_.budget_bytes);
    mix(p_.local_count);
    for (const reshard_round& r : p_.rounds) {  // the whole round's, the same in a rank's plan
      mix(r.count);
      mix(r.messages);
      mix(r.bytes);
    }
    for (const std::uint64_t n : p_.received_bytes) mix(n);
    mix(p_.fused.size());
    for (const reshard_fused& f : p_.fused) {
      mix(f.arrays.size());
      for (std::uint32_t a : f.arrays) mix(a);
    }
    return h;
  }

  B& b_;
  reshard_plan p_;
  reshard_messages how_;
  std::vector<rank_t> local_;
  std::vector<std::size_t> index_;
  std::vector<std::vector<box>> src_box_, dst_box_;
  std::vector<extents> src_ext_, dst_ext_;
  std::vector<std::unique_ptr<detail::own_runner>> own_;
  std::vector<std::unique_ptr<detail::fused_call>> fused_;
  std::vector<std::uint64_t> in_bytes_, out_bytes_;  ///< tile bytes of array a on rank r: [a * W + r]
  buffer_type buf_{};  ///< the message buffer, in the backend's memory space
  std::vector<std::uint64_t> round_bytes_;  ///< per round: this rank's sends + receives
  std::uint64_t buf_bytes_ = 0, own_held_ = 0, hash_ = 0;
  bool casting_ = false;  ///< some array casts: its messages are packed, converted on the way
  bool in_place_ = false;  ///< messages in place (choose_in_place)
  bool has_local_ = false;  ///< some rank keeps pieces (a first message round even without rounds)
  std::string error_;
};

}  // namespace redist
