#!/usr/bin/env python3
"""Independent checker of redist collective programs (format "redist-program/1").

Written only from DESIGN.md sections 2 and 4 (it shares no code with the C++ library):
it parses the mesh and the paper-syntax types itself, computes every rank's tile as a box
of global indices, follows every step with the section 4 semantics and checks that

  * every step is well-formed: groups of equal size that partition the ranks, member
    boxes adjacent along concat_dim in member order (allgather, alltoall), tiles that
    split evenly (alltoall, dynslice), dynslice indices below `parts`, allpermute `dest`
    a bijection;
  * every rank ends with exactly its tile of the target type (default device map);
  * the largest local size along the program is <= memory_bound_elements and
    <= max(localsize(source), localsize(target)), and equals peak_local_elements;
  * cost_bytes is the sum of the Fig. 11 costs (allgather = localsize after, alltoall =
    localsize before, allpermute = localsize, dynslice = 0) times element_bytes;
  * per-step extras, when present, are right: local_elements, cost_bytes, and "type"
    (with type_exact: the boxes are exactly that type's tiles; without: the same tiles up
    to a permutation of devices).

Partial sums (the extension of sections 2 and 4): a source type `[...] sum{y}` gives every
rank the partial value numbered by its coordinates along the sum axes. Every rank's data is
tracked as (box, set of partials summed into it): allgather and alltoall only combine
blocks of equal partial sets, allreduce and reducescatter add disjoint sets, and at the end
the ranks that differ only along the target's sum axes must hold disjoint sets that together
are all the partials (without target sums: every rank holds the full sum). Their costs are
not in DESIGN.md; the checker uses the usual ring costs, allreduce = 2 x localsize,
reducescatter = localsize before. Other reductions (`max{y}`, `min{y}`, `prod{y}`, `avg{y}`, one
kind per type) are followed the same way: allreduce and reducescatter carry "reduce" (default
"sum"), which must be the source's kind, and the target's pending values, if any, keep it.

Fused collectives (an extension, docs/reference.md "Fused collectives"): an allgather or
alltoall with "concat_dims"/"concat_parts" (and, for an alltoall, "split_dims"/"split_parts")
in place of concat_dim/split_dim gathers or splits over a grid of distinct dimensions: a
member's position in its group is a mixed-radix number over the grid, the first pair the
most significant digit; member k's block (an alltoall's: its chunk at the receiver's digits
along the split grid) must sit at k's digits along the concat grid. Even programs only.

The exchange (an extension of section 4): {"op": "exchange", "boxes": [[[lo, hi], ...], ...]}
lists, for every rank in rank order, the box it holds after the step (one [lo, hi) per
dimension). The checker asks only what the data needs, not how the library plans it: every
box lies inside the array, all boxes have one shape (but on uneven types), every element of
every rank's new box is held before the step by some rank (the union of the boxes before
covers it; whichever replica sends is not checked), and every rank holds the complete sum
then (pending sums reduced before it; the target has none).

Uneven dimensions (section 2): the tile of n split into k is ceil(n / k), tile i covers
[i*t, min((i+1)*t, n)), possibly empty; the local size is the padded tile (on uneven types:
the longest box per dimension); dynslice keeps chunk index of ceil-sized chunks, allgather
concatenates adjacent boxes of any lengths, alltoall splits into ceil-sized chunks as
dynslice does and concatenates as allgather does (docs/reference.md "Uneven dimensions").
Its cost is the most elements one rank receives, max over r of |A_r| - |A_r n B_r| (A_r
the new box, B_r the box r held), checked per step and in the total.

Usage: check_program.py [--no-memory-check] FILE...   ('-' reads standard input; a FILE
ending in .jsonl holds one program per line)
As a module: check(program_dict, memory=True) returns a summary or raises CheckError.
Python 3 standard library only.
"""

import json
import math
import sys


class CheckError(Exception):
    pass


