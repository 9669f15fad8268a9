#!/usr/bin/env python3
"""ctest driver: `redist plan --json` on seeded random problems, every program verified by
the independent checker check_program.py; the checker itself must reject corrupted
programs.

Problems: the paper's workload (seed 000 Sec. 8: mesh {a: 2, b: 2, c: 2}, 1-6 dimensions,
each mesh axis replicating the data or partitioning one dimension, in random order within
the dimension, source and target drawn independently), plus meshes with composite axes
({x: 4, y: 6}, {x: 2, y: 3, z: 2}) where types also use sub-axes `x:(pre)size`, quoted
names and inferred tiles, and sources with pending partial sums (`sum{...}`). Every problem is checked at the default budget (memory bound
enforced); some also with --objective bytes and --budget 2 (cost never higher), --baseline naive (correct,
but above the bound) and --baseline xla (correct).

Usage: test_plans.py --redist build/tools/redist [--seed N] [--count N]
"""

import argparse
import copy
import json
import math
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_program as cp  # noqa: E402


def primes_of(n):
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def units_of(rng, axes, subaxes):
    """Mesh axes, or (sometimes) their prime sub-axes x:(pre)p, as (name, suffix, size)."""
    out = []
    for name, size in axes:
        ps = primes_of(size)
        if subaxes and len(ps) > 1 and rng.random() < 0.4:
            pre = 1
            for p in ps:
                out.append((name, ":(%d)%d" % (pre, p), p))
                pre *= p
        else:
            out.append((name, "", size))
    return out


def assign(rng, units, rank):
    """Each unit replicates (skipped) or partitions one dimension; random order."""
    dims = [[] for _ in range(rank)]
    order = list(range(len(units)))
    rng.shuffle(order)
    for u in order:
        d = rng.randrange(rank + 1) - 1
        if d >= 0:
            dims[d].append(u)
    return dims


