#!/usr/bin/env python3
"""ctest driver for the peer corpus (tests/peers/cases.json, described in README.md).

Every case is a reshard translated by hand from a peer's public test suite (XLA's SPMD
partitioner, Shardy's reshard-to-collectives, PyTorch DTensor's redistribute) together with the
collectives that peer emits. For every case this driver

  * runs `redist run --backend host ... --verify`: it must exit 0 and report every element of
    every target tile checked ("verify: OK, N elements checked", N at least the array's size);
  * runs `redist plan --json` and checks the program: the independent checker
    tests/tools/check_program.py follows its boxes step by step (well-formed groups, indices and
    permutations, every rank ends on its target tile, costs and memory bound), the program
    states the meshes of the case (source and target, with the world ranks they lie on: format
    redist-program/2 on device sets), its world, global shape and element size, and its steps
    are counted by kind (communicating or local).

It asserts nothing about how the plan compares with the peer: benchmarks/peer_table.py reports
that (fewer / same / more collectives). Before anything runs, the case file is checked
(format, fields, unique ids, known peers and collective kinds); a malformed entry fails the
test, and the self-check makes sure the validator rejects corrupted entries.

Usage: test_peers.py --redist build/tools/redist [--cases tests/peers/cases.json] [--only SUBSTRING]
"""

import argparse
import copy
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import check_program as cp  # noqa: E402

FORMAT = "redist-peer-corpus/1"
PEERS = ("xla", "shardy", "dtensor")
# The peers' collectives, and whether each communicates; a case file must list exactly these.
KINDS = {
    "all-gather": "collective",
    "all-to-all": "collective",
    "all-reduce": "collective",
    "reduce-scatter": "collective",
    "collective-permute": "collective",
    "dynamic-slice": "local",
    "sharded-to-unreduced": "local",
    "replicated-to-unreduced": "local",
}
NOTATIONS = ("redist", "jax", "dtensor", "xla", "shardy")
# Notations whose `from` and `to` place their own meshes (XLA HloSharding text, Shardy's mesh then
# sharding): their cases have no "mesh" / "to_mesh".
PLACING = ("xla", "shardy")
# redist program ops: communicating or local (an exchange is one collective).
REDIST_OPS = {
    "allgather": "collective",
    "alltoall": "collective",
    "allpermute": "collective",
    "allreduce": "collective",
    "reducescatter": "collective",
    "exchange": "collective",
    "dynslice": "local",
    "partial": "local",
}
REQUIRED = {
    "id": str,
    "peer": str,
    "source_test": str,
    "source_file": str,
    "notation": str,
    "from": str,
    "to": str,
    "bytes": int,
    "peer_collectives": list,
    "exact": bool,
}
OPTIONAL = {"mesh": str, "to_mesh": str, "world": int, "shape": list, "note": str, "peer_mesh": str, "peer_from": str, "peer_to": str, "peer_shape": list}


class CaseError(Exception):
    pass


