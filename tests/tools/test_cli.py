#!/usr/bin/env python3
"""ctest driver for the behaviour of the `redist` command line (DESIGN.md section 5):
the plan of seed 000 Listing 3, and bad input: exit status 1 and exactly one line on
stderr naming the option, the problem and (for text) the column.

Usage: test_cli.py --redist build/tools/redist
"""

import argparse
import json
import math
import os
import re
import sys
import tempfile

from cli_checks import Checks, run

LISTING3 = ["--mesh", "{devs: 32}", "--from", "[32, 64{devs}2048]", "--to", "[1{devs}32, 2048]"]
GOOD = ["--mesh", "{x: 4, y: 8}", "--from", "[64{x}256, 1024]", "--to", "[256, 128{y}1024]"]

# (arguments after `redist plan`, expected stderr line) -- each exits 1.
BAD_INPUT = [
    (["--mesh", "{x: 4, y 8}", "--from", "[8]", "--to", "[8]"],
     "redist: error: --mesh: expected ':' after the axis name but found '8' (at column 10 of '{x: 4, y 8}')"),
    (["--mesh", "{x: 4, x: 8}", "--from", "[8]", "--to", "[8]"],
     "redist: error: --mesh: axis 'x' is declared twice in the mesh (at column 8 of '{x: 4, x: 8}')"),
    (["--mesh", "{x: 0}", "--from", "[8]", "--to", "[8]"],
     "redist: error: --mesh: axis 'x' has size 0 (at column 5 of '{x: 0}')"),
    (["--mesh", "{x: 4294967296, y: 4294967296}", "--from", "[8]", "--to", "[8]"],
     "redist: error: --mesh: the number of devices in the mesh does not fit in 64 bits "
     "(at column 17 of '{x: 4294967296, y: 4294967296}')"),
    (["--mesh", "{x: 4, y: 8}", "--from", "[64{x}256, 1024", "--to", "[256, 1024]"],
     "redist: error: --from: expected ',' or ']' after a dimension but the text ended (at column 16 of '[64{x}256, 1024')"),
    (["--mesh", "{x: 4, y: 8}", "--from", "[64{z}256, 1024]", "--to", "[256, 1024]"],
     "redist: error: --from: unknown axis 'z' (the mesh declares x, y) (at column 5 of '[64{z}256, 1024]')"),
    (["--mesh", "{x: 4, y: 8}", "--from", "[256, 1024]", "--to", "[{x}256, 128{y, x}1024]"],
     "redist: error: --to: axis 'x' is used twice in the type (at column 17 of '[{x}256, 128{y, x}1024]')"),
    (["--mesh", "{x: 4, y: 8}", "--from", "[31{y}250, 1024]", "--to", "[250, 1024]"],
     "redist: error: --from: tile size 31 of dimension 0 should be 32 (global 250 / 8 tiles, rounded up) "
     "(at column 2 of '[31{y}250, 1024]')"),
    (["--mesh", "{x: 4}", "--from", "[{x}6, 8]", "--to", "[6, {x}8]", "--baseline", "xla"],
     "redist: error: --baseline: the xla baseline models the resharding of even types, and this problem has an "
     "uneven dimension"),
    (["--mesh", "{x: 4, y: 8}", "--from", "[63{x}256, 1024]", "--to", "[256, 1024]"],
     "redist: error: --from: tile size 63 of dimension 0 should be 64 (global 256 / 4 tiles) (at column 2 of '[63{x}256, 1024]')"),
    (["--mesh", "{x: 4, y: 8}", "--from", "[{x}256, 1024]", "--to", "[256, 512]"],
     "redist: error: --to: global types differ: source is [256, 1024], target is [256, 512]"),
    (["--mesh", "{x: 4, y: 8}", "--from", "[{x}256, 1024]", "--to", "[256, 1024, 1]"],
     "redist: error: --to: global types differ: source is [256, 1024], target is [256, 1024, 1]"),
    (["--mesh", "{x: 4}", "--from", "[{x}4294967296, 4294967296]", "--to", "[8]"],
     "redist: error: --from: the global size of the array does not fit in 64 bits (at column 17 of '[{x}4294967296, 4294967296]')"),
    (["--mesh", "{x: 4}", "--from", "[18446744073709551616]", "--to", "[8]"],
     "redist: error: --from: number does not fit in 64 bits (at column 2 of '[18446744073709551616]')"),
    (["--mesh", "{a: 2, b: 2}", "--from", "[{a}8] sun{b}", "--to", "[{a}8]"],
     "redist: error: --from: unknown reduction 'sun' (expected sum, max, min, prod or avg, as in 'sum{y}') "
     "(at column 8 of '[{a}8] sun{b}')"),
    # Every reduction (DESIGN.md section 2): one kind per type, kept by a redistribution.
    (["--mesh", "{a: 2, b: 2}", "--from", "[8] max{a} sum{b}", "--to", "[8]"],
     "redist: error: --from: two reduction kinds in one type: 'max' and 'sum' (a type's partial values have one "
     "reduction kind) (at column 12 of '[8] max{a} sum{b}')"),
    (["--mesh", "{a: 2, b: 2}", "--from", "[{a}8] max{b}", "--to", "[8] min{b}"],
     "redist: error: --to: the source's partial values combine by max, the target's by min: a redistribution "
     "keeps the reduction kind"),
    (["--mesh", "{a: 2, b: 2}", "--from-dtensor", "[Partial('mean'), Replicate()]", "--shape", "[8]", "--to", "[8]"],
     "redist: error: --from-dtensor: unknown reduction 'mean' (Partial takes sum, max, min, prod or avg) "
     "(at column 10 of '[Partial('mean'), Replicate()]')"),
    (GOOD + ["--budget", "0.5"], "redist: error: --budget: the memory budget factor must be at least 1"),
    (GOOD + ["--budget", "nan"], "redist: error: --budget: the memory budget factor must be at least 1"),
    (GOOD + ["--bytes", "0"], "redist: error: --bytes: element size must be at least 1 byte"),
    (GOOD + ["--bytes", "-4"], "redist: error: --bytes: expected a number of bytes per element, found '-4'"),
    (GOOD + ["--bytes", "18446744073709551615"],
     "redist: error: --bytes: the cost in bytes (24576 elements of 18446744073709551615 bytes) does not fit in 64 bits"),
]