def write_type(rng, units, dims, shape, fancy):
    """Paper syntax; with `fancy`, some names quoted and some tiles left out."""
    out = []
    for d, us in enumerate(dims):
        if not us:
            out.append(str(shape[d]))
            continue
        k = math.prod(units[u][2] for u in us)
        names = []
        for u in us:
            name, suffix, _ = units[u]
            names.append(('"%s"' % name if fancy and rng.random() < 0.2 else name) + suffix)
        tile = "" if fancy and rng.random() < 0.25 else str(shape[d] // k)
        out.append("%s{%s}%d" % (tile, ", ".join(names), shape[d]))
    return "[" + ", ".join(out) + "]"


def random_problem(rng, axes, max_rank, fancy, sums=False):
    """With `sums`, each mesh axis the source leaves unused becomes a pending-sum axis with
    probability 1/2, and the target keeps some of those it does not use."""
    rank = rng.randint(1, max_rank)
    su, tu = units_of(rng, axes, fancy), units_of(rng, axes, fancy)
    sd, td = assign(rng, su, rank), assign(rng, tu, rank)
    ssum, tsum = [], []
    if sums:
        su = [(n, "", size) for n, size in axes]  # whole axes, so that both types agree on names
        tu = list(su)
        sd, td = assign(rng, su, rank), assign(rng, tu, rank)
        sused = {u for d in sd for u in d}
        tused = {u for d in td for u in d}
        for u in range(len(su)):
            if u not in sused and rng.random() < 0.5:
                ssum.append(su[u][0])
                if u not in tused and rng.random() < 0.5:
                    tsum.append(su[u][0])
    shape = []
    for d in range(rank):
        ks = math.prod(su[u][2] for u in sd[d])
        kt = math.prod(tu[u][2] for u in td[d])
        need = ks * kt // math.gcd(ks, kt)
        shape.append(need * rng.choice([1, 1, 2, 3]) * 2 ** rng.randint(0, max(1, 20 // rank)))
    mesh = "{" + ", ".join("%s: %d" % a for a in axes) + "}"
    a, b = write_type(rng, su, sd, shape, fancy), write_type(rng, tu, td, shape, fancy)
    if ssum:
        a += " sum{%s}" % ", ".join(ssum)
    if tsum:
        b += " sum{%s}" % ", ".join(tsum)
    return mesh, a, b


class Runner:
    def __init__(self, redist):
        self.redist = redist
        self.calls = 0

    def plan(self, mesh, a, b, *extra):
        self.calls += 1
        cmd = [self.redist, "plan", "--mesh", mesh, "--from", a, "--to", b, "--json", *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise cp.CheckError("%s exited %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
        return json.loads(r.stdout)


def state_before(prog, i):
    """Every rank's (box, partials) before step i (replaying the checker's semantics)."""
    mesh = cp.Mesh([tuple(a) for a in prog["mesh"]])
    src = cp.parse_type(mesh, prog["source"])
    state = [(src.box(r), frozenset([src.partial(r)])) for r in range(mesh.devices)]
    for k in range(i):
        state = cp.apply_step(prog["steps"][k], state, "steps[%d]" % k, len(prog["global_shape"]), mesh.devices,
                              prog["global_shape"])
    return state


def corruptions(prog, rng):
    """Yield (description, corrupted program), each changing what some rank holds."""
    steps = prog["steps"]
    for i, s in enumerate(steps):
        state = state_before(prog, i)
        if s["op"] == "allpermute":
            pairs = [(x, y) for x in range(len(state)) for y in range(x) if state[x] != state[y]]
            if pairs:
                x, y = rng.choice(pairs)
                c = copy.deepcopy(prog)
                d = c["steps"][i]["dest"]
                d[x], d[y] = d[y], d[x]
                yield "swapped dest", c
        if s["op"] in ("allreduce", "reducescatter"):  # another reduction than the source's
            c = copy.deepcopy(prog)
            c["steps"][i]["reduce"] = "min" if s.get("reduce", "sum") != "min" else "max"
            yield "changed reduction", c
        if s["op"] in ("allgather", "alltoall", "allreduce", "reducescatter"):
            if s["op"] != "allreduce":  # a sum does not depend on the members' order
                g = rng.randrange(len(s["groups"]))
                c = copy.deepcopy(prog)
                grp = c["steps"][i]["groups"][g]
                grp[0], grp[-1] = grp[-1], grp[0]
                yield "swapped group members", c
            if len(s["groups"]) > 1:
                c = copy.deepcopy(prog)
                gs = c["steps"][i]["groups"]
                gs[0].append(gs[1].pop())
                yield "unequal group sizes", c
        if "concat_dims" in s and len(s["concat_dims"]) > 1:  # a fused step's grid in another order
            c = copy.deepcopy(prog)
            st = c["steps"][i]
            st["concat_dims"].reverse()
            st["concat_parts"].reverse()
            yield "reordered fused grid", c
        if s["op"] == "exchange" and len(s["boxes"]) > 1:  # two ranks swap boxes (or one is copied)
            c = copy.deepcopy(prog)
            b = c["steps"][i]["boxes"]
            x, y = rng.sample(range(len(b)), 2)
            if b[x] != b[y]:
                b[x], b[y] = b[y], b[x]
                yield "swapped exchange boxes", c
        if s["op"] == "dynslice" and s["parts"] > 1:
            c = copy.deepcopy(prog)
            r = rng.randrange(len(s["index"]))
            c["steps"][i]["index"][r] = (s["index"][r] + 1) % s["parts"]
            yield "changed dynslice index", c
    if steps:
        c = copy.deepcopy(prog)
        del c["steps"][rng.randrange(len(steps))]
        yield "dropped step", c
        c = copy.deepcopy(prog)
        c["cost_bytes"] += c["element_bytes"]
        yield "wrong cost", c
        c = copy.deepcopy(prog)
        c["memory_bound_elements"] = c["peak_local_elements"] - 1
        yield "bound below peak", c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redist", required=True)
    ap.add_argument("--seed", type=int, default=20240601)
    # REDIST_TEST_SCALE (tests/support/random_problems.hpp scaled): fewer under the sanitizers.
    scale = float(os.environ.get("REDIST_TEST_SCALE", "1"))
    ap.add_argument("--count", type=int, default=max(1, round(300 * scale)) if 0 < scale < 1 else 300,
                    help="problems of the paper workload")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    run = Runner(args.redist)

    problems = [random_problem(rng, [("a", 2), ("b", 2), ("c", 2)], 6, False) for _ in range(args.count)]
    problems += [random_problem(rng, [("x", 4), ("y", 6)], 4, True) for _ in range(40)]
    problems += [random_problem(rng, [("x", 2), ("y", 3), ("z", 2)], 5, True) for _ in range(40)]
    # Partial sums (an extension): pending-sum sources, targets keeping some of the sums.
    problems += [random_problem(rng, [("a", 2), ("b", 2), ("c", 2)], 4, False, sums=True) for _ in range(40)]
    problems += [random_problem(rng, [("x", 4), ("y", 3)], 3, True, sums=True) for _ in range(20)]
    # Problems whose programs need an allpermute (equal local shapes, different placement).
    problems += [("{x: 2, y: 2}", "[{x}4]", "[{y}4]"),
                 ("{a: 2, b: 2, c: 2}", "[2{a}4, 2{b, c}8]", "[2{c}4, 2{a, b}8]"),
                 ("{x: 4, y: 6}", "[{x}8, {y}12]", "[{y:(1)2, x:(1)2}8, {x:(2)2, y:(2)3}12]")]
    # Partial sums reduced by an allreduce, or kept in part.
    problems += [("{a: 2, b: 2}", "[{a}8] sum{b}", "[{a}8]"),
                 ("{a: 2, b: 2, c: 2}", "[{a}8, 4] sum{b, c}", "[{a}8, 4] sum{c}"),
                 ("{a: 2, b: 2, c: 2}", "[{a}8, 4] sum{b, c}", "[8, {a}4] sum{b}"),
                 ("{x: 4, y: 3}", "[12, {x}8] sum{y}", "[{y}12, 8]"),
                 ("{x: 4, y: 3}", "[12, {x:(2)2}8] sum{y, x:(1)2}", "[{y}12, {x:(2)2}8]")]
    # Uneven types reduce-scattered on their padded tiles (issue 24 item 5), any reduction.
    problems += [("{x: 4, y: 2}", "[{x}14] sum{y}", "[{y, x}14]"),
                 ("{x: 3, y: 2}", "[{x}10, 4] sum{y}", "[{y, x}10, 4]"),
                 ("{x: 2, y: 2}", "[{x}5, 4] sum{y}", "[5, {y}4]"),
                 # ceil-sized chunks of a whole dimension, the send padded (DTensor's 13 x 3)
                 ("{x: 4}", "[13, 3] sum{x}", "[{x}13, 3]"),
                 ("{x: 4, y: 2}", "[{y}5, 13] sum{x}", "[{y}5, {x}13]"),
                 ("{x: 2, y: 3}", "[7, {x}5] sum{y}", "[{y}7, {x}5]")]
    # Every reduction (max, min, prod, avg): the sum problems above with another kind.
    reductions = ["max", "min", "prod", "avg"]
    problems += [(mesh, a.replace("sum{", k + "{"), b.replace("sum{", k + "{"))
                 for k, (mesh, a, b) in zip(reductions * 20, [p for p in problems if "sum{" in p[1]][:40])]

    failures = []
    programs = []
    stats = {"steps": 0, "naive_over_bound": 0, "budget": 0, "xla": 0}
    for n, (mesh, a, b) in enumerate(problems):
        what = "problem %d: --mesh '%s' --from '%s' --to '%s'" % (n, mesh, a, b)
        try:
            ebytes = rng.choice([1, 2, 4, 8])
            prog = run.plan(mesh, a, b, "--bytes", str(ebytes))
            s = cp.check(prog)
            if prog["element_bytes"] != ebytes:
                raise cp.CheckError("element_bytes %r, asked for %d" % (prog["element_bytes"], ebytes))
            # The program's types are the ones asked for (same tiles on every rank).
            m = cp.parse_mesh(mesh)
            uneven = cp.parse_type(m, a).uneven or cp.parse_type(m, b).uneven  # (the baselines model even types)
            if cp.parse_type(m, a).boxes() != cp.parse_type(m, prog["source"]).boxes():
                raise cp.CheckError("source %r is not the type asked for" % prog["source"])
            if cp.parse_type(m, b).boxes() != cp.parse_type(m, prog["target"]).boxes():
                raise cp.CheckError("target %r is not the type asked for" % prog["target"])
            stats["steps"] += s["steps"]
            for st in prog["steps"]:
                stats[st["op"]] = stats.get(st["op"], 0) + 1
            programs.append(prog)
            if n % 5 == 0 and "{" not in a.split("]")[-1] and not uneven:  # the xla baseline (section 6)
                cp.check(run.plan(mesh, a, b, "--baseline", "xla"), memory=False)
                stats["xla"] += 1
            if n % 5 == 0 and not uneven:  # the naive baseline: right tiles, above the bound when it gathers
                naive = run.plan(mesh, a, b, "--baseline", "naive")
                ns = cp.check(naive, memory=False)
                if ns["peak"] > ns["bound"]:
                    stats["naive_over_bound"] += 1
                    try:
                        cp.check(naive)
                        raise cp.CheckError("the checker accepted a program above the memory bound")
                    except cp.CheckError as e:
                        if "exceeds" not in str(e):
                            raise
            if n % 10 == 0:  # under the paper's objective, a larger budget never costs more
                paper = cp.check(run.plan(mesh, a, b, "--bytes", str(ebytes), "--objective", "bytes"))
                wide = run.plan(mesh, a, b, "--bytes", str(ebytes), "--objective", "bytes", "--budget", "2")
                ws = cp.check(wide, memory=False)
                if ws["cost_bytes"] > paper["cost_bytes"] or ws["peak"] > 2 * paper["bound"]:
                    raise cp.CheckError("--objective bytes --budget 2: cost %d (vs %d), peak %d (bound %d)"
                                        % (ws["cost_bytes"], paper["cost_bytes"], ws["peak"], 2 * paper["bound"]))
                stats["budget"] += 1
        except (cp.CheckError, ValueError, KeyError) as e:
            failures.append("%s\n    %s" % (what, e))

    # The checker rejects corrupted programs.
    kinds = {}
    for prog in programs:
        for kind, bad in corruptions(prog, rng):
            try:
                cp.check(bad)
                failures.append("the checker accepted a corrupted program (%s):\n%s" % (kind, json.dumps(bad)))
            except cp.CheckError:
                kinds[kind] = kinds.get(kind, 0) + 1
    expected = {"swapped dest", "swapped group members", "unequal group sizes", "changed dynslice index",
                "dropped step", "wrong cost", "bound below peak", "swapped exchange boxes", "changed reduction"}
    fused = sum(1 for prog in programs for st in prog["steps"] if "concat_dims" in st)
    if fused:
        expected.add("reordered fused grid")
    if set(kinds) != expected:
        failures.append("corruption kinds not exercised: %s, unexpected: %s"
                        % (sorted(expected - set(kinds)), sorted(set(kinds) - expected)))

    ops = ("allgather", "alltoall", "dynslice", "allpermute", "allreduce", "reducescatter")
    print("%d problems, %d redist runs, %d steps (%s), naive above bound %d, budget runs %d, xla runs %d"
          % (len(problems), run.calls, stats["steps"], ", ".join("%s %d" % (o, stats.get(o, 0)) for o in ops),
             stats["naive_over_bound"], stats["budget"], stats["xla"]))
    if any(stats.get(o, 0) == 0 for o in ops):
        failures.append("some collectives never occurred: %s" % [o for o in ops if stats.get(o, 0) == 0])
    print("fused steps: %d" % fused)
    print("corrupted programs rejected: %s" % ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    for f in failures[:20]:
        print("FAIL " + f)
    if failures:
        print("%d failures" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
