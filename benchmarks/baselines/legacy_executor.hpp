// benchmarks/baselines/legacy_executor.hpp -- the executor as it was before issue 13, kept
// for the benchmarks' before/after comparison only (not part of the library): it copies
// every input tile into one of two buffers of max(local sizes) per rank, packs and unpacks
// every strided block between them, and copies the result out, holding 2 x max(local in,
// local out) per rank on top of the caller's tiles. Same checks and agreement as the
// library's executor (runtime/executor.hpp), whose program_hash and step_stats it uses.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "redist/runtime/executor.hpp"

namespace redist::baselines {

template <class T, class B>
  requires backend_for<B, T> && memory_space_for<memory_space_t<B>, T>
class legacy_executor {
 public:
  /// The backend's memory space (runtime/memory.hpp).
  using memory_type = memory_space_t<B>;

  legacy_executor(B& backend, const program& p)
      : b_(backend), p_(p), shapes_(detail::check_program(p)), hash_(program_hash(p, element_tag<T>())) {
    const auto local = b_.local_ranks();
    local_.assign(local.begin(), local.end());
    if (shapes_.error.empty()) {
      if (p_.m.devices != b_.devices())
        shapes_.error = "the communicator has " + std::to_string(b_.devices()) + " ranks but the program's mesh " +
                        std::string(mesh_text(p_.m).view()) + " has " + std::to_string(p_.m.devices) + " devices";
      else if (p_.element_bytes != sizeof(T))
        shapes_.error = "element type mismatch: the program was planned for " + std::to_string(p_.element_bytes) +
                        "-byte elements, the array's elements have " + std::to_string(sizeof(T)) + " bytes";
      else if (shapes_.sums && !reducing_backend_for<B, T>)
        shapes_.error = "the program adds partial sums, which needs an element type with + and a backend with "
                        "allreduce and reducescatter";
      else if (std::any_of(p_.steps.begin(), p_.steps.end(), [](const step& s) { return s.fused(); }))
        shapes_.error = "the executor before #13 does not run fused steps (they came after it)";
    }
    if (shapes_.error.empty()) {
      ranks_.resize(local_.size());
      for (auto& rs : ranks_) {
        rs.buf[0] = mem().template allocate<T>(shapes_.cap);
        rs.buf[1] = mem().template allocate<T>(shapes_.cap);
      }
      held_ = 2 * shapes_.cap * sizeof(T);
      peak_held_ = held_;
    }
    stats_.resize(p_.steps.size());
    for (std::size_t i = 0; i < p_.steps.size(); ++i) stats_[i].kind = p_.steps[i].kind;
  }

  legacy_executor(const legacy_executor&) = delete;
  legacy_executor& operator=(const legacy_executor&) = delete;