def validate(doc):
    """Check the whole case file; raise CaseError naming the first bad entry and field."""
    if not isinstance(doc, dict):
        raise CaseError("the case file must hold a JSON object")
    if doc.get("format") != FORMAT:
        raise CaseError("format must be %r, found %r" % (FORMAT, doc.get("format")))
    if doc.get("collective_kinds") != KINDS:
        raise CaseError("collective_kinds must be exactly %s" % json.dumps(KINDS))
    cases = doc.get("cases")
    if not isinstance(cases, list) or not cases:
        raise CaseError("cases must be a non-empty list")
    seen = set()
    for n, c in enumerate(cases):
        where = "cases[%d]" % n
        if not isinstance(c, dict):
            raise CaseError("%s: not an object" % where)
        if isinstance(c.get("id"), str):
            where += " (%s)" % c["id"]
        for key, typ in REQUIRED.items():
            if key not in c:
                raise CaseError("%s: missing field %r" % (where, key))
            if not isinstance(c[key], typ) or (typ is int and isinstance(c[key], bool)):
                raise CaseError("%s: %r must be a %s" % (where, key, typ.__name__))
        for key in c:
            if key not in REQUIRED and key not in OPTIONAL:
                raise CaseError("%s: unknown field %r" % (where, key))
            if key in OPTIONAL and (not isinstance(c[key], OPTIONAL[key])
                                    or (OPTIONAL[key] is int and isinstance(c[key], bool))):
                raise CaseError("%s: %r must be a %s" % (where, key, OPTIONAL[key].__name__))
        if c["id"] in seen:
            raise CaseError("%s: duplicate id" % where)
        seen.add(c["id"])
        if c["peer"] not in PEERS:
            raise CaseError("%s: unknown peer %r (one of %s)" % (where, c["peer"], ", ".join(PEERS)))
        if not c["id"].startswith(c["peer"] + "/"):
            raise CaseError("%s: the id must start with the peer's name and '/'" % where)
        if not c["source_test"].strip():
            raise CaseError("%s: empty source_test" % where)
        for k, kind in enumerate(c["peer_collectives"]):
            if kind not in KINDS:
                raise CaseError("%s: peer_collectives[%d]: unknown collective kind %r (one of %s)"
                                % (where, k, kind, ", ".join(KINDS)))
        if c["notation"] not in NOTATIONS:
            raise CaseError("%s: unknown notation %r" % (where, c["notation"]))
        if c["notation"] in PLACING:
            for key in ("mesh", "to_mesh"):
                if key in c:
                    raise CaseError("%s: the %s notation places its own meshes: no %r" % (where, c["notation"], key))
        elif "mesh" not in c:
            raise CaseError("%s: missing field 'mesh'" % where)
        if "world" in c and c["world"] < 1:
            raise CaseError("%s: world must be at least 1" % where)
        if c["bytes"] < 1:
            raise CaseError("%s: bytes must be at least 1" % where)
        shape = c.get("shape")
        if c["notation"] != "redist" and shape is None:
            raise CaseError("%s: the %s notation needs a shape" % (where, c["notation"]))
        if shape is not None and (not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1
                                                       for d in shape)):
            raise CaseError("%s: shape must list positive integers" % where)
    return cases


def self_check(doc):
    """The validator must reject corrupted entries (so a typo in the corpus cannot pass)."""
    good = doc["cases"][0]
    corruptions = [
        ("unknown peer", lambda c: c.__setitem__("peer", "mesh-tensorflow")),
        ("unknown collective kind", lambda c: c.__setitem__("peer_collectives", ["all-gather", "all-scatter"])),
        ("collective kind of the wrong type", lambda c: c.__setitem__("peer_collectives", [3])),
        ("missing exact", lambda c: c.pop("exact")),
        ("exact not a boolean", lambda c: c.__setitem__("exact", "yes")),
        ("unknown field", lambda c: c.__setitem__("expected", [])),
        ("unknown notation", lambda c: c.__setitem__("notation", "mlir")),
        ("missing mesh", lambda c: c.pop("mesh")),
        ("a mesh with a notation that places its own", lambda c: c.update(notation="shardy", shape=[4])),
        ("to_mesh with a notation that places its own",
         lambda c: (c.pop("mesh"), c.update(notation="xla", shape=[4], to_mesh="{x: 2}"))),
        ("to_mesh not a string", lambda c: c.__setitem__("to_mesh", ["x", 2])),
        ("world zero", lambda c: c.__setitem__("world", 0)),
        ("world a boolean", lambda c: c.__setitem__("world", True)),
        ("bytes zero", lambda c: c.__setitem__("bytes", 0)),
        ("bad shape", lambda c: c.__setitem__("shape", [4, 0])),
    ]
    for what, corrupt in corruptions:
        bad = copy.deepcopy(doc)
        corrupt(bad["cases"][0])
        try:
            validate(bad)
        except CaseError:
            continue
        raise CaseError("self-check: the validator accepted a case with %s" % what)
    bad = copy.deepcopy(doc)
    bad["cases"].append(copy.deepcopy(good))
    try:
        validate(bad)
    except CaseError:
        pass
    else:
        raise CaseError("self-check: the validator accepted a duplicate id")
    bad = copy.deepcopy(doc)
    bad["collective_kinds"] = dict(KINDS, **{"all-scatter": "collective"})
    try:
        validate(bad)
    except CaseError:
        pass
    else:
        raise CaseError("self-check: the validator accepted an unknown kind in collective_kinds")


