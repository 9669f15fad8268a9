#!/usr/bin/env python3
"""ctest driver: the independent checker check_program.py on "redist-program/2" programs
(DESIGN.md section 4, "Format 2", and section 2, "Meshes on device sets"), written by hand
here: a mesh placed on some ranks of a larger world, an exchange between two meshes, a
two-phase program (an exchange onto the target's ranks, then collectives among them), a box
layout (DTensor's nested uneven chunks) as source or target, and format 2 with format 1's
meaning. Each must be accepted with the costs worked out by hand below, and corrupted copies
refused with a message naming what is wrong. Needs no build: Python 3 standard library only.

Usage: test_format2_checker.py [-v]
"""

import copy
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_program as cp  # noqa: E402


def program(**fields):
    """A format-2 program: the given fields over element_bytes 4 and no steps."""
    prog = {"format": "redist-program/2", "element_bytes": 4, "steps": []}
    prog.update(fields)
    return prog


def rows(lo, hi, cols):
    """The box of rows [lo, hi) and every column of `cols`."""
    return [[lo, hi], [0, cols]]


# (a) {x: 2, y: 2} @ [4, 6, 5, 7] in a world of 8: positions (x, y) = (0,0), (0,1), (1,0),
# (1,1) live on ranks 4, 6, 5, 7. [4{x}8, 4{y}8] -> [8, 4{y}8] is one allgather along x, whose
# groups are world ranks: [4, 5] (y = 0) and [6, 7] (y = 1). Ranks 0..3 hold nothing throughout.
# Cost: the local size after, 8 x 4 = 32 elements, 128 bytes; peak 32 = max(16, 32).
SAME_MESH = program(
    world=8, mesh=[["x", 2], ["y", 2]], devices=[4, 6, 5, 7], global_shape=[8, 8],
    source="[4{x}8, 4{y}8]", target="[8, 4{y}8]",
    steps=[{"op": "allgather", "concat_dim": 0, "groups": [[4, 5], [6, 7]], "type": "[8, 4{y}8]",
            "type_exact": True, "local_elements": 32, "cost_bytes": 128}],
    cost_bytes=128, peak_local_elements=32, memory_bound_elements=32)

# (b) {x: 4} @ [0, 1, 2, 3] -> {y: 2} @ [4, 5] in a world of 6: [2{x}8, 4] -> [8, 4]
# (replicated on the target mesh) is one exchange; ranks 0..3 end with nothing (null).
# Cost: rank 4 (and 5) held nothing and receives the whole 8 x 4 = 32 elements, 128 bytes.
CROSS_MESH = program(
    world=6, mesh=[["x", 4]], devices=[0, 1, 2, 3], target_mesh=[["y", 2]], target_devices=[4, 5],
    global_shape=[8, 4], source="[2{x}8, 4]", target="[8, 4]",
    steps=[{"op": "exchange", "boxes": [None, None, None, None, rows(0, 8, 4), rows(0, 8, 4)],
            "type": "[8, 4]", "type_exact": True, "local_elements": 32, "cost_bytes": 128}],
    cost_bytes=128, peak_local_elements=32, memory_bound_elements=32)

# (c) The same problem in two phases: an exchange to [4{y}8, 4] on the target's ranks (each
# receives 4 x 4 = 16 elements), then an allgather inside them (32). 48 elements, 192 bytes.
TWO_PHASE = program(
    world=6, mesh=[["x", 4]], devices=[0, 1, 2, 3], target_mesh=[["y", 2]], target_devices=[4, 5],
    global_shape=[8, 4], source="[2{x}8, 4]", target="[8, 4]",
    steps=[{"op": "exchange", "boxes": [None, None, None, None, rows(0, 4, 4), rows(4, 8, 4)],
            "type": "[4{y}8, 4]", "type_exact": True, "local_elements": 16, "cost_bytes": 64},
           {"op": "allgather", "concat_dim": 0, "groups": [[4, 5]], "type": "[8, 4]", "local_elements": 32,
            "cost_bytes": 128}],
    cost_bytes=192, peak_local_elements=32, memory_bound_elements=32)

# (c2) Two phases with a permute: the exchange hands the target's ranks their tiles swapped,
# an allpermute among them puts them right; ranks 0..3 stay (dest[r] = r). [2{x}8, 4] ->
# [4{y}8, 4]: 16 + 16 elements, 128 bytes; peak 16 = max(8, 16).
TWO_PHASE_PERMUTE = program(
    world=6, mesh=[["x", 4]], devices=[0, 1, 2, 3], target_mesh=[["y", 2]], target_devices=[4, 5],
    global_shape=[8, 4], source="[2{x}8, 4]", target="[4{y}8, 4]",
    steps=[{"op": "exchange", "boxes": [None, None, None, None, rows(4, 8, 4), rows(0, 4, 4)],
            "type": "[4{y}8, 4]", "local_elements": 16, "cost_bytes": 64},
           {"op": "allpermute", "dest": [0, 1, 2, 3, 5, 4], "type": "[4{y}8, 4]", "type_exact": True,
            "local_elements": 16, "cost_bytes": 64}],
    cost_bytes=128, peak_local_elements=16, memory_bound_elements=16)

