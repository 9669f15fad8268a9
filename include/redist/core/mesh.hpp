// redist/core/mesh.hpp -- device meshes, their prime decomposition and the default
// device map.
//
// A mesh is a list of named axes with sizes, in declared order: `{x: 4, y: 8}`.
// Every axis is split into prime-sized sub-axes (Principle 1 of the paper): x:4 becomes
// the sub-axes x:(1)2 (major) and x:(2)2 (minor), in Shardy's `x:(pre)size` notation
// where `pre` is the product of the sizes of the more-major sub-axes of x.
//
// Sub-axes are numbered 0..nsub-1 in *device order*: declared axes first to last, each
// axis's sub-axes major to minor. The default device map is row-major over the declared
// axes (the last declared axis varies fastest), which makes a rank the mixed-radix
// number of the sub-axis coordinates in that order:
//   rank = sum_k coord_k * stride_k,  stride_k = prod_{l > k} size_l.
#pragma once

#include <cstdint>
#include <string_view>

#include "redist/core/config.hpp"
#include "redist/core/error.hpp"
#include "redist/core/lex.hpp"

namespace redist {

/// An axis name stored inline (constexpr-friendly).
struct axis_name {
  char chars[max_name + 1]{};
  std::uint8_t len = 0;
  constexpr axis_name() = default;
  constexpr explicit axis_name(std::string_view s) {
    for (std::size_t i = 0; i < s.size() && i < static_cast<std::size_t>(max_name); ++i) chars[len++] = s[i];
  }
  [[nodiscard]] constexpr std::string_view view() const { return {chars, len}; }
  /// True if the name needs quotes to be written back (not an identifier).
  [[nodiscard]] constexpr bool needs_quotes() const {
    if (len == 0 || !detail::is_ident_start(chars[0])) return true;
    for (int i = 1; i < len; ++i)
      if (!detail::is_ident(chars[i])) return true;
    return false;
  }
  /// The quote that writes the name back: none for an identifier, '"' unless the name holds
  /// one, else '\'' (a name never holds both: the parser has no escapes).
  [[nodiscard]] constexpr char quote() const {
    if (!needs_quotes()) return 0;
    for (int i = 0; i < len; ++i)
      if (chars[i] == '"') return '\'';
    return '"';
  }
  /// Append the name as the parsers read it back.
  constexpr void write(text& t) const {
    if (const char q = quote()) t.append(q).append(view()).append(q);
    else t.append(view());
  }
};

/// One prime-sized piece of a mesh axis.
struct subaxis {
  std::uint8_t axis = 0;       ///< index of the declared axis it belongs to
  std::uint64_t pre = 1;       ///< product of the sizes of the more-major sub-axes of that axis
  std::uint64_t size = 1;      ///< a prime
  std::uint64_t stride = 1;    ///< rank stride under the default device map
};

struct device_mesh {
  int naxes = 0;
  axis_name names[max_axes]{};
  std::uint64_t sizes[max_axes]{};
  int sub_begin[max_axes]{};   ///< first sub-axis id of each axis (major-most)
  int sub_count[max_axes]{};   ///< number of sub-axes of each axis (0 for a size-1 axis)
  int nsub = 0;
  subaxis sub[max_subaxes]{};
  std::uint64_t devices = 1;

