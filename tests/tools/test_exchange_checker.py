#!/usr/bin/env python3
"""ctest driver: the independent checker check_program.py on exchange programs (DESIGN.md
section 4, extension). It must accept the exchange the library writes (the fuzz seed
tests/fuzz/corpus/program_json/exchange.json, written by to_json from exchange_program) and
exchanges built here from random problems (every rank's box its target tile, computed by the
checker's own type parser; no partial sums), and reject corrupted ones: a box shifted or
swapped, a box outside the array, boxes of different shapes, an element nobody holds, partial
sums, a wrong cost. Needs no build: Python 3 standard library only.

Usage: test_exchange_checker.py [--seed N] [--count N]
"""

import argparse
import copy
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_program as cp  # noqa: E402
import test_plans as tp  # noqa: E402  (its random problems)


def exchange_program(mesh_text, a, b, ebytes):
    """The one-step exchange from a to b as redist-program/1 JSON, or None when a's tiles
    are b's (no step)."""
    mesh = cp.parse_mesh(mesh_text)
    src, dst = cp.parse_type(mesh, a), cp.parse_type(mesh, b)
    before, after = src.boxes(), dst.boxes()
    cost = max(cp.volume(x) - cp.volume(cp.intersect(x, y)) for x, y in zip(after, before))
    bound = max(src.local_size(), dst.local_size())
    steps = []
    if before != after:
        steps = [{"op": "exchange", "boxes": [[list(r) for r in box] for box in after], "type": b, "type_exact": True,
                  "local_elements": dst.local_size(), "cost_bytes": cost * ebytes}]
    else:
        cost = 0
    return {"format": "redist-program/1", "mesh": [[n, mesh.sizes[n]] for n in mesh.names],
            "global_shape": src.global_shape, "element_bytes": ebytes, "source": a, "target": b, "steps": steps,
            "cost_bytes": cost * ebytes, "peak_local_elements": bound, "memory_bound_elements": bound}


def rejected(prog, words):
    """'' if the checker rejects prog with a message containing `words`, else the problem."""
    try:
        cp.check(prog)
    except cp.CheckError as e:
        return "" if words in str(e) else "rejected for another reason: %s" % e
    return "accepted"


def recost(prog):
    """prog (one exchange) with its costs recomputed for its boxes, so that the boxes are
    what is wrong with it."""
    mesh = cp.Mesh([tuple(a) for a in prog["mesh"]])
    before = [(b, 0) for b in cp.parse_type(mesh, prog["source"]).boxes()]
    after = [(tuple(tuple(r) for r in b), 0) for b in prog["steps"][0]["boxes"]]
    c = cp.exchange_cost(before, after) * prog["element_bytes"]
    prog["steps"][0]["cost_bytes"] = prog["cost_bytes"] = c
    prog["steps"][0].pop("type", None)
    return prog