def fail(msg):
    raise CheckError(msg)


# --------------------------------------------------------------------------------------
# Meshes and types (DESIGN.md section 2)

class Mesh:
    """Named axes in declared order; ranks are row-major (last declared axis fastest)."""

    def __init__(self, axes):
        self.names = [n for n, _ in axes]
        self.sizes = dict(axes)
        if len(set(self.names)) != len(self.names):
            fail("mesh declares an axis twice: %r" % (self.names,))
        for n, s in axes:
            if not isinstance(s, int) or s < 1:
                fail("mesh axis %r has bad size %r" % (n, s))
        self.devices = math.prod(s for _, s in axes)
        # rank = sum_a i_a * prod_{b declared after a} size_b
        self.stride = {}
        acc = 1
        for n in reversed(self.names):
            self.stride[n] = acc
            acc *= self.sizes[n]

    def coord(self, axis, rank):
        return (rank // self.stride[axis]) % self.sizes[axis]


class Scanner:
    def __init__(self, s):
        self.s, self.i = s, 0

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def peek(self):
        self.ws()
        return self.s[self.i] if self.i < len(self.s) else ""

    def take(self, ch):
        if self.peek() == ch:
            self.i += 1
            return True
        return False

    def need(self, ch):
        if not self.take(ch):
            fail("expected %r at column %d of %r" % (ch, self.i + 1, self.s))

    def number(self):
        self.ws()
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        if j == self.i:
            fail("expected a number at column %d of %r" % (j + 1, self.s))
        return int(self.s[j:self.i])

    def name(self):
        self.ws()
        if self.peek() in ("'", '"'):
            q = self.s[self.i]
            j = self.s.index(q, self.i + 1)
            n = self.s[self.i + 1:j]
            self.i = j + 1
            return n
        j = self.i
        while self.i < len(self.s) and (self.s[self.i].isalnum() or self.s[self.i] == "_"):
            self.i += 1
        if j == self.i:
            fail("expected an axis name at column %d of %r" % (j + 1, self.s))
        return self.s[j:self.i]

    def end(self):
        if self.peek() != "":
            fail("trailing text at column %d of %r" % (self.i + 1, self.s))


def parse_mesh(s):
    """`{x: 4, y: 8}` or `{"x": 4}`."""
    sc = Scanner(s)
    sc.need("{")
    axes = []
    if not sc.take("}"):
        while True:
            n = sc.name()
            sc.need(":")
            axes.append((n, sc.number()))
            if sc.take("}"):
                break
            sc.need(",")
    sc.end()
    return Mesh(axes)


class AxisRef:
    """A mesh axis or a sub-axis `x:(pre)size`: the digit of size `size` of axis x's
    coordinate that has `pre` (product of the more-major digits) above it."""

    def __init__(self, mesh, name, pre=None, size=None):
        if name not in mesh.sizes:
            fail("unknown axis %r" % name)
        n = mesh.sizes[name]
        if pre is None:
            pre, size = 1, n
        if size < 1 or n % (pre * size) != 0:
            fail("sub-axis %s:(%d)%d does not fit axis %s of size %d" % (name, pre, size, name, n))
        self.name, self.pre, self.size = name, pre, size
        self.minor = n // (pre * size)  # product of the more-minor digits

    def coord(self, mesh, rank):
        return (mesh.coord(self.name, rank) // self.minor) % self.size

    def overlaps(self, o):
        return self.name == o.name and self.pre < o.pre * o.size and o.pre < self.pre * self.size


class Type:
    """dims: list of (global, [AxisRef, ...] minor-to-major); sums: pending-sum AxisRefs."""

    def __init__(self, mesh, dims, text, sums=(), reduce="sum"):
        self.mesh, self.dims, self.text, self.sums = mesh, dims, text, list(sums)
        self.reduce = reduce if self.sums else "sum"
        self.tiles = []
        for g, axes in dims:  # section 2: the tile is ceil(n / k), uneven dimensions padded
            k = math.prod(a.size for a in axes)
            self.tiles.append(-(-g // k))
        self.uneven = any(g % math.prod(a.size for a in axes) for g, axes in dims)

    @property
    def global_shape(self):
        return [g for g, _ in self.dims]

    def local_size(self):
        return math.prod(self.tiles)

    def box(self, rank):
        """The rank's tile, a tuple of (lo, hi) per dimension: base offset (Fig. 7a)
        D[[c{x, xs}n]](i) = c*i_x + D[[(c*k_x){xs}n]](i), axes minor-to-major, clipped
        to [0, n) (short or empty tiles of uneven dimensions)."""
        out = []
        for (g, axes), tile in zip(self.dims, self.tiles):
            off, step = 0, tile
            for a in axes:
                off += step * a.coord(self.mesh, rank)
                step *= a.size
            out.append((min(off, g), min(off + tile, g)))
        return tuple(out)

    def boxes(self):
        return [self.box(r) for r in range(self.mesh.devices)]

    def partial(self, rank):
        """Which partial value the rank holds: its coordinates along the sum axes."""
        return tuple(a.coord(self.mesh, rank) for a in self.sums)

    def all_partials(self):
        out = [()]
        for a in self.sums:
            out = [p + (c,) for p in out for c in range(a.size)]
        return frozenset(out)

    def summing_group(self, rank):
        """Key shared by the ranks that differ from this one only along the sum axes."""
        coords = {n: self.mesh.coord(n, rank) for n in self.mesh.names}
        for a in self.sums:
            coords[a.name] -= a.coord(self.mesh, rank) * a.minor
        return tuple(coords[n] for n in self.mesh.names)


REDUCTIONS = ("sum", "max", "min", "prod", "avg")


def parse_type(mesh, s):
    """`[64{x}256, 1024]`, `[{x, y}256, 8]`, `[2{x:(1)2}8]`: tile optional, axes
    minor-to-major, a bare size is unpartitioned."""
    sc = Scanner(s)
    sc.need("[")
    dims, used = [], []
    if not sc.take("]"):
        while True:
            tile = sc.number() if sc.peek().isdigit() else None
            if sc.take("{"):
                axes = axis_list(sc, mesh, used, s)
                g = sc.number()
                k = math.prod(a.size for a in axes)
                if tile is not None and tile != -(-g // k):
                    fail("tile %d is not ceil(%d / %d) in %r" % (tile, g, k, s))
                dims.append((g, axes))
            else:
                if tile is None:
                    fail("expected a size at column %d of %r" % (sc.i + 1, s))
                dims.append((tile, []))
            if sc.take("]"):
                break
            sc.need(",")
    sums, reduce = [], "sum"
    if sc.peek().isalpha():
        col = sc.i + 1
        reduce = sc.name()
        if reduce not in REDUCTIONS:
            fail("unknown reduction %r at column %d of %r" % (reduce, col, s))
        sc.need("{")
        sums = axis_list(sc, mesh, used, s)
    if sc.peek().isalpha():
        fail("a second reduction at column %d of %r (one kind per type)" % (sc.i + 1, s))
    sc.end()
    return Type(mesh, dims, s, sums, reduce)


def axis_list(sc, mesh, used, s):
    """`x, y:(2)2}`: axis references up to the closing brace."""
    axes = []
    if sc.take("}"):
        return axes
    while True:
        n = sc.name()
        if sc.take(":"):
            sc.need("(")
            pre = sc.number()
            sc.need(")")
            ref = AxisRef(mesh, n, pre, sc.number())
        else:
            ref = AxisRef(mesh, n)
        if any(ref.overlaps(u) for u in used):
            fail("axis %r used twice in %r" % (n, s))
        used.append(ref)
        axes.append(ref)
        if sc.take("}"):
            return axes
        sc.need(",")


# --------------------------------------------------------------------------------------
# Programs (DESIGN.md section 4)

def volume(box):
    return math.prod(hi - lo for lo, hi in box)


def box_text(box):
    return "[" + ", ".join("%d:%d" % b for b in box) + ")"


def field(obj, key, where):
    if not isinstance(obj, dict) or key not in obj:
        fail("%s: missing field %r" % (where, key))
    return obj[key]


def uint(v, where):
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        fail("%s: expected an unsigned integer, found %r" % (where, v))
    return v


def dim_index(step, key, where, rank):
    d = uint(field(step, key, where), where + "." + key)
    if d >= rank:
        fail("%s.%s: dimension %d out of range" % (where, key, d))
    return d


def check_groups(step, where, D):
    groups = field(step, "groups", where)
    if not isinstance(groups, list) or not groups or not all(isinstance(g, list) for g in groups):
        fail("%s.groups: expected a non-empty list of lists" % where)
    n = len(groups[0])
    if n == 0 or any(len(g) != n for g in groups):
        fail("%s.groups: groups of different sizes %s" % (where, sorted({len(g) for g in groups})))
    members = [uint(r, where + ".groups") for g in groups for r in g]
    if sorted(members) != list(range(D)):
        fail("%s.groups: the groups do not partition the ranks 0..%d" % (where, D - 1))
    return groups


def split(box, d, n, where, rank, ceil=False, padded=None):
    """n equal chunks along d; with ceil (dynslice, section 4 on uneven boxes) chunks of
    ceil(extent / n), the last ones short or empty; with `padded` (a reduce-scatter on
    uneven boxes) n chunks of ceil(padded / n) of the padded tile of that extent, the last
    ones short or empty, clipped to the box."""
    lo, hi = box[d]
    if padded is not None:
        c = -(-padded // n)
    else:
        if (hi - lo) % n != 0 and not ceil:
            fail("%s: rank %d's extent %d along dimension %d does not split into %d" % (where, rank, hi - lo, d, n))
        c = -(-(hi - lo) // n)
    return [box[:d] + ((min(lo + m * c, hi), min(lo + (m + 1) * c, hi)),) + box[d + 1:] for m in range(n)]


def concat(parts, d, where, who):
    """Concatenate (box, partials) blocks along d: the boxes must agree elsewhere and be
    adjacent in order, and the blocks must be the same partial sum."""
    first = parts[0][0]
    for k in range(1, len(parts)):
        (p, ps), (q, qs) = parts[k - 1], parts[k]
        if any(p[e] != q[e] for e in range(len(p)) if e != d):
            fail("%s: %s: blocks %s and %s differ outside dimension %d" % (where, who, box_text(p), box_text(q), d))
        if p[d][1] != q[d][0]:
            fail("%s: %s: blocks %s and %s are not adjacent along dimension %d" % (where, who, box_text(p), box_text(q), d))
        if ps != qs:
            fail("%s: %s: blocks %s and %s are different partial sums" % (where, who, box_text(p), box_text(q)))
    return (first[:d] + ((first[d][0], parts[-1][0][d][1]),) + first[d + 1:], parts[0][1])


def grid(step, dims_key, parts_key, where, rank):
    """A fused step's grid: [(dimension, parts)], the first the most significant digit."""
    dims, parts = field(step, dims_key, where), field(step, parts_key, where)
    if not isinstance(dims, list) or not isinstance(parts, list) or not dims or len(dims) != len(parts):
        fail("%s: %s and %s must be lists of equal, non-zero length" % (where, dims_key, parts_key))
    out = []
    for d, n in zip(dims, parts):
        d, n = uint(d, where + "." + dims_key), uint(n, where + "." + parts_key)
        if d >= rank or n < 1 or d in [e for e, _ in out]:
            fail("%s.%s: dimension %d out of range, listed twice, or in %d parts" % (where, dims_key, d, n))
        out.append((d, n))
    return out


def digits(m, g):
    """Position m as digits over the grid g, the most significant first."""
    out = []
    for _, n in reversed(g):
        out.append(m % n)
        m //= n
    return out[::-1]


def grid_chunk(box, g, m, where, rank):
    """Chunk m of a box split evenly over the grid g."""
    for (d, n), k in zip(g, digits(m, g)):
        box = split(box, d, n, where, rank)[k]
    return box


def grid_concat(parts, g, where, who):
    """(box, partials) blocks laid out over the grid g: block m at its digits along g."""
    (first, ps) = parts[0]
    for m, (b, qs) in enumerate(parts):
        want = list(first)
        for (d, _), k in zip(g, digits(m, g)):
            e = first[d][1] - first[d][0]
            want[d] = (first[d][0] + k * e, first[d][0] + (k + 1) * e)
        if tuple(want) != b:
            fail("%s: %s: block %d is %s, its place in the grid is %s" % (where, who, m, box_text(b), box_text(tuple(want))))
        if qs != ps:
            fail("%s: %s: blocks %d and 0 are different partial sums" % (where, who, m))
    whole = list(first)
    for d, n in g:
        whole[d] = (first[d][0], first[d][0] + n * (first[d][1] - first[d][0]))
    return (tuple(whole), ps)


def add(parts, where, who):
    """Element-wise sum of (box, partials) blocks: same box, disjoint partials."""
    box, total = parts[0][0], set()
    for b, ps in parts:
        if b != box:
            fail("%s: %s: summing different blocks %s and %s" % (where, who, box_text(box), box_text(b)))
        if total & ps:
            fail("%s: %s: a partial value would be added twice" % (where, who))
        total |= ps
    return (box, frozenset(total))


def intersect(a, b):
    return tuple((max(p[0], q[0]), max(max(p[0], q[0]), min(p[1], q[1]))) for p, q in zip(a, b))


def subtract(a, b):
    """The parts of box a outside box b: a list of disjoint boxes."""
    if any(q[1] <= p[0] or p[1] <= q[0] for p, q in zip(a, b)):
        return [a]
    out, rest = [], list(a)
    for d, (lo, hi) in enumerate(b):
        if rest[d][0] < lo:
            out.append(tuple(rest[:d]) + ((rest[d][0], lo),) + tuple(rest[d + 1:]))
            rest[d] = (lo, rest[d][1])
        if hi < rest[d][1]:
            out.append(tuple(rest[:d]) + ((hi, rest[d][1]),) + tuple(rest[d + 1:]))
            rest[d] = (rest[d][0], hi)
    return out


def exchange_boxes(step, state, where, D, shape, uneven, everything):
    """The boxes of an exchange step, checked: D boxes of len(shape) [lo, hi] ranges inside
    the array, one shape for all (unless the types are uneven), every element held by some
    rank before the step, every rank holding the complete sum (`everything`)."""
    boxes = field(step, "boxes", where)
    if not isinstance(boxes, list) or len(boxes) != D:
        fail("%s.boxes: expected one box per rank (%d)" % (where, D))
    out = []
    for r, b in enumerate(boxes):
        if not isinstance(b, list) or len(b) != len(shape):
            fail("%s.boxes[%d]: expected one [lo, hi] per dimension (%d)" % (where, r, len(shape)))
        box = []
        for d, rg in enumerate(b):
            w = "%s.boxes[%d][%d]" % (where, r, d)
            if not isinstance(rg, list) or len(rg) != 2:
                fail("%s: expected [lo, hi], found %r" % (w, rg))
            lo, hi = uint(rg[0], w), uint(rg[1], w)
            if not lo <= hi <= shape[d]:
                fail("%s: rank %d's range [%d, %d) is not inside [0, %d)" % (w, r, lo, hi, shape[d]))
            box.append((lo, hi))
        out.append(tuple(box))
    extents = {tuple(hi - lo for lo, hi in b) for b in out}
    if len(extents) != 1 and not uneven:
        fail("%s: the boxes have different shapes %s" % (where, sorted(extents)))
    if len({ps for _, ps in state}) != 1 or state[0][1] != everything:
        fail("%s: an exchange does not add partial sums, and the ranks hold different partials" % where)
    held = sorted({b for b, _ in state})
    for r, a in enumerate(out):
        left = [a] if volume(a) > 0 else []
        for b in held:
            left = [p for q in left for p in subtract(q, b)]
        if left:
            fail("%s: rank %d's box %s is not covered by the boxes held before the step: no rank holds %s"
                 % (where, r, box_text(a), box_text(left[0])))
    return [(out[r], state[r][1]) for r in range(D)]


def exchange_cost(before, after):
    """The most elements one rank receives: max over r of |A_r| - |A_r n B_r|."""
    return max((volume(a) - volume(intersect(a, b)) for (b, _), (a, _) in zip(before, after)), default=0)


def apply_step(step, state, where, rank, D, shape=None, uneven=False, everything=frozenset([()]), reduce=None):
    """One step of section 4 on every rank's (box, partials); an exchange needs the
    array's global `shape`, whether its types are uneven and the set of all partials."""
    op = field(step, "op", where)
    out = list(state)
    if op in ("allgather", "alltoall", "allreduce", "reducescatter"):
        groups = check_groups(step, where, D)
    if op in ("allreduce", "reducescatter"):
        kind = step.get("reduce", "sum")
        if kind not in REDUCTIONS:
            fail("%s: unknown reduction %r" % (where, kind))
        if reduce is not None and kind != reduce:
            fail("%s: reduces by %s partial values that combine by %s" % (where, kind, reduce))
    if op in ("allgather", "alltoall") and "concat_dims" in step:  # fused: grids of dimensions
        if uneven:
            fail("%s: a fused %s runs on even programs only" % (where, op))
        cg = grid(step, "concat_dims", "concat_parts", where, rank)
        sg = grid(step, "split_dims", "split_parts", where, rank) if op == "alltoall" else []
        n = len(groups[0])
        if len({d for d, _ in cg + sg}) != len(cg + sg):
            fail("%s: a dimension is in both grids" % where)
        if math.prod(p for _, p in cg) != n or (sg and math.prod(p for _, p in sg) != n):
            fail("%s: the grids' parts do not multiply to the group size %d" % (where, n))
        for g in groups:
            for m, r in enumerate(g):
                got = [(grid_chunk(state[k][0], sg, m, where, k), state[k][1]) for k in g]
                out[r] = grid_concat(got, cg, where, "member %d of group %s" % (r, g))
    elif op == "allgather":
        d = dim_index(step, "concat_dim", where, rank)
        for g in groups:
            whole = concat([state[r] for r in g], d, where, "group %s" % g)
            for r in g:
                out[r] = whole
    elif op == "alltoall" or op == "reducescatter":
        sd = dim_index(step, "split_dim", where, rank)
        cd = dim_index(step, "concat_dim", where, rank) if op == "alltoall" else None
        if cd == sd:
            fail("%s: concat_dim == split_dim" % where)
        # A reduce-scatter on uneven boxes splits the padded tile (the longest box) into
        # ceil-sized chunks.
        padded = max(b[sd][1] - b[sd][0] for b, _ in state) if uneven and op == "reducescatter" else None
        for g in groups:
            chunks = [[(b, state[r][1]) for b in split(state[r][0], sd, len(g), where, r, ceil=uneven, padded=padded)]
                      for r in g]
            for m, r in enumerate(g):
                got = [chunks[k][m] for k in range(len(g))]
                who = "member %d of group %s" % (r, g)
                out[r] = concat(got, cd, where, who) if op == "alltoall" else add(got, where, who)
    elif op == "allreduce":
        for g in groups:
            total = add([state[r] for r in g], where, "group %s" % g)
            for r in g:
                out[r] = total
    elif op == "dynslice":
        d = dim_index(step, "split_dim", where, rank)
        parts = uint(field(step, "parts", where), where + ".parts")
        index = field(step, "index", where)
        if parts < 1 or not isinstance(index, list) or len(index) != D:
            fail("%s: needs parts >= 1 and one index per rank" % where)
        for r in range(D):
            i = uint(index[r], where + ".index")
            if i >= parts:
                fail("%s: index[%d] = %d is not below parts = %d" % (where, r, i, parts))
            out[r] = (split(state[r][0], d, parts, where, r, ceil=True)[i], state[r][1])
    elif op == "exchange":
        if shape is None:
            fail("%s: an exchange needs the global shape" % where)
        out = exchange_boxes(step, state, where, D, shape, uneven, everything)
    elif op == "allpermute":
        dest = field(step, "dest", where)
        if not isinstance(dest, list) or sorted(uint(x, where + ".dest") for x in dest) != list(range(D)):
            fail("%s: dest is not a bijection of the ranks 0..%d" % (where, D - 1))
        for r in range(D):
            out[dest[r]] = state[r]
    else:
        fail("%s: unknown op %r" % (where, op))
    return out


def cost_elements(op, before, after):
    """Fig. 11, elements per device (allreduce, reducescatter: ring costs)."""
    return {"allgather": after, "alltoall": before, "allpermute": before, "dynslice": 0,
            "allreduce": 2 * before, "reducescatter": before}[op]


def local_of(state, where, uneven=False):
    """The local size: the common tile size; on uneven types (section 2) the padded tile,
    the longest box per dimension."""
    if uneven:
        return math.prod(max(hi - lo for lo, hi in dims) for dims in zip(*[b for b, _ in state]))
    sizes = {volume(b) for b, _ in state}
    if len(sizes) != 1:
        fail("%s: ranks hold tiles of different sizes %s" % (where, sorted(sizes)))
    return sizes.pop()


def check(prog, memory=True):
    """Check a program (a dict parsed from JSON); raise CheckError or return a summary."""
    if field(prog, "format", "program") != "redist-program/1":
        fail("unsupported format %r" % prog["format"])
    mesh_axes = field(prog, "mesh", "program")
    if not isinstance(mesh_axes, list) or not all(isinstance(a, list) and len(a) == 2 for a in mesh_axes):
        fail("mesh: expected [[name, size], ...]")
    mesh = Mesh([(n, s) for n, s in mesh_axes])
    D = mesh.devices
    src = parse_type(mesh, field(prog, "source", "program"))
    dst = parse_type(mesh, field(prog, "target", "program"))
    shape = field(prog, "global_shape", "program")
    if src.global_shape != shape or dst.global_shape != shape:
        fail("global_shape %s, source %s, target %s differ" % (shape, src.global_shape, dst.global_shape))
    ebytes = uint(field(prog, "element_bytes", "program"), "element_bytes")
    if src.sums and dst.sums and src.reduce != dst.reduce:
        fail("the source's partial values combine by %s, the target's by %s" % (src.reduce, dst.reduce))
    rank = len(shape)

    uneven = src.uneven or dst.uneven
    everything = src.all_partials()
    state = [(src.box(r), frozenset([src.partial(r)])) for r in range(D)]
    local = local_of(state, "source", uneven)
    peak = local
    cost = 0
    steps = field(prog, "steps", "program")
    if not isinstance(steps, list):
        fail("steps: expected a list")
    ops = [s.get("op") if isinstance(s, dict) else None for s in steps]
    if "exchange" in ops and dst.sums:
        fail("steps[%d] (exchange): an exchange in a program with partial sums" % ops.index("exchange"))
    for i, step in enumerate(steps):
        where = "steps[%d] (%s)" % (i, step.get("op") if isinstance(step, dict) else "?")
        before = state
        state = apply_step(step, state, where, rank, D, shape, uneven, everything, src.reduce if src.sums else None)
        after = local_of(state, where, uneven)
        if step["op"] == "exchange":
            c = exchange_cost(before, state)
        else:
            c = cost_elements(step["op"], local, after)
        cost += c
        local = after
        peak = max(peak, local)
        if "local_elements" in step and step["local_elements"] != local:
            fail("%s: local_elements %r, the ranks hold %d" % (where, step["local_elements"], local))
        if "cost_bytes" in step and step["cost_bytes"] != c * ebytes:
            fail("%s: cost_bytes %r, the cost model gives %d" % (where, step["cost_bytes"], c * ebytes))
        if "type" in step:
            t = parse_type(mesh, step["type"])
            want, boxes = t.boxes(), [b for b, _ in state]
            if step.get("type_exact", False):
                if want != boxes:
                    r = next(r for r in range(D) if want[r] != boxes[r])
                    fail("%s: claims exact type %s but rank %d holds %s, not %s"
                         % (where, step["type"], r, box_text(boxes[r]), box_text(want[r])))
            elif sorted(want) != sorted(boxes):
                fail("%s: the tiles are not those of %s up to a device permutation" % (where, step["type"]))

    want = dst.boxes()
    for r in range(D):
        if state[r][0] != want[r]:
            fail("rank %d ends with %s, its target tile is %s" % (r, box_text(state[r][0]), box_text(want[r])))
    # Partial sums: the ranks that differ only along the target's sum axes add up to the
    # full sum of the source's partials.
    groups = {}
    for r in range(D):
        groups.setdefault(dst.summing_group(r), []).append(r)
    for g in groups.values():
        total = add([state[r] for r in g], "the end", "ranks %s" % g)[1]
        if total != everything:
            fail("ranks %s end with %d of the %d partial values summed" % (g, len(total), len(everything)))
    if uint(field(prog, "cost_bytes", "program"), "cost_bytes") != cost * ebytes:
        fail("cost_bytes %d, the cost model gives %d" % (prog["cost_bytes"], cost * ebytes))
    if uint(field(prog, "peak_local_elements", "program"), "peak_local_elements") != peak:
        fail("peak_local_elements %d, the program peaks at %d" % (prog["peak_local_elements"], peak))
    bound = uint(field(prog, "memory_bound_elements", "program"), "memory_bound_elements")
    paper_bound = max(src.local_size(), dst.local_size())
    if memory and peak > bound:
        fail("peak local size %d exceeds memory_bound_elements %d" % (peak, bound))
    if memory and peak > paper_bound:
        fail("peak local size %d exceeds max(localsize(source), localsize(target)) = %d" % (peak, paper_bound))
    return {"steps": len(steps), "cost_bytes": cost * ebytes, "peak": peak, "bound": bound}


def main(argv):
    memory = "--no-memory-check" not in argv
    files = [a for a in argv if a != "--no-memory-check"] or ["-"]
    bad = 0
    for f in files:
        if f.endswith(".jsonl"):  # one program per line: a summary line, and each failure
            n = 0
            with open(f) as lines:
                for i, line in enumerate(lines):
                    try:
                        check(json.loads(line), memory=memory)
                        n += 1
                    except (CheckError, ValueError, KeyError, TypeError) as e:
                        print("%s:%d: FAILED: %s" % (f, i + 1, e))
                        bad += 1
            print("%s: %d programs ok, %d failed" % (f, n, bad))
            if n == 0:
                bad += 1
            continue
        try:
            prog = json.load(sys.stdin if f == "-" else open(f))
            s = check(prog, memory=memory)
            print("%s: ok (%d steps, %d bytes, peak %d, bound %d)" % (f, s["steps"], s["cost_bytes"], s["peak"], s["bound"]))
        except (CheckError, ValueError, KeyError, TypeError) as e:
            print("%s: FAILED: %s" % (f, e))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