# (c3) Two phases with a dynslice: [8, 4] (replicated) on {x: 4} @ [0..3] -> [4{y}8, 4] on
# {y: 2} @ [4, 5]: the exchange copies the array to ranks 4 and 5 (32 elements), a dynslice
# keeps each one's half; the index entries of ranks 0..3 (which hold nothing) are ignored.
TWO_PHASE_SLICE = program(
    world=6, mesh=[["x", 4]], devices=[0, 1, 2, 3], target_mesh=[["y", 2]], target_devices=[4, 5],
    global_shape=[8, 4], source="[8, 4]", target="[4{y}8, 4]",
    steps=[{"op": "exchange", "boxes": [None, None, None, None, rows(0, 8, 4), rows(0, 8, 4)],
            "local_elements": 32, "cost_bytes": 128},
           {"op": "dynslice", "split_dim": 0, "parts": 2, "index": [0, 0, 0, 7, 0, 1], "type": "[4{y}8, 4]",
            "type_exact": True, "local_elements": 16, "cost_bytes": 0}],
    cost_bytes=128, peak_local_elements=32, memory_bound_elements=32)

# (d) A box-layout source: DTensor's [Shard(0), Shard(0)] of a 10 x 5 array on a 2 x 2 mesh
# chunks the rows 5, 5 along the first mesh dimension, then each 5 into 3, 2: rows [0, 3),
# [3, 5), [5, 8), [8, 10) on ranks 0..3. To [{x}10, 5] (rows [0, 5) on ranks 0, 1 and
# [5, 10) on 2, 3): one allgather along y. Local sizes are padded tiles (uneven): 3 x 5 = 15
# before, 5 x 5 = 25 after; cost 25 elements, 100 bytes.
DTENSOR_SOURCE = program(
    world=4, mesh=[["x", 2], ["y", 2]], devices=[0, 1, 2, 3], global_shape=[10, 5],
    source={"boxes": [rows(0, 3, 5), rows(3, 5, 5), rows(5, 8, 5), rows(8, 10, 5)]}, target="[{x}10, 5]",
    steps=[{"op": "allgather", "concat_dim": 0, "groups": [[0, 1], [2, 3]], "type": "[{x}10, 5]",
            "type_exact": True, "local_elements": 25, "cost_bytes": 100}],
    cost_bytes=100, peak_local_elements=25, memory_bound_elements=25)

# (d2) A box-layout target: the replicated 10 x 5 array on {x: 2, y: 2} @ [4, 6, 5, 7] in a
# world of 8 to DTensor's chunks, each on its position's rank, by an exchange that receives
# nothing (every rank keeps part of what it held). Local 50, then 15; cost 0.
DTENSOR_TARGET = program(
    world=8, mesh=[["x", 2], ["y", 2]], devices=[4, 6, 5, 7], global_shape=[10, 5], source="[10, 5]",
    target={"boxes": [None, None, None, None, rows(0, 3, 5), rows(5, 8, 5), rows(3, 5, 5), rows(8, 10, 5)]},
    steps=[{"op": "exchange",
            "boxes": [None, None, None, None, rows(0, 3, 5), rows(5, 8, 5), rows(3, 5, 5), rows(8, 10, 5)],
            "local_elements": 15, "cost_bytes": 0}],
    cost_bytes=0, peak_local_elements=50, memory_bound_elements=50)

# (g) Partial sums on a placed mesh: [4] sum{x} on {x: 2} @ [3, 1] in a world of 4: rank 3
# holds partial value 0, rank 1 partial value 1; one allreduce (ring cost 2 x 4 elements).
PLACED_SUMS = program(
    world=4, mesh=[["x", 2]], devices=[3, 1], global_shape=[4], source="[4] sum{x}", target="[4]",
    steps=[{"op": "allreduce", "groups": [[3, 1]], "local_elements": 4, "cost_bytes": 32}],
    cost_bytes=32, peak_local_elements=4, memory_bound_elements=4)

# (f) Format 2 with format 1's meaning: world = mesh size, devices 0..D-1, no target mesh
# (the library's allgather seed of the fuzz corpus, rewritten).
with open(os.path.join(HERE, "..", "fuzz", "corpus", "program_json", "allgather.json")) as _f:
    FORMAT1_ALLGATHER = json.load(_f)