# Command-line usage errors: exit 2, CLI11's message.
USAGE = [
    ([], "A subcommand is required"),
    (["plan", "--mesh", "{x: 4}", "--from", "[8]"], "--to is required"),
    (["plan"] + GOOD + ["--baseline", "nope"], "--baseline: nope not in {naive"),
    (["plan"] + GOOD + ["--baseline", "naive", "--budget", "2"], "--budget excludes --baseline"),
    (["plan"] + GOOD + ["--frobnicate"], "The following argument was not expected: --frobnicate"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redist", required=True)
    redist = ap.parse_args().redist
    checks = Checks()
    expect = checks.expect

    # Listing 3 (seed 000) under the paper's objective: one alltoall, localsize 2048 * 4 bytes.
    PAPER = ["--objective", "bytes"]
    r = run(redist, ["plan"] + LISTING3 + PAPER + ["--json"])
    expect(r.returncode == 0 and r.stderr == "", "listing 3 --json: rc %d, stderr %r" % (r.returncode, r.stderr))
    prog = json.loads(r.stdout)
    expect([s["op"] for s in prog["steps"]] == ["alltoall"], "listing 3: steps %s" % [s["op"] for s in prog["steps"]])
    step = prog["steps"][0]
    expect(step["concat_dim"] == 1 and step["split_dim"] == 0 and step["groups"] == [list(range(32))],
           "listing 3: alltoall %s" % {k: step[k] for k in ("concat_dim", "split_dim", "groups")})
    expect(prog["cost_bytes"] == 8192 and prog["element_bytes"] == 4, "listing 3: cost_bytes %r" % prog["cost_bytes"])
    expect(prog["peak_local_elements"] == 2048 and prog["memory_bound_elements"] == 2048,
           "listing 3: peak %r bound %r" % (prog["peak_local_elements"], prog["memory_bound_elements"]))
    expect(list(prog)[:4] == ["format", "mesh", "global_shape", "element_bytes"], "JSON key order %s" % list(prog))
    expect(prog["format"] == "redist-program/1" and prog["mesh"] == [["devs", 32]] and prog["global_shape"] == [32, 2048],
           "listing 3: header %r" % {k: prog[k] for k in ("format", "mesh", "global_shape")})
    expect(r.stdout.startswith('{\n  "format": "redist-program/1",\n'), "JSON not indented by 2: %r" % r.stdout[:40])

    r = run(redist, ["plan"] + LISTING3 + PAPER)
    lines = r.stdout.splitlines()
    expect(r.returncode == 0 and len(lines) == 4, "listing 3 table: rc %d\n%s" % (r.returncode, r.stdout))
    expect(lines[0] == "redist program on {devs: 32}: [32, 64{devs}2048] -> [1{devs}32, 2048], 4-byte elements",
           "listing 3 header: %r" % lines[0])
    expect(lines[2].split() == ["1", "alltoall", "1", "0", "32", "1", "8192", "2048", "[1{devs}32,", "2048]"],
           "listing 3 step row: %r" % lines[2])
    expect(lines[3] == "total 8192 B per device (2048 elements) | peak 2048 | bound 2048 | memory-efficient",
           "listing 3 totals: %r" % lines[3])
    r = run(redist, ["plan"] + LISTING3 + PAPER + ["--bytes", "2"])
    expect("total 4096 B per device (2048 elements)" in r.stdout, "--bytes 2: %r" % r.stdout)
    # By default, least predicted time (built-in profile): on 32 devices one all-to-all (5
    # rounds; two smaller ones and a permutation take 2 + 3 and two more latencies), predicted
    # faster than the exchange with its 31 peers.
    r = run(redist, ["plan"] + LISTING3 + ["--json"])
    steps = [s["op"] for s in json.loads(r.stdout)["steps"]] if r.returncode == 0 else []
    expect(steps == ["alltoall"], "listing 3 by time: steps %s" % steps)
    r = run(redist, ["plan"] + LISTING3 + ["--explain"])
    expect("* collective  1 step," in r.stdout and "exchange    1 step, 31 peers" in r.stdout and
           "reason: collective: predicted" in r.stdout, "listing 3 by time --explain: %r" % r.stdout[-600:])

    # Every reduction: plans carry "reduce" (only where not sum), runs reduce real data.
    for kind in ("max", "min", "prod", "avg", "sum"):
        reduce_args = ["--mesh", "{x: 2, y: 4}", "--from", "[{x}16, 8] %s{y}" % kind, "--to", "[{x}16, {y}8]"]
        r = run(redist, ["plan"] + reduce_args + ["--json"])
        steps = json.loads(r.stdout)["steps"] if r.returncode == 0 else []
        expect([s["op"] for s in steps] == ["reducescatter"] and
               [s.get("reduce", "sum") for s in steps] == [kind] and ("reduce" in steps[0]) == (kind != "sum"),
               "%s{y} plan: rc %d, steps %r, stderr %r" % (kind, r.returncode, steps, r.stderr))
        for backend in ("host",):
            r = run(redist, ["run", "--backend", backend, "--verify"] + reduce_args)
            expect(r.returncode == 0 and "verify: OK, 128 elements checked" in r.stdout,
                   "%s{y} run --verify: rc %d, stdout %r, stderr %r" % (kind, r.returncode, r.stdout[-300:], r.stderr))
        # Pending values kept in the target: verified on the reduction of the partials.
        r = run(redist, ["run", "--backend", "host", "--verify", "--mesh", "{x: 2, y: 2, z: 2}", "--from",
                         "[16, 8] %s{y, z}" % kind, "--to", "[{y}16, 8] %s{z}" % kind])
        expect(r.returncode == 0 and "verify: OK" in r.stdout and "(the %s of the target's partial values)" % kind in r.stdout,
               "%s kept: rc %d, stdout %r, stderr %r" % (kind, r.returncode, r.stdout[-300:], r.stderr))
    # Creating pending values (DTensor's Replicate() -> Partial()): one local partial step,
    # every kind, verified on the reduction of the partials.
    for kind in ("sum", "max", "min", "prod", "avg"):
        partial = "Partial()" if kind == "sum" else "Partial('%s')" % kind
        dt_args = ["--mesh", "{x: 2, y: 2}", "--shape", "[12, 3]", "--from-dtensor", "[Shard(0), Replicate()]",
                   "--to-dtensor", "[Shard(0), %s]" % partial]
        r = run(redist, ["plan"] + dt_args + ["--json"])
        steps = json.loads(r.stdout)["steps"] if r.returncode == 0 else []
        expect([(s["op"], s["groups"], s.get("reduce", "sum")) for s in steps] == [("partial", [[0, 1], [2, 3]], kind)],
               "Replicate() -> %s plan: rc %d, steps %r, stderr %r" % (partial, r.returncode, steps, r.stderr))
        r = run(redist, ["run", "--backend", "host", "--verify"] + dt_args)
        expect(r.returncode == 0 and "verify: OK" in r.stdout and "(the %s of the target's partial values)" % kind in r.stdout,
               "Replicate() -> %s run: rc %d, stdout %r, stderr %r" % (partial, r.returncode, r.stdout[-300:], r.stderr))
    # Uneven types: one reduce-scatter where its equal chunks of the padded tile are the tiles.
    uneven_args = ["--mesh", "{x: 4, y: 2}", "--from", "[{x}14, 3] max{y}", "--to", "[{y, x}14, 3]"]
    r = run(redist, ["plan"] + uneven_args + ["--json"])
    steps = json.loads(r.stdout)["steps"] if r.returncode == 0 else []
    expect([(s["op"], s.get("reduce")) for s in steps] == [("reducescatter", "max")],
           "uneven reduce-scatter plan: rc %d, steps %r, stderr %r" % (r.returncode, steps, r.stderr))
    r = run(redist, ["run", "--backend", "host", "--verify"] + uneven_args)
    expect(r.returncode == 0 and "verify: OK, 42 elements checked" in r.stdout,
           "uneven reduce-scatter run: rc %d, stdout %r, stderr %r" % (r.returncode, r.stdout[-300:], r.stderr))
    # DTensor's 13 x 3 Partial() -> Shard(0) on 4 devices: one reduce-scatter of ceil-sized
    # chunks (4, 4, 4, 1 rows; the executor pads the send), by time and by bytes, every kind.
    for kind in ("sum", "max", "min", "prod", "avg"):
        partial = "Partial()" if kind == "sum" else "Partial('%s')" % kind
        dt_args = ["--mesh", "{x: 4}", "--shape", "[13, 3]", "--from-dtensor", "[%s]" % partial,
                   "--to-dtensor", "[Shard(0)]"]
        for objective in ([], ["--objective", "bytes"]):
            r = run(redist, ["plan"] + dt_args + objective + ["--json"])
            prog = json.loads(r.stdout) if r.returncode == 0 else {}
            expect(prog.get("source") == "[13, 3] %s{x}" % kind and prog.get("target") == "[4{x}13, 3]" and
                   [(s["op"], s["split_dim"], s.get("reduce", "sum")) for s in prog.get("steps", [])] ==
                   [("reducescatter", 0, kind)],
                   "DTensor 13 x 3 %s %r: rc %d, %r %r" % (kind, objective, r.returncode, r.stdout[:600], r.stderr))
        r = run(redist, ["run", "--backend", "host", "--verify"] + dt_args)
        expect(r.returncode == 0 and "verify: OK, 39 elements checked" in r.stdout,
               "DTensor 13 x 3 %s run: rc %d, stdout %r, stderr %r" % (kind, r.returncode, r.stdout[-300:], r.stderr))
    r = run(redist, ["plan", "--mesh", "{x: 2, y: 4}", "--from-dtensor", "[Shard(0), Partial('max')]", "--shape",
                     "[16, 8]", "--to-dtensor", "[Shard(0), Shard(1)]", "--json"])
    prog = json.loads(r.stdout) if r.returncode == 0 else {}
    expect(prog.get("source") == "[8{x}16, 8] max{y}" and [s.get("reduce") for s in prog.get("steps", [])] == ["max"],
           "DTensor Partial('max'): rc %d, %r %r" % (r.returncode, r.stdout[:400], r.stderr))

    # The naive baseline: allgather then dynslice, above the memory bound.
    r = run(redist, ["plan"] + GOOD + ["--baseline", "naive", "--json"])
    naive = json.loads(r.stdout)
    expect([s["op"] for s in naive["steps"]] == ["allgather", "dynslice"], "naive steps %s" % naive["steps"])
    expect(naive["peak_local_elements"] == 256 * 1024 and naive["memory_bound_elements"] == 64 * 1024,
           "naive peak %r bound %r" % (naive["peak_local_elements"], naive["memory_bound_elements"]))
    r = run(redist, ["plan"] + GOOD + ["--baseline", "naive"])
    expect(r.stdout.rstrip().endswith("| NOT memory-efficient"), "naive table: %r" % r.stdout)

    for args, line in BAD_INPUT:
        r = run(redist, ["plan"] + args)
        expect(r.returncode == 1, "%s: exit %d, expected 1" % (args, r.returncode))
        expect(r.stderr == line + "\n", "%s:\n  stderr   %r\n  expected %r" % (args, r.stderr, line + "\n"))
        expect(r.stdout == "", "%s: printed %r" % (args, r.stdout))
    # Limits (docs/reference.md, "Limits"): 100,000 devices are planned; a host run that would
    # hold terabytes is refused before anything is allocated; a text past 65,536 characters is
    # refused with its length.
    huge = ["--mesh", "{x: 100000}", "--from", "[{x}100000, 4]", "--to", "[100000, 4]"]
    r = run(redist, ["plan"] + huge)
    expect(r.returncode == 0 and "1  allgather" in r.stdout, "100,000 devices: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    r = run(redist, ["run", "--backend", "host"] + huge)
    expect(r.returncode == 1 and r.stdout == "" and r.stderr ==
           "redist: error: --backend: host: 100000 simulated devices would hold 447.0 GiB (tiles in and out and the "
           "executor's buffers), more than the 8 GiB the host backend simulates; use a smaller array or mesh, or "
           "--backend mpi\n", "100,000 devices on the host: rc %d, stderr %r" % (r.returncode, r.stderr))
    r = run(redist, ["plan", "--mesh", "{x: 4611686018427387904}", "--from", "[{x}4611686018427387904]",
                     "--to", "[4611686018427387904]"])
    expect(r.returncode == 1 and r.stderr == "redist: error: the mesh has 4611686018427387904 devices; collective "
           "programs are made for at most 1048576\n", "2^62 devices: rc %d, stderr %r" % (r.returncode, r.stderr))
    r = run(redist, ["plan", "--mesh", "{x: 4}", "--from", "[" + " " * 70000 + "8]", "--to", "[8]"])
    expect(r.returncode == 1 and r.stderr ==
           "redist: error: --from: the text has 70003 characters, more than the 65536 the parser reads\n",
           "long text: rc %d, stderr %r" % (r.returncode, r.stderr[:300]))

    check_time_model(redist, checks)
    check_reshard(redist, checks)

    for args, text in USAGE:
        r = run(redist, args)
        expect(r.returncode == 2 and text in r.stderr, "%s: exit %d, stderr %r" % (args, r.returncode, r.stderr))
    r = run(redist, ["plan", "--help"])
    expect(r.returncode == 0 and "--baseline" in r.stdout and "--budget" in r.stdout, "plan --help: %r" % r.stdout)

    return checks.report("all CLI checks passed")


def check_reshard(redist, checks):
    """redist reshard plan|run (issue 26) on tests/tools/reshard_manifest.json, and bad manifests."""
    expect = checks.expect
    manifest = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reshard_manifest.json")
    r = run(redist, ["reshard", "plan", "--manifest", manifest])
    lines = r.stdout.splitlines()
    expect(r.returncode == 0 and lines[0] == "redist reshard: 3 arrays (280.2 KiB) in a world of 8 ranks, no budget",
           "reshard plan: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
    expect(any(l.startswith("joint exchange: 1 round, 20 messages; most one rank receives 70.2 KiB (lower bound "
                            "70.2 KiB)") for l in lines), "reshard plan: %r" % r.stdout)
    r = run(redist, ["reshard", "plan", "--manifest", manifest, "--budget-bytes", "4096", "--json"])
    plan = json.loads(r.stdout) if r.returncode == 0 else {}
    expect(plan.get("format") == "redist-reshard-plan/1" and plan.get("budget_bytes") == 4096 and
           len(plan.get("rounds", [])) > 1 and max(plan.get("transient_bytes", [1 << 40])) <= 4096 and
           plan.get("received_bytes") == plan.get("lower_bound_bytes"), "reshard plan --json: %r" % r.stdout[:300])
    expect(plan.get("pipelined") is False, "reshard plan --json: pipelined under the built-in profile: %r" %
           plan.get("pipelined"))
    # Two rounds at a time: any two consecutive rounds within the budget on every rank.
    r = run(redist, ["reshard", "plan", "--manifest", manifest, "--budget-bytes", "4096", "--pipeline", "on", "--json"])
    plan = json.loads(r.stdout) if r.returncode == 0 else {}
    use = []
    for rnd in plan.get("rounds", []):
        u = [0] * plan["world"]
        for a, frm, to, b in rnd["pieces"]:
            n = 1
            for lo, hi in b:
                n *= hi - lo
            n *= {"f32": 4, "bf16": 2}[plan["arrays"][a]["dtype"]]
            u[frm] += n
            u[to] += n
        use.append(u)
    expect(plan.get("pipelined") is True and len(use) > 2 and
           all(x + y <= 4096 for k in range(len(use) - 1) for x, y in zip(use[k], use[k + 1])) and
           max(plan.get("transient_bytes", [1 << 40])) <= 4096 and "pipelined rounds" in plan.get("reason", ""),
           "reshard plan --pipeline on: %r" % r.stdout[:300])
    r = run(redist, ["reshard", "plan", "--manifest", manifest, "--budget-bytes", "4096", "--pipeline", "on"])
    expect(r.returncode == 0 and "rounds (two at a time)," in r.stdout, "reshard plan --pipeline on: %r" % r.stdout)
    r = run(redist, ["reshard", "plan", "--manifest", manifest, "--pipeline", "sometimes"])
    expect(r.returncode == 2 and "--pipeline: sometimes not in {auto,on,off}" in r.stderr,
           "reshard plan --pipeline sometimes: %r" % r.stderr)
    for extra in ([], ["--budget-bytes", "2048"], ["--budget-bytes", "2048", "--pipeline", "on"], ["--separate"]):
        r = run(redist, ["reshard", "run", "--manifest", manifest, "--backend", "host", "--verify"] + extra)
        expect(r.returncode == 0 and "verified: 78080 elements, 0 wrong" in r.stdout,
               "reshard run %s: rc %d\n%s%s" % (extra, r.returncode, r.stdout[-300:], r.stderr))
    with tempfile.TemporaryDirectory() as d:
        # Box layouts: explicit boxes with replicas, and Shardy's and XLA's sub-axes out of prime order.
        boxed = os.path.join(d, "boxes.json")
        with open(boxed, "w") as f:
            json.dump({"format": "redist-reshard/1", "world": 6, "meshes": {"m": "{x: 6}"}, "arrays": [
                {"name": "b", "shape": [6, 5], "dtype": "f64",
                 "source": {"boxes": [[[0, 2], [0, 5]], [[2, 6], [0, 5]], None, [[0, 2], [0, 5]], None, None]},
                 "target": {"mesh": "m", "type": "[{x}6, 5]"}},
                {"name": "s", "shape": [12, 2], "dtype": "i32", "source": {"mesh": "m", "type": "[{x}12, 2]"},
                 "target": {"shardy": 'sdy.mesh @s = <["y"=6]> #sdy.sharding<@s, [{"y":(1)3}, {}]>'}},
                {"name": "x", "shape": [12, 3], "dtype": "u8", "source": {"xla": "{mesh['y'=6], [{'y':(1)3}, {}]}"},
                 "target": {"xla": "{mesh['y'=6], device_ids=(5,4,3,2,1,0), [{}, {'y':(2)3}]}"}},
                {"name": "j", "shape": [4, 6], "dtype": "f32", "target": {"mesh": "m", "type": "[{x}4, 6]"},
                 "source": {"jax": "NamedSharding(mesh=Mesh(device_ids=array([5, 4, 3, 2, 1, 0]), axis_names=('q',)), "
                                   "spec=PartitionSpec(None, 'q'))"}}]}, f)
        r = run(redist, ["reshard", "run", "--manifest", boxed, "--backend", "host", "--verify"])
        expect(r.returncode == 0 and "verified: 174 elements, 0 wrong" in r.stdout,
               "reshard run box layouts: rc %d\n%s%s" % (r.returncode, r.stdout[-400:], r.stderr))
        # An own program over the budget, chunk by chunk: gradients reduce-scattered along the
        # strided dimension 1, in two chunks of 8 rows of dimension 0.
        grads = os.path.join(d, "grads.json")
        with open(grads, "w") as f:
            json.dump({"format": "redist-reshard/1", "meshes": {"m": "{x: 2}"}, "budget_bytes": 600, "arrays": [
                {"name": "g", "shape": [16, 24], "dtype": "f32", "source": {"mesh": "m", "type": "[16, 24] sum{x}"},
                 "target": {"mesh": "m", "type": "[16, {x}24]"}}]}, f)
        r = run(redist, ["reshard", "plan", "--manifest", grads, "--explain"])
        expect(r.returncode == 0 and "(in 2 chunks)" in r.stdout and
               "within the budget in 2 chunks (dimension 0: 8 rows of each of its 1 units), each by collective, at most 384 B "
               "per rank" in r.stdout,
               "reshard plan chunks: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        r = run(redist, ["reshard", "plan", "--manifest", grads, "--json"])
        chunks = json.loads(r.stdout)["arrays"][0].get("chunks", {}) if r.returncode == 0 else {}
        expect(chunks.get("count") == 2 and chunks.get("cut") == [{"dim": 0, "units": 1, "rows": 8}] and
               chunks.get("held_bytes") == 384 and chunks.get("program", {}).get("target") == "[8, 12{x}24]",
               "reshard plan chunks --json: %r" % chunks)
        r = run(redist, ["reshard", "run", "--manifest", grads, "--backend", "host", "--verify"])
        expect(r.returncode == 0 and "verified: 384 elements, 0 wrong" in r.stdout,
               "reshard run chunks: rc %d\n%s%s" % (r.returncode, r.stdout[-300:], r.stderr))
        # Casts on the way: f32 to bf16 (narrowing, bf16 on the wire) and bf16 to f64 (widening).
        cast = os.path.join(d, "cast.json")
        with open(cast, "w") as f:
            json.dump({"format": "redist-reshard/1", "world": 8,
                       "meshes": {"train": "{fsdp: 4, tp: 2}", "infer": "{tp: 4} @ [4, 5, 6, 7]"}, "arrays": [
                           {"name": "q", "shape": [64, 32], "dtype": "f32", "target_dtype": "bf16",
                            "source": {"mesh": "train", "type": "[{fsdp, tp}64, 32]"},
                            "target": {"mesh": "infer", "type": "[{tp}64, 32]"}},
                           {"name": "e", "shape": [16], "dtype": "bf16", "target_dtype": "f64",
                            "source": {"mesh": "train", "type": "[{fsdp}16]"},
                            "target": {"mesh": "infer", "type": "[16]"}}]}, f)
        r = run(redist, ["reshard", "run", "--manifest", cast, "--backend", "host", "--verify"])
        expect(r.returncode == 0 and "verified: 2112 elements, 0 wrong" in r.stdout,
               "reshard run casts: rc %d\n%s%s" % (r.returncode, r.stdout[-400:], r.stderr))
        r = run(redist, ["reshard", "plan", "--manifest", cast, "--json"])
        plan = json.loads(r.stdout) if r.returncode == 0 else {}
        # Ranks 4..7 receive their 16 rows of q and all of e as bf16, (16 x 32 + 16) x 2 bytes, less
        # what they hold: 4 elements of e each, and on rank 7 q's rows 56..63 ({fsdp, tp}: tp major).
        expect([a.get("target_dtype") for a in plan.get("arrays", [])] == ["bf16", "f64"] and
               plan.get("received_bytes", [0] * 8)[4:] == [1048, 1048, 1048, 536] and
               plan.get("received_bytes") == plan.get("lower_bound_bytes"), "reshard plan casts: %r" % r.stdout[:400])
        r = run(redist, ["reshard", "plan", "--manifest", cast])
        expect(r.returncode == 0 and " f32>bf16 " in r.stdout and " bf16>f64 " in r.stdout,
               "reshard plan casts: %r" % r.stdout)
        one = os.path.join(d, "one.json")
        with open(one, "w") as f:
            json.dump({"format": "redist-reshard/1", "world": 4, "meshes": {"m": "{x: 4}"}, "arrays": [
                {"name": "w", "shape": [8, 4], "dtype": "f32", "source": {"mesh": "m", "type": "[{x}8, 4]"},
                 "target": {"mesh": "m", "type": "[8, {x}4]"}}]}, f)
        r = run(redist, ["reshard", "plan", "--manifest", one])
        expect(r.returncode == 0 and r.stdout.splitlines()[0] ==
               "redist reshard: 1 array (128 B) in a world of 4 ranks, no budget",
               "reshard plan, one array: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        # Gradients: two reduce-scatters over fsdp share one call; the norm's all-reduce is alone.
        def gradients(name, w, weight, norm, reduce, target=None):  # weights w0, w1 of dtype weight (to target), a norm n
            path = os.path.join(d, name)
            cast = {"target_dtype": target} if target else {}
            with open(path, "w") as f:
                json.dump({"format": "redist-reshard/1", "world": 8, "meshes": {"m": "{fsdp: 4, tp: 2}"}, "arrays": [
                    dict({"name": "%s%d" % (w, i), "shape": [64, 32], "dtype": weight,
                          "source": {"mesh": "m", "type": "[{tp}64, 32] sum{fsdp}"},
                          "target": {"mesh": "m", "type": "[{tp}64, {fsdp}32]"}}, **cast) for i in range(2)] + [
                    {"name": "n", "shape": [32], "dtype": norm, "source": {"mesh": "m", "type": "[32] " + reduce},
                     "target": {"mesh": "m", "type": "[32]"}}]}, f)
            return path
        grads = gradients("grads.json", "w", "f32", "f32", "sum{fsdp}")
        r = run(redist, ["reshard", "plan", "--manifest", grads, "--explain"])
        expect(r.returncode == 0 and
               "fused collectives: 2 own arrays in 1 set (one call per step each); buffers at most 10.0 KiB per rank"
               in r.stdout and
               "  fused 1: one reducescatter of 2 arrays (w0, w1), 10.0 KiB per rank" in r.stdout,
               "reshard plan, gradients: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        r = run(redist, ["reshard", "plan", "--manifest", grads, "--json"])
        plan = json.loads(r.stdout) if r.returncode == 0 else {}
        fused = plan.get("fused", [{}])
        expect(len(fused) == 1 and fused[0].get("arrays") == [0, 1] and fused[0].get("steps") == ["reducescatter"] and
               fused[0].get("bytes") == 10240 and 0 < fused[0].get("predicted_seconds", 0) < plan["predicted_seconds"],
               "reshard plan --json, gradients: %r" % r.stdout[-400:])
        r = run(redist, ["reshard", "run", "--manifest", grads, "--backend", "host", "--verify"])
        expect(r.returncode == 0 and re.search(r"verified: \d+ elements, 0 wrong", r.stdout),
               "reshard run, gradients: rc %d\n%s%s" % (r.returncode, r.stdout[-300:], r.stderr))
        # bf16 and f16 gradients (runtime/half.hpp): the bf16 reduce-scatters share one call.
        grads16 = gradients("grads16.json", "b", "bf16", "f16", "avg{fsdp, tp}")
        r = run(redist, ["reshard", "plan", "--manifest", grads16, "--explain"])
        expect(r.returncode == 0 and "  fused 1: one reducescatter of 2 arrays (b0, b1), 5120 B per rank" in r.stdout,
               "reshard plan, bf16 gradients: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        r = run(redist, ["reshard", "run", "--manifest", grads16, "--backend", "host", "--verify"])
        expect(r.returncode == 0 and re.search(r"verified: [1-9]\d* elements, 0 wrong", r.stdout),
               "reshard run, bf16 gradients: rc %d\n%s%s" % (r.returncode, r.stdout[-300:], r.stderr))
        # FSDP's mixed precision (reduce_dtype f32): bf16 gradients reduce-scattered into f32
        # shards, in f32, converted as they are packed into the call's buffer.
        grads_mp = gradients("grads_mp.json", "m", "bf16", "f32", "sum{fsdp}", target="f32")
        r = run(redist, ["reshard", "plan", "--manifest", grads_mp, "--explain"])
        expect(r.returncode == 0 and "  fused 1: one reducescatter of 2 arrays (m0, m1), 10.0 KiB per rank" in r.stdout and
               "bf16>f32" in r.stdout and
               "; runs in f32 (pending values cast: the type that holds bf16 and f32)" in r.stdout,
               "reshard plan, mixed-precision gradients: rc %d\n%s%s" % (r.returncode, r.stdout, r.stderr))
        r = run(redist, ["reshard", "plan", "--manifest", grads_mp, "--json"])
        plan = json.loads(r.stdout) if r.returncode == 0 else {}
        expect([a.get("program_dtype") for a in plan.get("arrays", [])] == ["f32", "f32", None] and
               plan["arrays"][0].get("target_dtype") == "f32" and plan.get("fused", [{}])[0].get("arrays") == [0, 1],
               "reshard plan --json, mixed-precision gradients: %r" % r.stdout[-400:])
        r = run(redist, ["reshard", "run", "--manifest", grads_mp, "--backend", "host", "--verify"])
        expect(r.returncode == 0 and re.search(r"verified: [1-9]\d* elements, 0 wrong", r.stdout),
               "reshard run, mixed-precision gradients: rc %d\n%s%s" % (r.returncode, r.stdout[-300:], r.stderr))
        r = run(redist, ["reshard", "plan", "--manifest", boxed, "--json"])
        plan = json.loads(r.stdout) if r.returncode == 0 else {}
        expect(plan.get("arrays", [{}])[0].get("source") == {"boxes": [[[0, 2], [0, 5]], [[2, 6], [0, 5]], None,
                                                                      [[0, 2], [0, 5]], None, None]},
               "reshard plan box layouts --json: %r %r" % (r.stdout[:300], r.stderr))
        for text, err in [
            ('{"format": "redist-reshard/1", "arrays": []}',
             "--manifest: reshard manifest: arrays: expected a non-empty array of arrays, found []"),
            ('{"format": "redist-reshard/1", "arrays": [{"name": "a", "shape": [4], "dtype": "f32", '
             '"source": {"mesh": "m", "type": "[4]"}, "target": {"mesh": "m", "type": "[4]"}}]}',
             "--manifest: reshard manifest: arrays[0] ('a').source.mesh: no mesh named 'm' in 'meshes'"),
            ('{"format": "redist-reshard/1", "meshes": {"m": "{x: 2}", "n": "{} @ [1]"}, "arrays": [{"name": "a", '
             '"shape": [4], "dtype": "f32", "source": {"mesh": "m", "type": "[{x}4]"}, "target": {"mesh": "n", '
             '"type": "[4]"}}], "budget_bytes": 3}',
             "--manifest: array 'a': one row of the piece [0, 2) from rank 0 to rank 1 is 4 bytes, more than the "
             "budget of 3 bytes per rank"),
        ]:
            path = os.path.join(d, "m.json")
            with open(path, "w") as f:
                f.write(text)
            r = run(redist, ["reshard", "plan", "--manifest", path])
            expect(one_error_line(r) and r.stderr == "redist: error: " + err + "\n",
                   "bad manifest: rc %d, stderr %r" % (r.returncode, r.stderr))
        r = run(redist, ["reshard", "plan", "--manifest", os.path.join(d, "none.json")])
        expect(one_error_line(r) and "cannot read the file" in r.stderr, "missing manifest: %r" % r.stderr)
    r = run(redist, ["reshard", "plan"])
    expect(r.returncode == 2 and "--manifest is required" in r.stderr, "reshard plan without --manifest: %r" % r.stderr)


def one_error_line(r):
    return r.returncode == 1 and r.stderr.count("\n") == 1 and r.stderr.startswith("redist: error: ")


def check_time_model(redist, checks):
    """redist calibrate (host, 4 devices, --sizes 64 KiB and 1 MiB: under a second) and plan --profile/--explain."""
    expect = checks.expect
    ops = ["allgather", "alltoall", "dynslice", "allpermute", "allreduce", "reducescatter", "exchange"]
    prof = None
    r = run(redist, ["calibrate", "--backend", "host", "--devices", "4", "--sizes", "64,1024"])
    expect(r.returncode == 0 and "redist calibrate: backend host, 4 ranks" in r.stderr and
           "pass: " in r.stderr, "calibrate: rc %d, stderr %r" % (r.returncode, r.stderr))
    try:
        prof = json.loads(r.stdout)
        expect(prof["format"] == "redist-time-profile/2" and prof["name"] == "host" and prof["devices"] == 4,
               "calibrate: header %r" % r.stdout[:200])
        expect(sorted(prof["ops"]) == sorted(ops), "calibrate: ops %r" % list(prof["ops"]))
        v = prof["pass_per_byte_s"]
        expect(isinstance(v, (int, float)) and math.isfinite(v) and v > 0, "calibrate: pass_per_byte_s = %r" % v)
        for o in ops:
            for k in ("latency_s", "per_peer_s", "per_byte_s"):
                v = prof["ops"][o][k]
                expect(isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, "calibrate: %s.%s = %r" % (o, k, v))
    except (ValueError, KeyError, TypeError) as e:
        checks.fail("calibrate: stdout is not a profile (%s): %r" % (e, r.stdout[:300]))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "host.json")
        r = run(redist, ["calibrate", "--backend", "host", "--devices", "2", "--sizes", "16", "--out", path])
        expect(r.returncode == 0 and "profile written to " + path in r.stdout and os.path.exists(path),
               "calibrate --out: rc %d, stdout %r" % (r.returncode, r.stdout))
        r = run(redist, ["plan"] + GOOD + ["--profile", path])
        expect(r.returncode == 0 and r.stdout.startswith("redist program on {x: 4, y: 8}"),
               "plan --profile: rc %d, stderr %r" % (r.returncode, r.stderr))
        # Both candidates, their predicted times and the reason.
        for profile in ([], ["--profile", path], ["--profile", "built-in"]):
            r = run(redist, ["plan"] + GOOD + profile + ["--explain"])
            expect(r.returncode == 0 and " collective  " in r.stdout and " exchange  " in r.stdout and
                   "predicted" in r.stdout and "\nreason: " in r.stdout and " peers, " in r.stdout,
                   "plan %s --explain: rc %d, stdout %r" % (profile, r.returncode, r.stdout[-600:]))
        r = run(redist, ["plan"] + GOOD + ["--explain"])
        expect("time model: profile built-in" in r.stdout and "printed:" not in r.stdout,
               "plan --explain without --profile: %r" % r.stdout[-600:])
        r = run(redist, ["plan"] + GOOD + ["--objective", "bytes", "--explain"])
        expect("time model: profile built-in" in r.stdout and "printed: the collective program" in r.stdout,
               "plan --objective bytes --explain: %r" % r.stdout[-600:])
        # --json stays exactly one program; the explanation goes to stderr.
        r = run(redist, ["plan"] + GOOD + ["--explain", "--json"])
        try:
            expect(json.loads(r.stdout)["format"] == "redist-program/1" and "reason: " in r.stderr,
                   "plan --explain --json: stderr %r" % r.stderr)
        except ValueError:
            checks.fail("plan --explain --json: stdout is not JSON: %r" % r.stdout[:300])
        # Bad profiles: one line, exit 1.
        missing = os.path.join(tmp, "none.json")
        r = run(redist, ["plan"] + GOOD + ["--profile", missing])
        expect(one_error_line(r) and r.stderr == "redist: error: --profile: cannot read the file '%s'\n" % missing,
               "missing profile: rc %d, stderr %r" % (r.returncode, r.stderr))
        bad = os.path.join(tmp, "bad.json")
        cases = [
            ('{"format": "redist-time-profile/2", ', "redist: error: --profile: time profile JSON: parse error"),
            ('{"format": "redist-program/1"}', "redist: error: --profile: time profile JSON: format: expected "
             '"redist-time-profile/2", found "redist-program/1"'),
        ]
        if isinstance(prof, dict):
            neg = json.loads(json.dumps(prof))
            neg["ops"]["alltoall"]["per_byte_s"] = -1
            cases.append((json.dumps(neg), "redist: error: --profile: time profile JSON: ops.alltoall.per_byte_s: "
                          "expected a finite number >= 0 (seconds), found -1"))
            del neg["ops"]["exchange"]
            neg["ops"]["alltoall"]["per_byte_s"] = 0
            cases.append((json.dumps(neg), "redist: error: --profile: time profile JSON: ops: missing the kind "
                          "of step 'exchange'"))
            mpi = json.loads(json.dumps(prof))
            mpi["mpi"] = {"exchange": "fastest"}
            cases.append((json.dumps(mpi), "redist: error: --profile: time profile JSON: mpi.exchange: expected one "
                          'of single-copy, alltoallw, packed, found "fastest"'))
        for text, want in cases:
            with open(bad, "w") as f:
                f.write(text)
            r = run(redist, ["plan"] + GOOD + ["--profile", bad])
            expect(one_error_line(r) and r.stderr.startswith(want), "bad profile %r: rc %d, stderr %r" %
                   (text[:60], r.returncode, r.stderr))
        # Ranks on two nodes ("nodes": the link term): to a target replicated on the other node,
        # the two-phase plan (each byte over the link once) instead of the single exchange.
        between = ["plan", "--mesh", "{dp: 2, tp: 2} @ [0, 1, 2, 3]", "--from", "[{dp}8, 512, {tp}512]",
                   "--to-mesh", "{dp: 2, tp: 2} @ [4, 5, 6, 7]", "--to", "[8, 512, 512]", "--world", "8", "--explain"]
        nodes = os.path.join(tmp, "nodes.json")
        two_nodes = {"ranks": 4, "per_byte_s": 1e-9}
        with open(nodes, "w") as f:
            f.write(json.dumps(dict(prof or {}, nodes=two_nodes)))
        for extra, want in (([], "reason: exchange: predicted"), (["--profile", nodes], "reason: two-phase: predicted")):
            r = run(redist, between + extra)
            expect(r.returncode == 0 and want in r.stdout, "plan between nodes %r: rc %d, stdout %r, stderr %r" %
                   (extra, r.returncode, r.stdout[-400:], r.stderr))
        # Weights replicated on both nodes (HSDP) to TP 8: the exchange's senders on the
        # receiver's node ("node_ranks"), shown, written, and run with every element checked.
        # The measured profile can price the all-to-all in groups of a node below the exchange
        # (it did on a build at -O0): here the exchange costs nothing but its bytes.
        exchange_first = os.path.join(tmp, "exchange_first.json")
        with open(exchange_first, "w") as f:
            ops = dict((prof or {}).get("ops", {}), exchange={"latency_s": 0, "per_peer_s": 0, "per_byte_s": 1e-12})
            f.write(json.dumps(dict(prof or {}, ops=ops, nodes=two_nodes)))
        hsdp = ["--mesh", "{dp: 2, fsdp: 4}", "--from", "[{fsdp}64, 32]", "--to-mesh", "{tp: 8}", "--to",
                "[64, {tp}32]", "--profile", exchange_first]
        r = run(redist, ["plan"] + hsdp)
        expect(r.returncode == 0 and "senders on its node first, nodes of 4 ranks" in r.stdout,
               "plan hsdp by node: rc %d, stdout %r, stderr %r" % (r.returncode, r.stdout[-400:], r.stderr))
        r = run(redist, ["plan", "--json"] + hsdp)
        expect(r.returncode == 0 and [s.get("node_ranks") for s in json.loads(r.stdout)["steps"]] == [4],
               "plan --json hsdp by node: rc %d, stdout %r" % (r.returncode, r.stdout[-400:]))
        r = run(redist, ["run", "--backend", "host", "--verify"] + hsdp)
        expect(r.returncode == 0, "run hsdp by node: rc %d, stdout %r, stderr %r" % (r.returncode, r.stdout[-400:], r.stderr))
        with open(bad, "w") as f:
            f.write(json.dumps(dict(prof or {}, nodes={"ranks": 0, "per_byte_s": 1e-9})))
        r = run(redist, between + ["--profile", bad])
        expect(one_error_line(r) and r.stderr == "redist: error: --profile: time profile JSON: nodes.ranks: expected an "
               "integer >= 1 (world ranks per node), found 0\n", "bad nodes: rc %d, stderr %r" % (r.returncode, r.stderr))
        r = run(redist, ["calibrate", "--backend", "host", "--devices", "2", "--out", os.path.join(missing, "x")])
        expect(one_error_line(r) and "--out: cannot write the file" in r.stderr,
               "calibrate --out into a missing folder: rc %d, stderr %r" % (r.returncode, r.stderr))
    r = run(redist, ["calibrate", "--backend", "host", "--node-ranks", "2"])
    expect(one_error_line(r) and "--node-ranks: only for --backend mpi" in r.stderr,
           "calibrate --backend host --node-ranks 2: %r" % r.stderr)
    r = run(redist, ["calibrate", "--backend", "host", "--devices", "0"])
    expect(one_error_line(r) and "--devices: expected 1 to 64" in r.stderr, "calibrate --devices 0: %r" % r.stderr)
    r = run(redist, ["calibrate", "--backend", "host", "--devices", "2", "--sizes", "64,0"])
    expect(one_error_line(r) and "--sizes: expected sizes of 1 to 4194304 KiB per rank" in r.stderr,
           "calibrate --sizes 64,0: %r" % r.stderr)
    r = run(redist, ["plan"] + GOOD + ["--profile", "built-in", "--baseline", "naive"])
    expect(r.returncode == 2, "--profile with --baseline: rc %d, stderr %r" % (r.returncode, r.stderr))
    # --exchange is the MPI backend's: refused on the host backend, and an unknown way by CLI11.
    manifest = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reshard_manifest.json")
    for argv in (["run", "--backend", "host", "--mesh", "{x: 4}", "--from", "[{x}8]", "--to", "[8]"],
                 ["reshard", "run", "--backend", "host", "--manifest", manifest]):
        r = run(redist, argv + ["--exchange", "packed"])
        expect(one_error_line(r) and r.stderr == "redist: error: --exchange: only for --backend mpi\n",
               "%s --exchange packed on host: rc %d, stderr %r" % (argv[0], r.returncode, r.stderr))
        r = run(redist, argv + ["--exchange", "rdma"])
        expect(r.returncode == 2 and "--exchange" in r.stderr,
               "%s --exchange rdma: rc %d, stderr %r" % (argv[0], r.returncode, r.stderr))


if __name__ == "__main__":
    sys.exit(main())
