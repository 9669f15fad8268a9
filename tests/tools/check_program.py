#!/usr/bin/env python3
"""Independent checker of redist collective programs (formats "redist-program/1" and
"redist-program/2").

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
then (pending sums reduced before it; the target's, if any, are created after the last one).

Creating pending values (an extension): {"op": "partial", "groups": [[...], ...], "reduce":
kind} is local: in every group (whose members hold the same block and partials) the first
member keeps its value and the others hold the reduction's identity (sum, prod) or the value
again (max, min, avg): either way the group's reduction is the value (tracked as the first
member's partials, the others none). With "concat_dim" (padded, not avg) every member ends
with the group's blocks concatenated as an allgather's would be, its own block in place and
the identity around it, so the group's reduction is the concatenation (tracked the same way). Its kind is the target's; values pending by another
kind than the source's are created only once every rank holds the complete value.

Uneven dimensions (section 2): the tile of n split into k is ceil(n / k), tile i covers
[i*t, min((i+1)*t, n)), possibly empty; the local size is the padded tile (on uneven types:
the longest box per dimension); dynslice keeps chunk index of ceil-sized chunks, allgather
concatenates adjacent boxes of any lengths, alltoall splits into ceil-sized chunks as
dynslice does and concatenates as allgather does (docs/reference.md "Uneven dimensions").
Its cost is the most elements one rank receives, max over r of |A_r| - |A_r n B_r| (A_r
the new box, B_r the box r held), checked per step and in the total.

Format 2 (DESIGN.md section 4 "Format 2", section 2 "Meshes on device sets"): "world": W
ranks; the source type lives on "mesh" placed on the world ranks "devices" (row-major,
default 0..D-1), the target on "target_mesh" placed on "target_devices" (both default to the
source's); "source" / "target" may instead be a box layout {"boxes": [box or null per world
rank]} (boxes inside the array; local sizes are padded tiles, as on uneven types). Every
rank's state is its box or None (holds nothing): before the first step the rank at source
position p holds the source's tile p, the others nothing. Every rank in a step is a world
rank and per-rank lists (index, dest, boxes) have W entries; a collective's groups partition
exactly the ranks that hold a tile; dynslice leaves the others alone (their index ignored);
allpermute must keep them in place (dest[r] == r); an exchange may give a rank null, and its
boxes are covered by what the ranks holding a tile hold before it. At the end each world rank
holds exactly its box of the target: the target type's tile at its position on the target
mesh, nothing off it. Local sizes, costs and the memory bound count only the ranks that hold
a tile (an exchange: a rank that held nothing receives its whole box). A step's "type" extra
is checked on whichever mesh (source's or target's) is placed on exactly the ranks holding
tiles. Format 2 with world = D, devices 0..D-1 and no target mesh means what format 1 means.

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


def check_groups(step, where, D, holders=None):
    """A collective's groups: equal sizes, partitioning the ranks 0..D-1 (format 1) or, in
    format 2 (`holders`: the world ranks that hold a tile before the step), exactly the
    ranks that hold a tile."""
    groups = field(step, "groups", where)
    if not isinstance(groups, list) or not groups or not all(isinstance(g, list) for g in groups):
        fail("%s.groups: expected a non-empty list of lists" % where)
    n = len(groups[0])
    if n == 0 or any(len(g) != n for g in groups):
        fail("%s.groups: groups of different sizes %s" % (where, sorted({len(g) for g in groups})))
    members = [uint(r, where + ".groups") for g in groups for r in g]
    if holders is not None:
        have = set(holders)
        for g in groups:
            for r in g:
                if r >= D:
                    fail("%s.groups: rank %d of group %s is not a rank of the world 0..%d" % (where, r, g, D - 1))
                if r not in have:
                    fail("%s.groups: rank %d of group %s holds nothing before the step (a group lists only ranks "
                         "that hold a tile)" % (where, r, g))
        if sorted(members) != sorted(holders):
            fail("%s.groups: the groups do not partition the ranks that hold a tile %s" % (where, sorted(holders)))
        return groups
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


def parse_box(b, shape, where, r, null=False):
    """One rank's box, [[lo, hi], ...] with one range per dimension inside the array, as a
    tuple of (lo, hi); with `null` (format 2) JSON null is None, the rank holds nothing."""
    if b is None and null:
        return None
    if not isinstance(b, list) or len(b) != len(shape):
        fail("%s[%d]: expected one [lo, hi] per dimension (%d)%s" % (where, r, len(shape), " or null" if null else ""))
    box = []
    for d, rg in enumerate(b):
        w = "%s[%d][%d]" % (where, r, d)
        if not isinstance(rg, list) or len(rg) != 2:
            fail("%s: expected [lo, hi], found %r" % (w, rg))
        lo, hi = uint(rg[0], w), uint(rg[1], w)
        if not lo <= hi <= shape[d]:
            fail("%s: rank %d's range [%d, %d) is not inside [0, %d)" % (w, r, lo, hi, shape[d]))
        box.append((lo, hi))
    return tuple(box)


def covered(a, held):
    """The parts of box a outside every box of `held` (empty: the union covers a)."""
    left = [a] if volume(a) > 0 else []
    for b in held:
        left = [p for q in left for p in subtract(q, b)]
    return left


def exchange_boxes(step, state, where, D, shape, uneven, everything, world=False):
    """The boxes of an exchange step, checked: D boxes of len(shape) [lo, hi] ranges inside
    the array, one shape for all (unless the types are uneven), every element held by some
    rank before the step, every rank holding the complete sum (`everything`). In format 2
    (`world`) a box may be null (the rank holds nothing after the step), and only the ranks
    that hold a tile before the step (state not None) can give data."""
    boxes = field(step, "boxes", where)
    if not isinstance(boxes, list) or len(boxes) != D:
        fail("%s.boxes: expected one box per rank (%d entries), found %s"
             % (where, D, len(boxes) if isinstance(boxes, list) else "no list"))
    out = [parse_box(b, shape, where + ".boxes", r, null=world) for r, b in enumerate(boxes)]
    extents = {tuple(hi - lo for lo, hi in b) for b in out if b is not None}
    if len(extents) > 1 and not uneven:
        fail("%s: the boxes have different shapes %s" % (where, sorted(extents)))
    partials = {x[1] for x in state if x is not None}
    if partials and (len(partials) != 1 or partials.pop() != everything):
        fail("%s: an exchange does not add partial sums, and the ranks hold different partials" % where)
    held = sorted({x[0] for x in state if x is not None})
    for r, a in enumerate(out):
        if a is None:
            continue
        left = covered(a, held)
        if left:
            fail("%s: rank %d's box %s is not covered by the boxes held before the step: no rank holds %s"
                 % (where, r, box_text(a), box_text(left[0])))
    return [None if out[r] is None else (out[r], everything) for r in range(D)]


def exchange_cost(before, after):
    """The most elements one rank receives: max over r of |A_r| - |A_r n B_r| (format 2: a
    rank that holds nothing after receives nothing, one that held nothing receives A_r)."""
    def got(b, a):
        if a is None:
            return 0
        return volume(a[0]) - (0 if b is None else volume(intersect(a[0], b[0])))
    return max((got(b, a) for b, a in zip(before, after)), default=0)


def apply_step(step, state, where, rank, D, shape=None, uneven=False, everything=frozenset([()]), reduce=None,
               world=False):
    """One step of section 4 on every rank's (box, partials); an exchange needs the
    array's global `shape`, whether its types are uneven and the set of all partials.

    With `world` (format 2) D is the world's size W and a rank that holds nothing has state
    None: groups list only ranks that hold a tile, dynslice leaves the others alone (their
    index is ignored), allpermute must keep them in place (dest[r] == r), and an exchange
    may leave a rank with nothing (a null box)."""
    op = field(step, "op", where)
    if len(state) != D:
        fail("%s: %d ranks' states for %d ranks" % (where, len(state), D))
    out = list(state)
    holders = [r for r in range(D) if state[r] is not None] if world else None
    if op in ("allgather", "alltoall", "allreduce", "reducescatter"):
        groups = check_groups(step, where, D, holders)
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
        padded = (max(x[0][sd][1] - x[0][sd][0] for x in state if x is not None)
                  if uneven and op == "reducescatter" else None)
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
        if parts < 1:
            fail("%s: needs parts >= 1" % where)
        if not isinstance(index, list) or len(index) != D:
            fail("%s.index: needs one index per rank: %d entries, found %s"
                 % (where, D, len(index) if isinstance(index, list) else "no list"))
        for r in range(D):
            i = uint(index[r], where + ".index")
            if state[r] is None:  # format 2: a rank holding nothing keeps nothing
                continue
            if i >= parts:
                fail("%s: index[%d] = %d is not below parts = %d" % (where, r, i, parts))
            out[r] = (split(state[r][0], d, parts, where, r, ceil=True)[i], state[r][1])
    elif op == "partial":  # local: a group's first member keeps its value, the others hold the identity
        groups = check_groups(step, where, D, holders)
        kind = step.get("reduce", "sum")
        if kind not in REDUCTIONS:
            fail("%s: unknown reduction %r" % (where, kind))
        if "concat_dim" in step:  # padded: every member's block inside the group's concatenation
            if kind == "avg":
                fail("%s: avg pads no tiles" % where)
            d = dim_index(step, "concat_dim", where, rank)
            for g in groups:
                whole = concat([state[r] for r in g], d, where, "group %s" % g)
                out[g[0]] = whole
                for r in g[1:]:
                    out[r] = (whole[0], frozenset())
            return out
        for g in groups:
            for r in g[1:]:
                if state[r] != state[g[0]]:
                    fail("%s: ranks %d and %d of group %s hold different blocks or partial values"
                         % (where, g[0], r, g))
                out[r] = (state[r][0], frozenset())
    elif op == "exchange":
        if shape is None:
            fail("%s: an exchange needs the global shape" % where)
        out = exchange_boxes(step, state, where, D, shape, uneven, everything, world)
    elif op == "allpermute":
        dest = field(step, "dest", where)
        if world and (not isinstance(dest, list) or len(dest) != D):
            fail("%s.dest: needs one destination per rank: %d entries, found %s"
                 % (where, D, len(dest) if isinstance(dest, list) else "no list"))
        if not isinstance(dest, list) or sorted(uint(x, where + ".dest") for x in dest) != list(range(D)):
            fail("%s: dest is not a bijection of the ranks 0..%d" % (where, D - 1))
        for r in range(D):
            if state[r] is None and dest[r] != r:
                fail("%s: dest[%d] = %d moves rank %d, which holds nothing (dest[r] must be r for it)"
                     % (where, r, dest[r], r))
            out[dest[r]] = state[r]
    else:
        fail("%s: unknown op %r" % (where, op))
    return out


def cost_elements(op, before, after):
    """Fig. 11, elements per device (allreduce, reducescatter: ring costs)."""
    return {"allgather": after, "alltoall": before, "allpermute": before, "dynslice": 0,
            "allreduce": 2 * before, "reducescatter": before, "partial": 0}[op]


def local_of(state, where, uneven=False):
    """The local size: the common tile size; on uneven types (section 2) the padded tile,
    the longest box per dimension. Only the ranks that hold a tile count (format 2)."""
    state = [x for x in state if x is not None]
    if not state:
        return 0
    if uneven:
        return math.prod(max(hi - lo for lo, hi in dims) for dims in zip(*[b for b, _ in state]))
    sizes = {volume(b) for b, _ in state}
    if len(sizes) != 1:
        fail("%s: ranks hold tiles of different sizes %s" % (where, sorted(sizes)))
    return sizes.pop()


FORMAT1, FORMAT2 = "redist-program/1", "redist-program/2"


def mesh_field(prog, key):
    """A mesh as JSON, [[name, size], ...]."""
    axes = field(prog, key, "program")
    if not isinstance(axes, list) or not all(isinstance(a, list) and len(a) == 2 for a in axes):
        fail("%s: expected [[name, size], ...]" % key)
    return Mesh([(n, s) for n, s in axes])


def devices_field(prog, key, mesh, W, default):
    """Format 2: the world rank of each position of `mesh`, row-major (`key` in prog, else
    `default`; None: the field is required): D distinct ranks below W."""
    devs = prog.get(key, default)
    if devs is None:
        fail("program: missing field %r (the target mesh has %d positions, the source's devices do not fit it)"
             % (key, mesh.devices))
    if not isinstance(devs, list) or len(devs) != mesh.devices:
        fail("%s: expected the world ranks of the mesh's %d positions, found %s"
             % (key, mesh.devices, "%d entries" % len(devs) if isinstance(devs, list) else repr(devs)))
    seen = {}
    for p, r in enumerate(devs):
        uint(r, "%s[%d]" % (key, p))
        if r >= W:
            fail("%s[%d]: rank %d is not a rank of the world 0..%d (world %d)" % (key, p, r, W - 1, W))
        if r in seen:
            fail("%s[%d]: rank %d is listed twice (positions %d and %d)" % (key, p, r, seen[r], p))
        seen[r] = p
    return list(devs)


class Layout:
    """A program's source or target as every world rank's box (None: holds nothing) and
    partial values: a type on `mesh` whose position p lives on world rank devices[p], or
    (format 2) a box layout {"boxes": [box or null per world rank]}."""

    def __init__(self, spec, key, mesh, devices, W, shape, fmt2):
        self.type, self.mesh, self.devices = None, mesh, devices
        self.boxes, self.partials = [None] * W, [None] * W
        if isinstance(spec, str) or not fmt2:
            t = parse_type(mesh, spec)
            if fmt2 and t.global_shape != shape:
                fail("%s %r has the global shape %s, global_shape is %s" % (key, spec, t.global_shape, shape))
            self.type = t
            for p, r in enumerate(devices):
                self.boxes[r], self.partials[r] = t.box(p), frozenset([t.partial(p)])
            self.uneven, self.local = t.uneven, t.local_size()
            self.sums, self.reduce, self.everything = t.sums, t.reduce, t.all_partials()
            self.global_shape = t.global_shape
            return
        if not isinstance(spec, dict) or "boxes" not in spec:
            fail('%s: expected a type string or {"boxes": [box or null per world rank]}, found %r' % (key, spec))
        boxes = spec["boxes"]
        if not isinstance(boxes, list) or len(boxes) != W:
            fail("%s.boxes: expected one box or null per world rank (%d entries), found %s"
                 % (key, W, "%d" % len(boxes) if isinstance(boxes, list) else "no list"))
        self.boxes = [parse_box(b, shape, key + ".boxes", r, null=True) for r, b in enumerate(boxes)]
        if all(b is None for b in self.boxes):
            fail("%s.boxes: no rank holds a box" % key)
        self.partials = [None if b is None else frozenset([()]) for b in self.boxes]
        self.uneven = True  # boxes of any lengths: the local size is the padded tile
        self.local = local_of([(b, None) for b in self.boxes if b is not None], key, uneven=True)
        self.sums, self.reduce, self.everything = [], "sum", frozenset([()])
        self.global_shape = list(shape)

    def state(self):
        return [None if b is None else (b, ps) for b, ps in zip(self.boxes, self.partials)]

    def summing_groups(self):
        """The world ranks whose values add up to the array: the ranks that differ only
        along the sum axes (without sums: each holder alone)."""
        if self.type is None:
            return [[r] for r, b in enumerate(self.boxes) if b is not None]
        groups = {}
        for p, r in enumerate(self.devices):
            groups.setdefault(self.type.summing_group(p), []).append(r)
        return list(groups.values())


def holding_text(x):
    return "nothing" if x is None else box_text(x)


def check_step_type(step, state, where, placements):
    """A step's "type" extra: its tiles on one of the placements (mesh, devices) whose
    devices are exactly the ranks that hold a tile (format 2: the source's or the target's);
    with type_exact, exactly; without, up to a permutation of devices."""
    holders = sorted(r for r in range(len(state)) if state[r] is not None)
    candidates = [(m, d) for m, d in placements if sorted(d) == holders]
    problem = None
    for mesh, devices in candidates:
        try:
            t = parse_type(mesh, step["type"])
        except CheckError as e:
            if len(candidates) == 1:
                raise
            problem = problem or "%s: type %s: %s" % (where, step["type"], e)
            continue
        want = [None] * len(state)
        for p, r in enumerate(devices):
            want[r] = t.box(p)
        boxes = [None if x is None else x[0] for x in state]
        if step.get("type_exact", False):
            if want == boxes:
                return
            r = next(r for r in range(len(state)) if want[r] != boxes[r])
            problem = problem or ("%s: claims exact type %s but rank %d holds %s, not %s"
                                  % (where, step["type"], r, holding_text(boxes[r]), holding_text(want[r])))
        elif sorted(b for b in want if b is not None) == sorted(b for b in boxes if b is not None):
            return
        else:
            problem = problem or "%s: the tiles are not those of %s up to a device permutation" % (where, step["type"])
    fail(problem or "%s: claims type %s, but the ranks holding tiles %s are not those of a mesh of the program"
         % (where, step["type"], holders))


def check(prog, memory=True):
    """Check a program (a dict parsed from JSON); raise CheckError or return a summary.

    Format 1: the source and the target on the mesh, ranks 0..D-1. Format 2 (DESIGN.md
    section 4, "Meshes on device sets"): a world of W ranks; the source on "mesh" placed on
    the world ranks "devices", the target on "target_mesh" placed on "target_devices" (both
    default to the source's); either may be a box layout {"boxes": [...]}; the ranks
    outside the source (target) hold nothing before (after)."""
    fmt = field(prog, "format", "program")
    if fmt not in (FORMAT1, FORMAT2):
        fail("unsupported format %r" % fmt)
    fmt2 = fmt == FORMAT2
    mesh = mesh_field(prog, "mesh")
    D = mesh.devices
    shape = field(prog, "global_shape", "program")
    if fmt2:
        if not isinstance(shape, list):
            fail("global_shape: expected a list of sizes")
        for d, n in enumerate(shape):
            uint(n, "global_shape[%d]" % d)
        W = uint(field(prog, "world", "program"), "world")
        if W < 1:
            fail("world: a world of no ranks")
        devices = devices_field(prog, "devices", mesh, W, list(range(D)))
        tmesh = mesh_field(prog, "target_mesh") if "target_mesh" in prog else mesh
        tdevices = devices_field(prog, "target_devices", tmesh, W, devices if tmesh.devices == D else None)
    else:
        W, devices, tmesh, tdevices = D, list(range(D)), mesh, list(range(D))
    src = Layout(field(prog, "source", "program"), "source", mesh, devices, W, shape, fmt2)
    dst = Layout(field(prog, "target", "program"), "target", tmesh, tdevices, W, shape, fmt2)
    if src.global_shape != shape or dst.global_shape != shape:
        fail("global_shape %s, source %s, target %s differ" % (shape, src.global_shape, dst.global_shape))
    ebytes = uint(field(prog, "element_bytes", "program"), "element_bytes")
    rank = len(shape)

    uneven = src.uneven or dst.uneven
    everything = src.everything
    state = src.state()
    local = local_of(state, "source", uneven)
    peak = local
    cost = 0
    steps = field(prog, "steps", "program")
    if not isinstance(steps, list):
        fail("steps: expected a list")
    ops = [s.get("op") if isinstance(s, dict) else None for s in steps]
    # Pending values of another kind than the source's: the source's are all reduced before
    # the target's are created (partial steps, checked below).
    if src.sums and dst.sums and src.reduce != dst.reduce and "partial" not in ops:
        fail("the source's partial values combine by %s, the target's by %s" % (src.reduce, dst.reduce))
    last_exchange = max((i for i, op in enumerate(ops) if op == "exchange"), default=None)
    if last_exchange is not None and dst.sums and "partial" not in ops[last_exchange:]:
        fail("steps[%d] (exchange): an exchange in a program with partial sums" % ops.index("exchange"))
    placements = [(tmesh, tdevices), (mesh, devices)] if fmt2 else [(mesh, devices)]
    created = False  # a partial step ran
    for i, step in enumerate(steps):
        where = "steps[%d] (%s)" % (i, step.get("op") if isinstance(step, dict) else "?")
        before = state
        if isinstance(step, dict) and step.get("op") == "partial":
            if not dst.sums or step.get("reduce", "sum") != dst.reduce:
                fail("%s: creates values pending by %s, the target's %s" % (
                    where, step.get("reduce", "sum"), "combine by " + dst.reduce if dst.sums else "are whole"))
            if (src.sums and src.reduce != dst.reduce and not created
                    and any(x is not None and x[1] != everything for x in state)):
                fail("%s: creates values pending by %s while ranks hold values pending by %s"
                     % (where, dst.reduce, src.reduce))
            created = True
        state = apply_step(step, state, where, rank, W, shape, uneven, everything, src.reduce if src.sums else None,
                           world=fmt2)
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
            check_step_type(step, state, where, placements)

    for r in range(W):
        got, want = None if state[r] is None else state[r][0], dst.boxes[r]
        if got == want:
            continue
        if want is None:
            fail("rank %d ends with %s, but it is not a rank of the target and must hold nothing" % (r, box_text(got)))
        if got is None:
            fail("rank %d ends with nothing, its target tile is %s" % (r, box_text(want)))
        fail("rank %d ends with %s, its target tile is %s" % (r, box_text(got), box_text(want)))
    # Partial sums: the ranks that differ only along the target's sum axes add up to the
    # full sum of the source's partials.
    for g in dst.summing_groups():
        total = add([state[r] for r in g], "the end", "ranks %s" % g)[1]
        if total != everything:
            fail("ranks %s end with %d of the %d partial values summed" % (g, len(total), len(everything)))
    if uint(field(prog, "cost_bytes", "program"), "cost_bytes") != cost * ebytes:
        fail("cost_bytes %d, the cost model gives %d" % (prog["cost_bytes"], cost * ebytes))
    if uint(field(prog, "peak_local_elements", "program"), "peak_local_elements") != peak:
        fail("peak_local_elements %d, the program peaks at %d" % (prog["peak_local_elements"], peak))
    bound = uint(field(prog, "memory_bound_elements", "program"), "memory_bound_elements")
    paper_bound = max(src.local, dst.local)
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