with open(os.path.join(HERE, "..", "fuzz", "corpus", "program_json", "exchange.json")) as _f:
    FORMAT1_EXCHANGE = json.load(_f)
AS_FORMAT2 = dict(FORMAT1_ALLGATHER, format="redist-program/2", world=4, devices=[0, 1, 2, 3])

ACCEPTED = [
    ("(a) same mesh on world ranks", SAME_MESH, 128, 32),
    ("(b) cross-mesh exchange", CROSS_MESH, 128, 32),
    ("(c) two phases: exchange, allgather", TWO_PHASE, 192, 32),
    ("(c2) two phases: exchange, allpermute", TWO_PHASE_PERMUTE, 128, 16),
    ("(c3) two phases: exchange, dynslice", TWO_PHASE_SLICE, 128, 32),
    ("(d) DTensor box-layout source", DTENSOR_SOURCE, 100, 25),
    ("(d2) DTensor box-layout target", DTENSOR_TARGET, 0, 50),
    ("(g) partial sums on a placed mesh", PLACED_SUMS, 32, 4),
    ("(f) format 2 as format 1", AS_FORMAT2, 256, 64),
    ("(f) format 1 unchanged", FORMAT1_ALLGATHER, 256, 64),
    ("(f) format 1 exchange unchanged", FORMAT1_EXCHANGE, 24, 6),
]


def corrupt(prog, change):
    """A deep copy of prog with change(copy) applied."""
    c = copy.deepcopy(prog)
    change(c)
    return c


def setitem(path, value):
    """change(): set prog[path[0]][path[1]]... = value."""
    def change(p):
        for k in path[:-1]:
            p = p[k]
        p[path[-1]] = value
    return change


def untyped(change):
    """change(), then the steps' "type" extras dropped (so that the final state is what the
    checker refuses, not a step's claimed type)."""
    def both(p):
        change(p)
        for step in p["steps"]:
            step.pop("type", None)
    return both


def drop_rank3_first(p):
    """(b) with a first exchange in which rank 3 drops its rows [6, 8): afterwards no rank
    holds them, so the exchange to ranks 4 and 5 takes data from a rank that holds nothing."""
    p["steps"].insert(0, {"op": "exchange", "boxes": [rows(0, 2, 4), rows(2, 4, 4), rows(4, 6, 4), None, None, None]})
    p["steps"][1].pop("cost_bytes")


