#!/usr/bin/env python3
"""`redist calibrate --backend mpi` times the exchanges in each way the MPI backend can move
them (backends/mpi_exchange.hpp) and records the fastest in the profile's "mpi" object; `redist
run` and `redist reshard run` with that --profile move exchanges that way, and --exchange
overrides it. Every run verifies every element.

  test_calibrate_mpi.py --redist BUILD/tools/redist --launcher=mpiexec --launcher=-np --launcher=4 ...

The launcher must start 4 ranks. Exit status 0 when every check holds; each failure is one line.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

WAYS = ["single-copy", "alltoallw", "packed"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redist", required=True)
    ap.add_argument("--launcher", action="append", default=[], help="one word of the MPI launcher (repeat)")
    args = ap.parse_args()
    failures = []

    def expect(ok, what):
        if not ok:
            failures.append(what)
            print("FAILED: " + what)

    def run(argv):
        return subprocess.run(args.launcher + [args.redist] + argv, capture_output=True, text=True, timeout=240)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mpi.json")
        # Small tiles: 16 and 128 KiB per rank (a few seconds on 4 oversubscribed ranks).
        r = run(["calibrate", "--backend", "mpi", "--sizes", "16,128", "--out", path])
        expect(r.returncode == 0, "calibrate: rc %d\n%s%s" % (r.returncode, r.stdout[-800:], r.stderr[-800:]))
        chosen = None
        try:
            with open(path) as f:
                prof = json.load(f)
            mpi = prof["mpi"]
            chosen = mpi["exchange"]
            g = mpi["geomean_s"]
            expect(sorted(g) == sorted(WAYS) and all(isinstance(g[w], (int, float)) and g[w] > 0 for w in WAYS),
                   "calibrate: geomean_s %r" % g)
            expect(chosen in WAYS and g[chosen] == min(g.values()), "calibrate: chose %r of %r" % (chosen, g))
            ov = prof["overlap"]
            expect(isinstance(ov, (int, float)) and 0 <= ov <= 1, "calibrate: overlap %r" % ov)
            expect(re.search(r"overlap: [01]\.\d\d of a message round's transfer hides a copy", r.stdout) is not None,
                   "calibrate's table has no overlap line: %r" % r.stdout[-600:])
            m = re.search(r"exchanges on MPI, geometric mean over (\d+) programs: single-copy [0-9.]+ us, "
                          r"alltoallw [0-9.]+ us, packed [0-9.]+ us; chosen: ([a-z-]+)", r.stdout)
            # 4 ranks: meshes {x: 2, y: 2} and {x: 4, y: 1}, 3 exchanges and the 2-D grid (on
            # the second, one exchange is no move and the grid needs two axes), 2 sizes.
            expect(m is not None and m.group(1) == "12" and m.group(2) == chosen,
                   "calibrate's table: %r" % r.stdout[-600:])
            # One node (every rank shares memory): no link measured, no "nodes".
            expect("nodes" not in prof and "link:" not in r.stdout, "calibrate on one node: %r" % prof.get("nodes"))
        except (OSError, ValueError, KeyError, TypeError) as e:
            expect(False, "calibrate: no profile with an \"mpi\" object (%s)" % e)
        # Two nodes of 2 ranks named on the command line: the link measured, one sample a size.
        two = os.path.join(d, "two.json")
        r = run(["calibrate", "--backend", "mpi", "--sizes", "16", "--node-ranks", "2", "--out", two])
        try:
            with open(two) as f:
                nodes = json.load(f)["nodes"]
            expect(r.returncode == 0 and nodes["ranks"] == 2 and isinstance(nodes["per_byte_s"], (int, float)) and
                   nodes["per_byte_s"] >= 0, "calibrate --node-ranks 2: rc %d, nodes %r" % (r.returncode, nodes))
            # One machine: the "link" may cost nothing beyond the per-rank terms.
            expect(re.search(r"link: [0-9.]+ ns per byte the busiest node's link carries \(([0-9.]+ Gbit/s|no cost "
                             r"beyond a node's own)\), nodes of 2 ranks, 1 samples", r.stdout) is not None,
                   "calibrate --node-ranks 2: %r" % r.stdout[-600:])
        except (OSError, ValueError, KeyError, TypeError) as e:
            expect(False, "calibrate --node-ranks 2: no \"nodes\" (%s); rc %d, stderr %r" % (e, r.returncode, r.stderr[-600:]))
        r = run(["calibrate", "--backend", "mpi", "--node-ranks", "4"])
        expect(r.returncode != 0 and "redist: error: --node-ranks: expected 1 to 3 ranks per node (two nodes or more of "
               "the 4 ranks)" in r.stderr, "calibrate --node-ranks 4 on 4 ranks: rc %d, stderr %r" % (r.returncode, r.stderr))
        if chosen is None:
            return 1

        def moved(out, way):
            # Single copy needs the kernel's leave (cross-memory attach): without it, MPI_Alltoallw.
            m = re.search(r"backend mpi \(exchanges: ([a-z-]+)\)", out)
            return m is not None and (m.group(1) == way or (way == "single-copy" and m.group(1) == "alltoallw"))

        problem = ["--mesh", "{x: 4}", "--from", "[{x}64, 32]", "--to", "[64, {x}32]", "--verify"]
        r = run(["run", "--backend", "mpi", "--profile", path] + problem)
        expect(r.returncode == 0 and moved(r.stdout, chosen) and "verify: OK, 2048 elements checked on 4 ranks" in r.stdout,
               "run --profile (%s): rc %d\n%s%s" % (chosen, r.returncode, r.stdout[-600:], r.stderr[-600:]))
        for way in WAYS:
            r = run(["run", "--backend", "mpi", "--profile", path, "--exchange", way] + problem)
            expect(r.returncode == 0 and moved(r.stdout, way) and "verify: OK" in r.stdout,
                   "run --exchange %s: rc %d\n%s%s" % (way, r.returncode, r.stdout[-600:], r.stderr[-600:]))

        manifest = os.path.join(d, "four.json")
        with open(manifest, "w") as f:
            json.dump({"format": "redist-reshard/1", "world": 4, "meshes": {"m": "{x: 4}", "h": "{x: 2} @ [2, 3]"},
                       "arrays": [
                           {"name": "w", "shape": [64, 48], "dtype": "f32", "source": {"mesh": "m", "type": "[{x}64, 48]"},
                            "target": {"mesh": "m", "type": "[64, {x}48]"}},
                           {"name": "b", "shape": [40], "dtype": "i64", "source": {"mesh": "m", "type": "[{x}40]"},
                            "target": {"mesh": "h", "type": "[{x}40]"}}]}, f)
        r = run(["reshard", "run", "--backend", "mpi", "--manifest", manifest, "--profile", path, "--verify"])
        expect(r.returncode == 0 and moved(r.stdout, chosen) and "verified: 3112 elements, 0 wrong" in r.stdout,
               "reshard run --profile (%s): rc %d\n%s%s" % (chosen, r.returncode, r.stdout[-600:], r.stderr[-600:]))
        r = run(["reshard", "run", "--backend", "mpi", "--manifest", manifest, "--exchange", "packed", "--verify"])
        expect(r.returncode == 0 and moved(r.stdout, "packed") and "verified: 3112 elements, 0 wrong" in r.stdout,
               "reshard run --exchange packed: rc %d\n%s%s" % (r.returncode, r.stdout[-600:], r.stderr[-600:]))

    print("calibrate on MPI: %s; %d failures" % ("chose " + chosen, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