  /// Redistribute the tiles of all local ranks: in[i] and out[i] belong to local_ranks()[i];
  /// in[i] has the program's source type, out[i] (owned or borrowed) its target type.
  void run(std::span<const darray<T>> in, std::span<darray<T>> out) {
    std::string err = shapes_.error;
    if (err.empty()) err = check_tiles(in, out);
    const agreement ag = b_.agree(hash_, err.empty());
    if (!err.empty()) throw redist_error(errc::runtime, err);
    if (!ag.all_ok)
      throw redist_error(errc::runtime, "another rank rejected the redistribution (see its message); nothing was moved");
    if (!ag.same)
      throw redist_error(errc::runtime,
                         "ranks disagree on the program (hash mismatch): every rank must run the same program with the "
                         "same element type; nothing was moved");
    prepare();
    for (std::size_t i = 0; i < local_.size(); ++i) {
      rank_state& rs = ranks_[i];
      mem().copy(rs.buf[0].data(), in[i].data(), in[i].size());
      rs.cur = 0;
    }
    live(shapes_.ext.front().size());
    for (std::size_t s = 0; s < p_.steps.size(); ++s) {
      const auto t0 = std::chrono::steady_clock::now();
      run_step(s);
      stats_[s].seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    for (std::size_t i = 0; i < local_.size(); ++i) {
      rank_state& rs = ranks_[i];
      mem().copy(out[i].data(), rs.buf[rs.cur].data(), out[i].size());
    }
    ++runs_;
  }

  /// As above, returning new owned target tiles (host-accessible memory only).
  std::vector<darray<T>> run(std::span<const darray<T>> in)
    requires memory_type::host_accessible
  {
    std::vector<darray<T>> out;
    if (shapes_.error.empty() && in.size() == local_.size()) {
      out.reserve(local_.size());
      for (rank_t r : local_) out.emplace_back(p_.m, p_.target, r);
    }
    run(in, std::span<darray<T>>(out));
    return out;
  }

  /// One local rank (MPI, NCCL): redistribute its tile into `out`.
  void run(const darray<T>& in, darray<T>& out) { run(std::span<const darray<T>>(&in, 1), std::span<darray<T>>(&out, 1)); }
  /// One local rank: redistribute its tile into a new owned tile (host-accessible memory only).
  darray<T> run(const darray<T>& in)
    requires memory_type::host_accessible
  {
    std::vector<darray<T>> out = run(std::span<const darray<T>>(&in, 1));
    return std::move(out.front());
  }

  [[nodiscard]] const program& prog() const { return p_; }
  [[nodiscard]] std::uint64_t hash() const { return hash_; }
  [[nodiscard]] std::span<const rank_t> local_ranks() const { return local_; }
  /// Per-step statistics of the last run.
  [[nodiscard]] const std::vector<step_stats>& stats() const { return stats_; }
  /// Elements of the largest tile along the program (the size of each of the two buffers).
  [[nodiscard]] std::uint64_t capacity() const { return shapes_.cap; }
  /// Bytes the executor holds per rank now (its two buffers).
  [[nodiscard]] std::uint64_t bytes_held() const { return held_; }
  /// The most bytes it ever held per rank.
  [[nodiscard]] std::uint64_t peak_bytes_held() const { return peak_held_; }
  /// The most bytes of live data (a tile, packed sends, received blocks) one rank had at
  /// once during a run; at most peak_bytes_held().
  [[nodiscard]] std::uint64_t peak_bytes_live() const { return peak_live_ * sizeof(T); }
  /// Number of completed runs.
  [[nodiscard]] std::uint64_t runs() const { return runs_; }

 private:
  using buffer_type = decltype(std::declval<memory_type&>().template allocate<T>(0));
  struct rank_state {
    buffer_type buf[2];
    int cur = 0;  ///< which buffer holds the tile
  };

  std::string check_tiles(std::span<const darray<T>> in, std::span<darray<T>> out) const {
    if (in.size() != local_.size())
      return "expected one input tile for each of the " + std::to_string(local_.size()) + " local ranks, got " +
             std::to_string(in.size());
    if (out.size() != local_.size())
      return "expected one output tile for each of the " + std::to_string(local_.size()) + " local ranks, got " +
             std::to_string(out.size());
    auto one = [&](const darray<T>& a, rank_t r, const dist_type& want, const char* what) -> std::string {
      const std::string who = std::string(what) + " tile of rank " + std::to_string(r);
      if (a.device() != r) return who + " belongs to device " + std::to_string(a.device());
      if (!(a.mesh() == p_.m))
        return who + " lives on mesh " + std::string(mesh_text(a.mesh()).view()) + ", the program's mesh is " +
               std::string(mesh_text(p_.m).view());
      if (!(a.type() == want))
        return who + " has type " + std::string(type_text(a.mesh(), a.type()).view()) + ", the program expects " +
               std::string(type_text(p_.m, want).view());
      const std::uint64_t need = local_size(p_.m, want);
      if (a.size() != need || a.data() == nullptr)
        return "wrong buffer size: " + who + " holds " + std::to_string(a.size()) + " elements, its type needs " +
               std::to_string(need);
      if (std::string e = mem().check_pointer(static_cast<const T*>(a.data())); !e.empty()) return who + " " + e;
      return {};
    };
    for (std::size_t i = 0; i < local_.size(); ++i) {
      if (std::string e = one(in[i], local_[i], p_.source, "input"); !e.empty()) return e;
      if (std::string e = one(out[i], local_[i], p_.target, "output"); !e.empty()) return e;
    }
    return {};
  }

  /// The backend's memory space, asked for afresh at every use (a small handle).
  decltype(memory_of(std::declval<B&>())) mem() const { return memory_of(b_); }

  /// Let the backend build its groups (communicators) once, in program order.
  void prepare() {
    if (prepared_) return;
    for (const step& s : p_.steps)
      if (!s.members.empty()) b_.prepare_groups(s.members, s.parts);
    prepared_ = true;
  }

  void live(std::uint64_t elements) { peak_live_ = std::max(peak_live_, elements); }

  block_io<T> io() { return {std::span<T* const>(send_), std::span<T* const>(recv_)}; }

  /// Call `fn(group)` for every group of the step that holds a local rank.
  template <class F>
  void for_local_groups(const step& s, F&& fn) {
    for (std::size_t g = 0; g < s.group_count(); ++g) {
      const auto grp = s.group(g);
      bool mine = false;
      for (rank_t r : grp) mine = mine || send_[r] != nullptr;
      if (mine) fn(grp);
    }
  }

  /// Point every local rank's send buffer at its current tile and its receive buffer at
  /// the other one (the collectives whose output lands in the spare buffer).
  void bind_current_to_other() {
    for (std::size_t i = 0; i < local_.size(); ++i) {
      rank_state& rs = ranks_[i];
      send_[local_[i]] = rs.buf[rs.cur].data();
      recv_[local_[i]] = rs.buf[1 - rs.cur].data();
    }
  }

  /// Local rank i's sends for a collective that splits its tile (extents `before`) into
  /// n chunks along `dim`: the tile itself when the chunks are contiguous, else the chunks
  /// packed into the spare buffer. Points send at them and receive at the other buffer;
  /// returns the index of the buffer holding the sends.
  int bind_split_sends(std::size_t i, const extents& before, int dim, std::uint64_t n, bool contiguous) {
    rank_state& rs = ranks_[i];
    const std::uint64_t L = before.size();
    int sb = rs.cur;
    if (!contiguous) {
      mem().split_all(std::span<const T>(rs.buf[rs.cur].data(), L), before.span(), dim, n,
                      std::span<T>(rs.buf[1 - rs.cur].data(), L));
      sb = 1 - rs.cur;
    }
    send_[local_[i]] = rs.buf[sb].data();
    recv_[local_[i]] = rs.buf[1 - sb].data();
    return sb;
  }

  void run_step(std::size_t si) {
    const step& s = p_.steps[si];
    const extents& before = shapes_.ext[si];
    const extents& after = shapes_.ext[si + 1];
    const std::uint64_t L = before.size(), n = s.parts;
    step_stats& st = stats_[si];
    st.bytes_moved = st.max_rank_bytes = 0;
    send_.assign(p_.m.devices, nullptr);
    recv_.assign(p_.m.devices, nullptr);
    auto other = [](const rank_state& rs) { return 1 - rs.cur; };
    auto account = [&](std::uint64_t bytes) {
      st.bytes_moved += bytes;
      st.max_rank_bytes = std::max(st.max_rank_bytes, bytes);
    };

    switch (s.kind) {
      case op::dynslice: {
        for (std::size_t i = 0; i < local_.size(); ++i) {
          rank_state& rs = ranks_[i];
          mem().split_copy(std::span<const T>(rs.buf[rs.cur].data(), L), before.span(), s.split_dim, n,
                           s.index[local_[i]], std::span<T>(rs.buf[other(rs)].data(), L / n));
          rs.cur = other(rs);
        }
        live(L + L / n);
        break;
      }
      case op::allgather: {
        // send: the tile; recv: n blocks, then concatenated along concat_dim.
        bind_current_to_other();
        for_local_groups(s, [&](std::span<const rank_t> g) { b_.allgather(g, io(), L); });
        const bool direct = split_is_contiguous(after.span(), s.concat_dim);
        for (std::size_t i = 0; i < local_.size(); ++i) {
          rank_state& rs = ranks_[i];
          if (!direct)
            mem().concat_all(std::span<const T>(rs.buf[other(rs)].data(), L * n), before.span(), s.concat_dim, n,
                             std::span<T>(rs.buf[rs.cur].data(), L * n));
          else
            rs.cur = other(rs);
          account((n - 1) * L * sizeof(T));
        }
        live(L + L * n);
        break;
      }
      case op::alltoall: {
        // send: n chunks along split_dim (the tile itself when they are contiguous);
        // recv: n chunks, concatenated along concat_dim.
        extents chunk = before;
        chunk[s.split_dim] /= n;
        const bool packed = split_is_contiguous(before.span(), s.split_dim);
        const bool direct = split_is_contiguous(after.span(), s.concat_dim);
        std::vector<int> send_buf(local_.size());
        for (std::size_t i = 0; i < local_.size(); ++i) send_buf[i] = bind_split_sends(i, before, s.split_dim, n, packed);
        for_local_groups(s, [&](std::span<const rank_t> g) { b_.alltoall(g, io(), L / n); });
        for (std::size_t i = 0; i < local_.size(); ++i) {
          rank_state& rs = ranks_[i];
          const int rb = 1 - send_buf[i];
          if (!direct) {
            mem().concat_all(std::span<const T>(rs.buf[rb].data(), L), chunk.span(), s.concat_dim, n,
                             std::span<T>(rs.buf[send_buf[i]].data(), L));
            rs.cur = send_buf[i];
          } else {
            rs.cur = rb;
          }
          account((n - 1) * (L / n) * sizeof(T));
        }
        live(2 * L);
        break;
      }
      case op::allpermute: {
        bind_current_to_other();
        b_.permute(s.dest, io(), L);
        for (std::size_t i = 0; i < local_.size(); ++i) {
          rank_state& rs = ranks_[i];
          rs.cur = other(rs);
          // the rank received a block from another rank unless it is a fixed point
          if (s.dest[local_[i]] != local_[i]) account(L * sizeof(T));
        }
        live(2 * L);
        break;
      }
      case op::allreduce: {
        if constexpr (reducing_backend_for<B, T>) {
          for (std::size_t i = 0; i < local_.size(); ++i) {
            rank_state& rs = ranks_[i];
            send_[local_[i]] = rs.buf[rs.cur].data();
            recv_[local_[i]] = rs.buf[other(rs)].data();
          }
          for_local_groups(s, [&](std::span<const rank_t> g) { b_.allreduce(g, io(), L); });
          for (std::size_t i = 0; i < local_.size(); ++i) {
            rank_state& rs = ranks_[i];
            rs.cur = other(rs);
            account(2 * (n - 1) * L * sizeof(T) / n);  // what a ring all-reduce receives
          }
          live(2 * L);
        }
        break;
      }
      case op::reducescatter: {
        // send: n chunks along split_dim (the tile itself when they are contiguous);
        // recv: the sum of every member's chunk m, already the new tile.
        if constexpr (reducing_backend_for<B, T>) {
          const bool packed = split_is_contiguous(before.span(), s.split_dim);
          for (std::size_t i = 0; i < local_.size(); ++i)
            ranks_[i].cur = 1 - bind_split_sends(i, before, s.split_dim, n, packed);
          for_local_groups(s, [&](std::span<const rank_t> g) { b_.reducescatter(g, io(), L / n); });
          for (std::size_t i = 0; i < local_.size(); ++i) account((n - 1) * (L / n) * sizeof(T));
          live(2 * L);
        }
        break;
      }
      case op::exchange:  // came after it
        throw redist_error(errc::runtime, "the executor before #13 does not run exchanges");
      case op::partial:  // came after it
        throw redist_error(errc::runtime, "the executor before #13 does not run partial steps");
    }
  }

  B& b_;
  program p_;
  detail::program_shapes shapes_;
  std::uint64_t hash_ = 0;
  std::vector<rank_t> local_;
  std::vector<rank_state> ranks_;
  std::vector<T*> send_, recv_;
  std::vector<step_stats> stats_;
  std::uint64_t held_ = 0, peak_held_ = 0, peak_live_ = 0, runs_ = 0;
  bool prepared_ = false;
};

}  // namespace redist::baselines
