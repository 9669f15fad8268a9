#!/usr/bin/env python3
"""benchmarks/peer_table.py -- redist's plans against the peers' collectives on the peer corpus.

For every case of tests/peers/cases.json (reshards translated from the public tests of XLA's SPMD
partitioner, Shardy and PyTorch DTensor, see tests/peers/README.md) it runs `redist plan --json`
and counts the plan's communicating steps: allgather, alltoall, allpermute, allreduce,
reducescatter and exchange count one each, a dynslice is local and does not count. The peer's
count is its list of collectives without the local ones (`local` in the file's collective_kinds:
dynamic-slice, sharded-to-unreduced, replicated-to-unreduced). It prints, as Markdown:

  * one table with a row per peer: the cases, those whose peer count is exact (read from the
    test's CHECK lines or counters), and over the exact ones how many plans have fewer / the same /
    more collectives than the peer, the collectives summed over them, and how many plans use one
    all-reduce where the peer reduces pending values with one (XLA's all-reduce that broadcasts a
    single device's value, the zeros of the others added to it, is not a reduction: redist
    plans those as one exchange);
  * per peer, the exact cases where the plan has more collectives: id, the peer's sequence and
    redist's (local steps in parentheses);
  * with --peer-sequence (build/benchmarks/peer_sequence), per peer over the exact cases on one
    mesh: how many chosen plans are predicted no slower than the peer's sequence under the same
    profile (the built-in one; peer_sequence.cpp lowers every weak path with the peer's
    collectives in order, runs of all-gathers or all-to-alls fused, and keeps the fastest), with
    the peer's memory and within redist's bound, the geomean of peer / redist, and the cases
    predicted slower with the reason (uneven shapes, the peer's memory).

Options it does not know are passed to `redist plan` (for instance `--profile FILE`), so that two
runs compare the planner before and after a change.

Usage: peer_table.py --redist build/tools/redist [--cases tests/peers/cases.json]
                     [--peer-sequence build/benchmarks/peer_sequence] [redist plan options...]
Python 3 standard library only.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "peers"))
# The corpus test's peers, its classification of redist's ops and its problem options.
from test_peers import PEERS, REDIST_OPS, problem_args  # noqa: E402

PEER_NAMES = {"xla": "XLA SPMD partitioner", "shardy": "Shardy", "dtensor": "PyTorch DTensor"}
LOCAL_OPS = {op for op, kind in REDIST_OPS.items() if kind == "local"}


def plan_ops(redist, c, extra):
    cmd = [redist, "plan", "--json"] + problem_args(c) + extra
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise SystemExit("peer_table.py: %s: redist plan exited %d: %s" % (c["id"], r.returncode, r.stderr.strip()))
    prog = json.loads(r.stdout)
    ops = [s["op"] for s in prog["steps"]]
    for op in ops:
        if op not in REDIST_OPS:
            raise SystemExit("peer_table.py: %s: unknown op %r in the plan" % (c["id"], op))
    return ops, prog


def one_mesh(prog):
    """The plan's mesh in redist's syntax, or None when its target lies on another mesh or
    either side is a box layout (the peer-sequence pricing takes one mesh and two types)."""
    if "target_mesh" in prog and (prog["target_mesh"] != prog["mesh"] or prog["target_devices"] != prog["devices"]):
        return None
    if not isinstance(prog["source"], str) or not isinstance(prog["target"], str):
        return None
    return "{%s}" % ", ".join("%s: %d" % (name, size) for name, size in prog["mesh"])


def price(tool, jobs):
    """(chosen seconds, peer seconds, peer seconds within redist's memory bound, uneven) per job
    (mesh, from, to, peer kinds); None where no program has the peer's collectives."""
    if not jobs:
        return []
    text = "".join("%s\t%s\t%s\t%s\n" % (m, a, b, ",".join(k)) for m, a, b, k in jobs)
    r = subprocess.run([tool], input=text, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise SystemExit("peer_table.py: peer_sequence exited %d: %s" % (r.returncode, r.stderr.strip()))
    out = []
    for line in r.stdout.splitlines():
        chosen, peer, bounded, uneven = line.split("\t")
        out.append((float(chosen), None if peer == "-" else float(peer), None if bounded == "-" else float(bounded),
                    uneven == "1"))
    return out


def pending_source(c):
    """The case's source holds pending values (a sum, max, ... the peer reduces)."""
    return any(w in c["from"] for w in ("sum{", "max{", "min{", "prod{", "avg{", "Partial", "unreduced"))


def seq(items, is_local):
    return ", ".join("(%s)" % x if is_local(x) else x for x in items) or "none"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redist", required=True, help="path of the redist command-line tool")
    ap.add_argument("--cases", default=os.path.join(HERE, "..", "tests", "peers", "cases.json"))
    ap.add_argument("--peer-sequence", help="path of build/benchmarks/peer_sequence: price the peers' sequences")
    a, extra = ap.parse_known_args(argv)
    with open(a.cases) as f:
        doc = json.load(f)
    kinds = doc["collective_kinds"]
    rows, more, jobs = {}, {}, []
    for c in doc["cases"]:
        ops, prog = plan_ops(a.redist, c, extra)
        ours = sum(1 for op in ops if op not in LOCAL_OPS)
        theirs = sum(1 for k in c["peer_collectives"] if kinds[k] != "local")
        r = rows.setdefault(c["peer"], dict(cases=0, exact=0, fewer=0, same=0, more=0, peer_sum=0, ours_sum=0,
                                            ar_peer=0, ar_ours=0))
        r["cases"] += 1
        if c["peer_collectives"].count("all-reduce") == 1 and pending_source(c):
            r["ar_peer"] += 1
            r["ar_ours"] += ops.count("allreduce") == 1
        if not c["exact"]:
            continue
        r["exact"] += 1
        mesh = one_mesh(prog)
        if a.peer_sequence and mesh:
            jobs.append((c, (mesh, prog["source"], prog["target"], c["peer_collectives"])))
        r["peer_sum"] += theirs
        r["ours_sum"] += ours
        if ours < theirs:
            r["fewer"] += 1
        elif ours == theirs:
            r["same"] += 1
        else:
            r["more"] += 1
            more.setdefault(c["peer"], []).append((c["id"], seq(c["peer_collectives"], lambda k: kinds[k] == "local"),
                                                   seq(ops, lambda op: op in LOCAL_OPS)))
    out = []
    out.append("Peer corpus (%s): %d cases; collectives counted over the cases whose peer count is exact%s."
               % (os.path.relpath(a.cases), len(doc["cases"]),
                  "; redist plan options: `%s`" % " ".join(extra) if extra else ""))
    out.append("")
    out.append("| peer | cases | exact | fewer | same | more | collectives: peer / redist | one all-reduce where the peer reduces with one |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    total = dict(cases=0, exact=0, fewer=0, same=0, more=0, peer_sum=0, ours_sum=0, ar_peer=0, ar_ours=0)
    for p in PEERS + tuple(sorted(set(rows) - set(PEERS))):
        if p not in rows:
            continue
        r = rows[p]
        for k in total:
            total[k] += r[k]
        out.append("| %s | %d | %d | %d | %d | %d | %d / %d | %d of %d |" % (
            PEER_NAMES.get(p, p), r["cases"], r["exact"], r["fewer"], r["same"], r["more"], r["peer_sum"],
            r["ours_sum"], r["ar_ours"], r["ar_peer"]))
    r = total
    out.append("| **all** | %d | %d | %d | %d | %d | %d / %d | %d of %d |" % (
        r["cases"], r["exact"], r["fewer"], r["same"], r["more"], r["peer_sum"], r["ours_sum"], r["ar_ours"], r["ar_peer"]))
    for p in PEERS:
        if not more.get(p):
            continue
        out.append("")
        out.append("%s: plans with more collectives than the peer (local steps in parentheses)" % PEER_NAMES[p])
        out.append("")
        out.append("| case | peer | redist |")
        out.append("| --- | --- | --- |")
        for cid, theirs, ours in more[p]:
            out.append("| %s | %s | %s |" % (cid, theirs, ours))
    if a.peer_sequence:
        out += time_table(jobs, price(a.peer_sequence, [j for _, j in jobs]))
    print("\n".join(out))
    return 0


def time_table(jobs, priced):
    """Predicted time of the chosen plan against the peer's sequence, per peer."""
    rows, slower = {}, []
    for (c, _), (ours, peer, bounded, uneven) in zip(jobs, priced):
        r = rows.setdefault(c["peer"], dict(cases=0, priced=0, ok=0, logs=[], bpriced=0, bok=0, uneven=0))
        r["cases"] += 1
        if bounded is not None:
            r["bpriced"] += 1
            r["bok"] += ours <= bounded * (1 + 1e-9)
        if peer is None:
            continue
        r["priced"] += 1
        if ours <= peer * (1 + 1e-9):
            r["ok"] += 1
        else:
            r["uneven"] += uneven
            why = ("the peer holds more than max(in, out)" if bounded is None or ours <= bounded * (1 + 1e-9)
                   else "uneven" if uneven else "")
            slower.append((c["id"], ours, peer, bounded, why))
        r["logs"].append(math.log(peer / ours) if ours > 0 and peer > 0 else 0.0)
    out = ["", "Predicted time under the built-in profile over the exact cases on one mesh: the chosen plan against "
               "the peer's sequence as redist lowers it (benchmarks/peer_sequence.cpp), with the peer's memory and "
               "within redist's bound, max(in, out) per rank.", "",
           "| peer | cases | priced | redist no slower | of those slower, uneven | geomean peer / redist "
           "| priced within the bound | redist no slower |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p in PEERS + tuple(sorted(set(rows) - set(PEERS))):
        if p not in rows:
            continue
        r = rows[p]
        gm = math.exp(sum(r["logs"]) / len(r["logs"])) if r["logs"] else float("nan")
        out.append("| %s | %d | %d | %d | %d | %.3f | %d | %d |" % (
            PEER_NAMES.get(p, p), r["cases"], r["priced"], r["ok"], r["uneven"], gm, r["bpriced"], r["bok"]))
    if slower:
        out += ["", "Predicted slower than the peer's sequence:", "",
                "| case | redist us | peer us | peer within the bound us | why |", "| --- | ---: | ---: | ---: | --- |"]
        out += ["| %s | %.2f | %.2f | %s | %s |" % (cid, ours * 1e6, peer * 1e6,
                                                   "-" if bounded is None else "%.2f" % (bounded * 1e6), why)
                for cid, ours, peer, bounded, why in slower]
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