  /// Index of the axis with this name, or -1.
  [[nodiscard]] constexpr int find(std::string_view n) const {
    for (int a = 0; a < naxes; ++a)
      if (names[a].view() == n) return a;
    return -1;
  }
  /// Coordinate of sub-axis k of the device with this rank (default device map).
  [[nodiscard]] constexpr std::uint64_t coord(int k, std::uint64_t rank) const {
    return (rank / sub[k].stride) % sub[k].size;
  }
  /// Coordinate along declared axis a of the device with this rank.
  [[nodiscard]] constexpr std::uint64_t axis_coord(int a, std::uint64_t rank) const {
    std::uint64_t c = 0;
    for (int k = sub_begin[a]; k < sub_begin[a] + sub_count[a]; ++k) c = c * sub[k].size + coord(k, rank);
    return c;
  }
  constexpr bool operator==(const device_mesh& o) const {
    if (naxes != o.naxes) return false;
    for (int a = 0; a < naxes; ++a)
      if (names[a].view() != o.names[a].view() || sizes[a] != o.sizes[a]) return false;
    return true;
  }
};

namespace detail {
/// Trial division tries factors below this: every size below 2^32 (its square) factors
/// completely, and no axis costs more than 2^15 divisions (a 64-bit prime would cost 2^31).
inline constexpr std::uint64_t max_trial_factor = std::uint64_t{1} << 16;

/// Smallest prime factor of n >= 2 by trial division; 0 when n has no factor below
/// max_trial_factor yet is too large (>= 2^32) to be known prime.
constexpr std::uint64_t smallest_prime_factor(std::uint64_t n) {
  if (n % 2 == 0) return 2;
  for (std::uint64_t f = 3; f <= n / f; f += 2) {
    if (f >= max_trial_factor) return 0;
    if (n % f == 0) return f;
  }
  return n;
}
}  // namespace detail

/// Append an axis to a mesh under construction; computes its prime sub-axes.
/// `col` is the column reported with errors.
constexpr error mesh_add_axis(device_mesh& m, std::string_view name, std::uint64_t size, int col = -1) {
  if (m.find(name) >= 0) {
    text t("axis '");
    t.append(name).append("' is declared twice in the mesh");
    error e; e.code = errc::repeated_axis; e.column = col; e.message = t; return e;
  }
  if (size == 0) {
    text t("axis '");
    t.append(name).append("' has size 0");
    error e; e.code = errc::bad_size; e.column = col; e.message = t; return e;
  }
  if (m.naxes >= max_axes) return error::make(errc::capacity, "a mesh may have at most 16 axes", col);
  if (name.empty() || static_cast<int>(name.size()) > max_name)
    return error::make(errc::capacity, "an axis name must have 1 to 31 characters", col);
  std::uint64_t devices = 0;
  if (!detail::mul_ok(m.devices, size, devices))
    return error::make(errc::overflow, "the number of devices in the mesh does not fit in 64 bits", col);
  // Factor into primes, ascending from major to minor.
  std::uint64_t primes[64]{};
  int np = 0;
  for (std::uint64_t n = size; n > 1;) {
    std::uint64_t p = detail::smallest_prime_factor(n);
    if (p == 0) {
      text t("axis '");
      t.append(name).append("' has size ").append_uint(size).append(
          ", which cannot be split into prime sub-axes (a factor of at least 2^32 with no prime factor below 65536)");
      error e; e.code = errc::bad_size; e.column = col; e.message = t; return e;
    }
    primes[np++] = p;
    n /= p;
  }
  if (m.nsub + np > max_subaxes)
    return error::make(errc::capacity, "a mesh may have at most 64 prime sub-axes", col);
  int a = m.naxes++;
  m.names[a] = axis_name(name);
  m.sizes[a] = size;
  m.sub_begin[a] = m.nsub;
  m.sub_count[a] = np;
  std::uint64_t pre = 1;
  for (int i = 0; i < np; ++i) {
    m.sub[m.nsub++] = subaxis{static_cast<std::uint8_t>(a), pre, primes[i], 1};
    pre *= primes[i];
  }
  m.devices = devices;
  std::uint64_t stride = 1;
  for (int k = m.nsub - 1; k >= 0; --k) {
    m.sub[k].stride = stride;
    stride *= m.sub[k].size;
  }
  return {};
}

/// Mesh m with axis a's prime sub-axes in the order `primes` (n of them, major to minor,
/// their product the axis's size; ascending is mesh_add_axis's order): Shardy's sub-axes in
/// any order (`"y":(1)3` on y: 6 needs y's 3 major, core/shardy.hpp). Sub-axis ids, the
/// device map and every other axis stay as they are; only a's pieces, their `pre` and
/// strides change. Returns m unchanged where `primes` is not a factorization of the axis.
constexpr device_mesh with_subaxis_order(device_mesh m, int a, const std::uint64_t* primes, int n) {
  if (a < 0 || a >= m.naxes || n != m.sub_count[a]) return m;
  std::uint64_t product = 1;
  for (int i = 0; i < n; ++i) product *= primes[i];
  if (product != m.sizes[a]) return m;
  const int lo = m.sub_begin[a], hi = lo + n;
  const std::uint64_t axis_stride = n > 0 ? m.sub[hi - 1].stride : 1;  // the minor-most piece's
  std::uint64_t pre = 1;
  for (int i = 0; i < n; ++i) {
    m.sub[lo + i].size = primes[i];
    m.sub[lo + i].pre = pre;
    pre *= primes[i];
  }
  std::uint64_t stride = axis_stride;
  for (int k = hi - 1; k >= lo; --k) {
    m.sub[k].stride = stride;
    stride *= m.sub[k].size;
  }
  return m;
}

namespace detail {
/// One axis at the scanner, `name <sep> size` (`x: 4`, `"x"=4`, `'x': 4`), added to m; a bad
/// size is blamed on the size's column. False, with the scanner's error set, on an error.
constexpr bool mesh_axis_entry(scanner& sc, device_mesh& m, char sep) {
  sc.skip();
  const int col = sc.pos;
  std::string_view n;
  std::uint64_t size = 0;
  if (!sc.name(n) || !sc.expect(sep, sep == ':' ? "':' after the axis name" : "'=' after the axis name")) return false;
  sc.skip();
  const int scol = sc.pos;
  if (!sc.integer(size)) return false;
  error e = mesh_add_axis(m, n, size, col);
  if (e.code == errc::bad_size) e.column = scol;
  if (!e.ok()) {
    sc.err = e;
    return false;
  }
  return true;
}
}  // namespace detail

/// Parse `{x: 4, y: 8}` (names bare or quoted; JSON `{"x": 4, "y": 8}` is the same
/// grammar). An empty mesh `{}` has one device.
constexpr result<device_mesh> parse_mesh_text(std::string_view s) {
  result<device_mesh> r;
  if (r.err = detail::check_text_length(s); !r.err.ok()) return r;
  detail::scanner sc{s};
  if (sc.expect('{', "'{' to open the mesh")) {
    if (!sc.accept('}')) {
      do {
        if (!detail::mesh_axis_entry(sc, r.value, ':')) break;
      } while (sc.accept(','));
      if (!sc.failed()) sc.expect('}', "',' or '}' in the mesh");
    }
  }
  if (!sc.failed() && !sc.at_end()) sc.fail_expected("the end of the mesh");
  r.err = sc.err;
  return r;
}

/// Run-time parse; throws redist_error naming the column.
inline device_mesh parse_mesh(std::string_view s) { return parse_mesh_text(s).get(s); }

/// Write a mesh as `{x: 4, y: 8}`.
constexpr text mesh_text(const device_mesh& m) {
  text t("{");
  for (int a = 0; a < m.naxes; ++a) {
    if (a) t.append(", ");
    m.names[a].write(t);
    t.append(": ").append_uint(m.sizes[a]);
  }
  return t.append("}");
}

/// The run [b, e) of axis a's prime sub-axes that starts at `pre` and multiplies to `size`
/// (the sub-axis `x:(pre)size` of Shardy's notation); false where no run does.
constexpr bool subaxis_run(const device_mesh& m, int a, std::uint64_t pre, std::uint64_t size, int& b, int& e) {
  const int lo = m.sub_begin[a], hi = m.sub_begin[a] + m.sub_count[a];
  b = lo;
  while (b < hi && m.sub[b].pre < pre) ++b;
  e = b;
  std::uint64_t prod = 1;
  while (e < hi && prod < size) prod *= m.sub[e++].size;
  return b < hi && m.sub[b].pre == pre && prod == size && size >= 2;
}

/// Write a sub-axis: `x` when it is the whole (prime) axis, else `x:(pre)size`.
constexpr text subaxis_text(const device_mesh& m, int k) {
  const subaxis& s = m.sub[k];
  text t;
  m.names[s.axis].write(t);
  if (m.sub_count[s.axis] > 1) t.append(":(").append_uint(s.pre).append(")").append_uint(s.size);
  return t;
}

}  // namespace redist