# (name, expected message fragment, corrupted program)
REFUSED = [
    ("(e) a group with a rank that holds nothing (mesh positions for world ranks)",
     "steps[0] (allgather).groups: rank 0 of group [0, 2] holds nothing before the step",
     corrupt(SAME_MESH, setitem(["steps", 0, "groups"], [[0, 2], [1, 3]]))),
    ("(e) a group of the target's ranks before they hold anything",
     "steps[0] (allgather).groups: rank 4 of group [4, 5] holds nothing before the step",
     corrupt(TWO_PHASE, lambda p: p["steps"].reverse())),
    ("(e) a group missing a rank that holds a tile",
     "steps[0] (allgather).groups: the groups do not partition the ranks that hold a tile [4, 5, 6, 7]",
     corrupt(SAME_MESH, setitem(["steps", 0, "groups"], [[4, 5]]))),
    ("(e) an exchange taking data from a rank that holds nothing",
     "steps[1] (exchange): rank 4's box [0:8, 0:4) is not covered by the boxes held before the step: "
     "no rank holds [6:8, 0:4)",
     corrupt(CROSS_MESH, drop_rank3_first)),
    ("(e) a dest that moves a rank that holds nothing",
     "steps[1] (allpermute): dest[0] = 1 moves rank 0, which holds nothing",
     corrupt(TWO_PHASE_PERMUTE, setitem(["steps", 1, "dest"], [1, 0, 2, 3, 5, 4]))),
    ("(e) a dest over the mesh's positions (D entries, not W)",
     "steps[1] (allpermute).dest: needs one destination per rank: 6 entries, found 2",
     corrupt(TWO_PHASE_PERMUTE, setitem(["steps", 1, "dest"], [1, 0]))),
    ("(e) a dynslice index over the mesh's positions (D entries, not W)",
     "steps[1] (dynslice).index: needs one index per rank: 6 entries, found 2",
     corrupt(TWO_PHASE_SLICE, setitem(["steps", 1, "index"], [0, 1]))),
    ("(e) exchange boxes over the target mesh's positions (D entries, not W)",
     "steps[0] (exchange).boxes: expected one box per rank (6 entries), found 2",
     corrupt(CROSS_MESH, setitem(["steps", 0, "boxes"], [rows(0, 8, 4), rows(0, 8, 4)]))),
    ("(e) a device listed twice",
     "devices[2]: rank 4 is listed twice (positions 0 and 2)",
     corrupt(SAME_MESH, setitem(["devices"], [4, 6, 4, 7]))),
    ("(e) a device outside the world",
     "devices[3]: rank 8 is not a rank of the world 0..7",
     corrupt(SAME_MESH, setitem(["devices"], [4, 6, 5, 8]))),
    ("(e) a target device outside the world",
     "target_devices[1]: rank 6 is not a rank of the world 0..5",
     corrupt(CROSS_MESH, setitem(["target_devices"], [4, 6]))),
    ("(e) devices of the wrong count",
     "devices: expected the world ranks of the mesh's 4 positions, found 3 entries",
     corrupt(SAME_MESH, setitem(["devices"], [4, 6, 5]))),
    ("(e) a rank outside the target still holding a box at the end",
     "rank 0 ends with [0:8, 0:4), but it is not a rank of the target and must hold nothing",
     corrupt(CROSS_MESH, untyped(setitem(["steps", 0, "boxes", 0], rows(0, 8, 4))))),
    ("(e) a source-mesh rank untouched by a program that never leaves the source mesh",
     "rank 0 ends with [0:2, 0:4), but it is not a rank of the target and must hold nothing",
     corrupt(CROSS_MESH, setitem(["steps"], []))),
    ("(e) a target rank ending with nothing",
     "rank 5 ends with nothing, its target tile is [0:8, 0:4)",
     corrupt(CROSS_MESH, untyped(setitem(["steps", 0, "boxes", 5], None)))),
    ("(e) a box-layout source outside the array",
     "source.boxes[3][0]: rank 3's range [8, 11) is not inside [0, 10)",
     corrupt(DTENSOR_SOURCE, setitem(["source", "boxes", 3], rows(8, 11, 5)))),
    ("(e) a box-layout target outside the array",
     "target.boxes[7][1]: rank 7's range [0, 6) is not inside [0, 5)",
     corrupt(DTENSOR_TARGET, setitem(["target", "boxes", 7], rows(8, 10, 6)))),
    ("(e) a box layout over the mesh's positions (D entries, not W)",
     "target.boxes: expected one box or null per world rank (8 entries), found 4",
     corrupt(DTENSOR_TARGET, setitem(["target", "boxes"], [rows(0, 3, 5), rows(5, 8, 5), rows(3, 5, 5),
                                                           rows(8, 10, 5)]))),
    ("(e) a box-layout source short of row 9",
     "rank 2 ends with [5:9, 0:5), its target tile is [5:10, 0:5)",
     corrupt(DTENSOR_SOURCE, untyped(setitem(["source", "boxes", 3], rows(8, 9, 5))))),
    ("(e) a target mesh of another size without target_devices",
     "missing field 'target_devices'",
     corrupt(CROSS_MESH, lambda p: p.pop("target_devices"))),
    ("(e) a format-1 exchange with a null box (format 1 unchanged)",
     "steps[0] (exchange).boxes[4]: expected one [lo, hi] per dimension (2)",
     corrupt(FORMAT1_EXCHANGE, setitem(["steps", 0, "boxes", 4], None))),
    ("(e) partial sums never added on the placed mesh",
     "ranks [3] end with 1 of the 2 partial values summed",
     corrupt(PLACED_SUMS, setitem(["steps"], []))),
    ("(e) a wrong total cost",
     "cost_bytes 196, the cost model gives 192",
     corrupt(TWO_PHASE, setitem(["cost_bytes"], 196))),
]


def main():
    verbose = "-v" in sys.argv[1:]
    failures = []
    for name, prog, cost, peak in ACCEPTED:
        try:
            s = cp.check(prog)
            if (s["cost_bytes"], s["peak"]) != (cost, peak):
                failures.append("%s: cost %d bytes, peak %d; expected %d, %d" % (name, s["cost_bytes"], s["peak"],
                                                                               cost, peak))
            elif verbose:
                print("ok   %s" % name)
        except cp.CheckError as e:
            failures.append("%s: refused: %s" % (name, e))
    for name, words, prog in REFUSED:
        try:
            cp.check(prog)
            failures.append("%s: accepted\n%s" % (name, json.dumps(prog)))
        except cp.CheckError as e:
            if words not in str(e):
                failures.append("%s: refused for another reason: %s (expected %r)" % (name, e, words))
            elif verbose:
                print("ok   %s: %s" % (name, e))
    print("format 2: %d programs accepted, %d corrupted ones refused" % (len(ACCEPTED), len(REFUSED)))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