def problem_args(c):
    """The redist options stating the case's problem."""
    a = []
    for key, option in (("mesh", "--mesh"), ("to_mesh", "--to-mesh"), ("world", "--world")):
        if key in c:
            a += [option, str(c[key])]
    a += ["--bytes", str(c["bytes"])]
    if c["notation"] == "redist":
        a += ["--from", c["from"], "--to", c["to"]]
    else:
        a += ["--from-" + c["notation"], c["from"], "--to-" + c["notation"], c["to"]]
    if c["notation"] != "redist":
        a += ["--shape", json.dumps(c["shape"])]
    return a


def placed_mesh(text):
    """`{x: 2, y: 2}` or `{x: 2, y: 2} @ [3, 2, 1, 0]`: ([(axis, size)], device list or None for 0..D-1)."""
    m = re.fullmatch(r"\s*(\{.*\})\s*(?:@\s*\[([^\]]*)\])?\s*", text, re.S)
    if not m:
        raise cp.CheckError("cannot read the mesh %r" % text)
    mesh = cp.parse_mesh(m.group(1))
    devices = [int(x) for x in m.group(2).split(",") if x.strip()] if m.group(2) is not None else None
    return [(n, mesh.sizes[n]) for n in mesh.names], devices


SHARDY_MESH = re.compile(r'sdy\.mesh\s+@[\w.$-]+\s*=\s*(?:#sdy\.mesh)?<\s*\[([^\]]*)\]'
                         r'(?:\s*,\s*device_ids\s*=\s*\[([^\]]*)\])?\s*>')


def shardy_mesh(text):
    """The mesh of `sdy.mesh @name = <["x"=2, ...], device_ids=[...]> #sdy.sharding<...>`, read here
    independently of redist: ([(axis, size)], device_ids or None)."""
    m = SHARDY_MESH.search(text)
    if not m:
        raise cp.CheckError("no sdy.mesh in %r" % text)
    axes = [(n, int(k)) for n, k in re.findall(r'"([^"]+)"\s*=\s*(\d+)', m.group(1))]
    devices = [int(x) for x in m.group(2).split(",") if x.strip()] if m.group(2) is not None else None
    return axes, devices


def xla_devices(text, world):
    """The devices an XLA HloSharding puts the array on, as a sorted list (redist names XLA's mesh
    axes itself, so only the device set is compared): `maximal device=N`, `replicated` (all of
    `world`), or the tile assignment (`<=[..]` iota, possibly transposed, or explicit ids)."""
    m = re.search(r"maximal\s+device\s*=\s*(\d+)", text)
    if m:
        return [int(m.group(1))]
    m = re.search(r"devices\s*=\s*\[([\d,\s]+)\]\s*(<=)?\s*([\d,\s]*)", text)
    if m:
        dims = [int(x) for x in m.group(1).split(",")]
        if m.group(2):
            return list(range(math.prod(dims)))
        return sorted(int(x) for x in m.group(3).split(",") if x.strip())
    if "replicated" in text:
        if world is None:
            raise cp.CheckError("%r: replicated over how many devices? (give the case a world)" % text)
        return list(range(world))
    raise cp.CheckError("cannot read the XLA sharding %r" % text)


def check_meshes(c, prog):
    """The program states the case's meshes: source mesh and devices, target mesh and devices, world
    (format 1 is one mesh on ranks 0..D-1)."""
    mesh = [tuple(a) for a in prog["mesh"]]
    devices = prog.get("devices", list(range(math.prod(n for _, n in mesh))))
    target = [tuple(a) for a in prog.get("target_mesh", prog["mesh"])]
    target_devices = prog.get("target_devices", devices)
    world = prog.get("world", len(devices))
    if "world" in c and world != c["world"]:
        raise cp.CheckError("the program's world is %d, the case asks for %d" % (world, c["world"]))
    if c["notation"] == "xla":
        for side, text, got in (("source", c["from"], devices), ("target", c["to"], target_devices)):
            want = xla_devices(text, c.get("world", world))
            if sorted(got) != want:
                raise cp.CheckError("the program's %s devices %s are not those of %r (%s)" % (side, got, text, want))
        return
    if c["notation"] == "shardy":
        want_src, want_tgt = shardy_mesh(c["from"]), shardy_mesh(c["to"])
    else:
        want_src = placed_mesh(c["mesh"])
        want_tgt = placed_mesh(c["to_mesh"]) if "to_mesh" in c else want_src
    for side, (axes, ids), got_axes, got_ids in (("source", want_src, mesh, devices),
                                                  ("target", want_tgt, target, target_devices)):
        if ids is None:
            ids = list(range(math.prod(n for _, n in axes)))
        if got_axes != axes or got_ids != ids:
            raise cp.CheckError("the program's %s mesh %s on devices %s is not the case's %s on %s"
                                % (side, got_axes, got_ids, axes, ids))