def corruptions(prog, rng):
    """(name, expected words in the message, corrupted program) for a one-exchange program."""
    step = prog["steps"][0]
    boxes = step["boxes"]
    shape = prog["global_shape"]
    D = len(boxes)
    r = rng.randrange(D)
    # A box shifted inside the array (by one index where its dimension has room).
    for d in range(len(shape)):
        lo, hi = boxes[r][d]
        if hi < shape[d] or lo > 0:
            c = copy.deepcopy(prog)
            c["steps"][0]["boxes"][r][d] = [lo + 1, hi + 1] if hi < shape[d] else [lo - 1, hi - 1]
            yield "shifted box", "ends with", recost(c)
            break
    # Two ranks that need different boxes given the same one.
    others = [x for x in range(D) if boxes[x] != boxes[r]]
    if others:
        c = copy.deepcopy(prog)
        c["steps"][0]["boxes"][rng.choice(others)] = copy.deepcopy(boxes[r])
        yield "copied box", "ends with", recost(c)
    # A box reaching outside the array.
    c = copy.deepcopy(prog)
    lo, hi = boxes[r][0]
    c["steps"][0]["boxes"][r][0] = [shape[0] - (hi - lo) + 1, shape[0] + 1]
    yield "box outside", "is not inside", c
    # A box of another shape (along a dimension longer than 1).
    dims = [d for d in range(len(shape)) if shape[d] > 1]
    if dims:
        d = rng.choice(dims)
        lo, hi = boxes[r][d]
        c = copy.deepcopy(prog)
        c["steps"][0]["boxes"][r][d] = [lo, hi - 1] if hi - lo > 1 else [lo, hi + 1] if hi < shape[d] else [lo - 1, hi]
        yield "other shape", "different shapes", c
    # An element nobody holds: every rank first takes rank 0's box, then the exchange.
    if any(b != boxes[0] for b in boxes):
        c = copy.deepcopy(prog)
        first = {"op": "exchange", "boxes": [copy.deepcopy(boxes[0]) for _ in boxes]}
        c["steps"].insert(0, first)
        for s in c["steps"]:
            s.pop("cost_bytes", None)
        c["cost_bytes"] = 0  # never compared: the checker fails on coverage first
        yield "uncovered", "is not covered", c
    # A wrong cost, per step and in total.
    c = copy.deepcopy(prog)
    c["steps"][0]["cost_bytes"] += prog["element_bytes"]
    yield "wrong step cost", "cost_bytes", c
    c = copy.deepcopy(prog)
    c["cost_bytes"] += prog["element_bytes"]
    yield "wrong total cost", "cost_bytes", c
    # Wrong counts and values in the JSON.
    c = copy.deepcopy(prog)
    c["steps"][0]["boxes"].pop()
    yield "a box missing", "one box per rank", c
    c = copy.deepcopy(prog)
    c["steps"][0]["boxes"][r][0][0] = -1
    yield "negative", "unsigned", c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--count", type=int, default=60, help="problems per mesh")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    failures = []

    # The library's own exchange JSON.
    seed = os.path.join(HERE, "..", "fuzz", "corpus", "program_json", "exchange.json")
    with open(seed) as f:
        lib = json.load(f)
    try:
        s = cp.check(lib)
        if s["cost_bytes"] != 24:
            failures.append("%s: cost %d, expected 24" % (seed, s["cost_bytes"]))
    except cp.CheckError as e:
        failures.append("%s: %s" % (seed, e))

    meshes = [([("a", 2), ("b", 2), ("c", 2)], 4, False), ([("x", 4), ("y", 6)], 3, True),
              ([("x", 2), ("y", 3), ("z", 2)], 3, True), ([("x", 12)], 2, True), ([("x", 5), ("y", 3)], 3, False)]
    checked, kinds = 0, {}
    for axes, rank, fancy in meshes:
        for _ in range(args.count):
            mesh, a, b = tp.random_problem(rng, axes, rank, fancy)
            what = "--mesh '%s' --from '%s' --to '%s'" % (mesh, a, b)
            prog = exchange_program(mesh, a, b, rng.choice([1, 2, 4, 8]))
            try:
                cp.check(prog)
            except cp.CheckError as e:
                failures.append("%s: the exchange was rejected: %s" % (what, e))
                continue
            checked += 1
            if not prog["steps"] or checked % 3:
                continue
            for kind, words, bad in corruptions(prog, rng):
                problem = rejected(bad, words)
                if problem:
                    failures.append("%s, %s: %s\n%s" % (what, kind, problem, json.dumps(bad)))
                else:
                    kinds[kind] = kinds.get(kind, 0) + 1

    # Partial sums: an exchange does not add them.
    prog = exchange_program("{a: 2, b: 2}", "[{a}4]", "[{b}4]", 4)
    prog["source"], prog["target"] = "[{a}4] sum{b}", "[{b}4] sum{a}"
    problem = rejected(prog, "partial sums")
    if problem:
        failures.append("partial sums: %s" % problem)

    expected = {"shifted box", "copied box", "box outside", "other shape", "uncovered", "wrong step cost",
                "wrong total cost", "a box missing", "negative"}
    if set(kinds) != expected:
        failures.append("corruption kinds not exercised: %s" % sorted(expected - set(kinds)))
    print("%d exchange programs accepted; corrupted ones rejected: %s"
          % (checked, ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
    for f in failures[:20]:
        print("FAIL " + f)
    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