def count_steps(prog):
    """(collectives, local steps, ops by kind) of a redist program."""
    kinds = {}
    for k, step in enumerate(prog["steps"]):
        op = step.get("op")
        if op not in REDIST_OPS:
            raise cp.CheckError("steps[%d]: unknown op %r" % (k, op))
        kinds[op] = kinds.get(op, 0) + 1
    coll = sum(n for op, n in kinds.items() if REDIST_OPS[op] == "collective")
    return coll, sum(kinds.values()) - coll, kinds


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


def check_case(redist, c):
    """Run and plan one case; return a one-line summary or raise cp.CheckError."""
    args = problem_args(c)
    r = run([redist, "run", "--backend", "host", "--verify"] + args)
    if r.returncode != 0:
        raise cp.CheckError("redist run exited %d: %s" % (r.returncode, (r.stderr or r.stdout).strip()[-400:]))
    m = re.search(r"verify: OK, (\d+) elements checked", r.stdout)
    if not m:
        raise cp.CheckError("redist run --verify did not report a successful check:\n%s" % r.stdout[-400:])
    p = run([redist, "plan", "--json"] + args)
    if p.returncode != 0:
        raise cp.CheckError("redist plan exited %d: %s" % (p.returncode, p.stderr.strip()))
    try:
        prog = json.loads(p.stdout)
    except ValueError as e:
        raise cp.CheckError("redist plan --json printed no JSON: %s" % e)
    cp.check(prog)
    shape = prog["global_shape"]
    if c.get("shape") is not None and shape != c["shape"]:
        raise cp.CheckError("the program's global_shape %s is not the case's shape %s" % (shape, c["shape"]))
    if prog["element_bytes"] != c["bytes"]:
        raise cp.CheckError("the program's element_bytes %s, the case asks for %d" % (prog["element_bytes"], c["bytes"]))
    check_meshes(c, prog)
    checked = int(m.group(1))
    if checked < math.prod(shape):
        raise cp.CheckError("verify checked %d elements, fewer than the array's %d" % (checked, math.prod(shape)))
    coll, local, kinds = count_steps(prog)
    peer = sum(1 for k in c["peer_collectives"] if KINDS[k] == "collective")
    return "%d collective(s) + %d local (%s); peer %d%s" % (
        coll, local, ", ".join("%s %d" % kv for kv in sorted(kinds.items())) or "no steps", peer,
        "" if c["exact"] else " (not exact)")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redist", required=True, help="path of the redist command-line tool")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.json"))
    ap.add_argument("--only", default="", help="run only the cases whose id contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    a = ap.parse_args(argv)
    with open(a.cases) as f:
        doc = json.load(f)
    try:
        cases = validate(doc)
        self_check(doc)
    except CaseError as e:
        print("FAIL %s: %s" % (a.cases, e))
        return 1
    failures, done, per_peer = [], 0, {}
    for c in cases:
        if a.only not in c["id"]:
            continue
        try:
            line = check_case(a.redist, c)
        except (cp.CheckError, KeyError, TypeError, ValueError) as e:
            failures.append(c["id"])
            print("FAIL %s: %s" % (c["id"], e))
            continue
        done += 1
        per_peer[c["peer"]] = per_peer.get(c["peer"], 0) + 1
        if a.verbose:
            print("ok   %s: %s" % (c["id"], line))
    print("%d cases verified on the host backend and checked as programs (%s); %d failed" % (
        done, ", ".join("%s %d" % kv for kv in sorted(per_peer.items())), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
