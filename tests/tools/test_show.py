#!/usr/bin/env python3
"""ctest driver for `redist show`, `redist convert`, `redist plan --svg` and the JAX / DTensor
notation options (--from-jax, --to-dtensor, --shape, --notation): exact pictures, the SVG
documents parsed as XML (xml.etree) and checked element by element, colour on a terminal (a
pseudo-terminal) but not in a pipe or under NO_COLOR, bad input (exit 1, one line naming the
option and the column) and usage errors (exit 2).

Usage: test_show.py --redist build/tools/redist
"""

import argparse
import json
import os
import pty
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from cli_checks import Checks, run

SVG = "{http://www.w3.org/2000/svg}"
MESH = ["--mesh", "{x: 2, y: 2}"]
GRID = [
    "mesh {x: 2, y: 2} | type [64{x}128, 32{y}64] | global [128, 64] | tile [64, 32] | local size 2048 elements",
    "    0  32  64",
    "  0 ┌───┬───┐",
    "    │ 0 │ 1 │",
    " 64 ├───┼───┤",
    "    │ 2 │ 3 │",
    "128 └───┴───┘",
]

# Shardy's mesh of 2 x 6 devices, whose y a sharding may cut into sub-axes in any order.
SHARDY_MESH = 'sdy.mesh @mesh = <["x"=2, "y"=6]>'

# Shardy's "y":(1)3 on y = 6 (y's 3 major, no run of redist's prime sub-axes 2 then 3) of 12 x 4:
# rows cut by the y coordinate c into c / 2, each block on the four ranks that differ along x
# and c % 2 only (replicas), a box layout.
SHARDY_BOXES = [
    "box layout on a world of 12 ranks | global [12, 4] | padded tile [4, 4] | local size 16 elements",
    "   0           4",
    " 0 ┌───────────┐",
    "   │  0,1,6,7  │",
    " 4 ├───────────┤",
    "   │  2,3,8,9  │",
    " 8 ├───────────┤",
    "   │ 4,5,10,11 │",
    "12 └───────────┘",
]

# DTensor [Shard(0), Shard(0)] of 10 x 5 on 2 x 2: nested chunks of 3, 2, 3, 2 rows, a box layout.
BOX_LAYOUT = [
    "box layout on a world of 4 ranks | global [10, 5] | padded tile [3, 5] | local size 15 elements",
    "   0   5",
    " 0 ┌───┐",
    "   │ 0 │",
    " 3 ├───┤",
    "   │ 1 │",
    " 5 ├───┤",
    "   │ 2 │",
    " 8 ├───┤",
    "   │ 3 │",
    "10 └───┘",
]

# (arguments, expected stderr line): bad input, exit 1, nothing on stdout.
BAD_INPUT = [
    (["show"] + MESH + ["--type", "[64{z}128]"],
     "redist: error: --type: unknown axis 'z' (the mesh declares x, y) (at column 5 of '[64{z}128]')"),
    (["show"] + MESH + ["--jax", "P('x', 'q')", "--shape", "[8, 8]"],
     "redist: error: --jax: unknown mesh axis 'q' (at column 8 of 'P('x', 'q')')"),
    (["show"] + MESH + ["--jax", "P('x',", "--shape", "[8]"],
     "redist: error: --jax: expected an axis name but the text ended (at column 7 of 'P('x',')"),
    (["show"] + MESH + ["--dtensor", "[Shard(2), Replicate()]", "--shape", "[8, 8]"],
     "redist: error: --dtensor: Shard(2) names no dimension of a 2-D array (at column 8 of '[Shard(2), Replicate()]')"),
    (["show"] + MESH + ["--dtensor", "[Shard(0)]", "--shape", "[8]"],
     "redist: error: --dtensor: there are 1 placements but the mesh has 2 axes; DTensor needs one per mesh dimension"),
    (["show"] + MESH + ["--jax", "P('x')", "--shape", "[8, 8"],
     "redist: error: --shape: expected ',' or ']' after a dimension but the text ended (at column 6 of '[8, 8')"),
    (["show"] + MESH + ["--jax", "P('x')", "--shape", "[4{x}8]"],
     "redist: error: --shape: expected a global shape such as '[256, 1024]', found the distributed type '[4{x}8]'"),
    (["show"] + MESH + ["--type", "[8]", "--svg", "/nonexistent-dir/a.svg"],
     "redist: error: --svg: cannot write the file '/nonexistent-dir/a.svg'"),
    (["show", "--mesh", "{x: 64, y: 128}", "--type", "[{x}64, {y}128]"],
     "redist: error: --type: the array is cut into 8192 boxes, too many to draw (at most 4096)"),
    (["plan"] + MESH + ["--from-jax", "P('x')", "--shape", "[8]", "--to-dtensor", "[Replicate(), Shard(1)]"],
     "redist: error: --to-dtensor: Shard(1) names no dimension of a 1-D array (at column 21 of '[Replicate(), Shard(1)]')"),
    (["plan"] + MESH + ["--from-jax", "P('x')", "--shape", "[8]", "--to", "[16]"],
     "redist: error: --to: global types differ: source is [8], target is [16]"),
    (["plan"] + MESH + ["--from", "[{x}8]", "--to-jax", "P('y')", "--shape", "[16]"],
     "redist: error: --to-jax: global types differ: source is [8], target is [16]"),
    # Meshes on device sets and the notations that place their meshes (XLA, Shardy).
    (["plan", "--mesh", "{x: 2} @ [0, 0]", "--from", "[8]", "--to", "[8]"],
     "redist: error: --mesh: device 0 is listed twice (positions 0 and 1) (at column 14 of '{x: 2} @ [0, 0]')"),
    (["plan", "--mesh", "{x: 2} @ [0, 5]", "--from", "[8]", "--to", "[8]", "--world", "4"],
     "redist: error: --world: device 5 (position 1) is not a rank of the world of 4 ranks"),
    (["plan", "--mesh", "{x: 2}", "--from", "[8]", "--to-mesh", "{y: 2} @ [2]", "--to", "[8]"],
     "redist: error: --to-mesh: the device list has 1 ranks but the mesh has 2 devices (at column 13 of '{y: 2} @ [2]')"),
    (["show", "--xla", "{devices=[2,2]0,1,2,2}", "--shape", "[8, 8]"],
     "redist: error: --xla: device 2 is listed twice (at column 21 of '{devices=[2,2]0,1,2,2}')"),
    (["plan", "--from-shardy", '#sdy.sharding<@mesh, [{"x"}]>', "--to", "[8]", "--shape", "[8]"],
     "redist: error: --from-shardy: the sharding names a mesh ('@...'): give the mesh ('sdy.mesh @mesh = <[...]>') "
     "before it"),
    (["plan"] + MESH + ["--from", "[8]", "--to", "[8]", "--svg", "/nonexistent-dir/p.svg"],
     "redist: error: --svg: cannot write the file '/nonexistent-dir/p.svg'"),
    # Box layouts (redist/box.hpp): --boxes refused in one line naming the ranks and the element or box.
    (["show", "--boxes", "[[[0, 3], [0, 4]], [[2, 8], [0, 4]]]", "--shape", "[8, 4]"],
     "redist: error: --boxes: box layout: ranks 0 and 1 both hold the element (2, 0) (boxes [0, 3) x [0, 4) and [2, 8) x [0, 4) "
     "overlap; replicas hold equal boxes)"),
    (["show", "--boxes", "[[[0, 3], [0, 4]], null, [[3, 8], [0, 3]]]", "--shape", "[8, 4]"],
     "redist: error: --boxes: box layout: no rank holds the element (3, 3) (the boxes leave it uncovered)"),
    (["show", "--boxes", "[[[0, 3], [0, 4]], [[3, 9], [0, 4]]]", "--shape", "[8, 4]"],
     "redist: error: --boxes: box layout: rank 1's box [3, 9) x [0, 4) is not inside the array [0, 8) x [0, 4)"),
    (["show", "--boxes", "[[[0, 3], [0, 4]], [[3, 8]]]", "--shape", "[8, 4]"],
     "redist: error: --boxes: [1]: has 1 ranges, expected one per dimension (2)"),
    # --from-boxes / --to-boxes: a box layout as JSON, checked.
    (["plan", "--from-boxes", "[[[0, 3], [0, 5]], [[2, 10], [0, 5]]]", "--to", "[10, 5]", "--to-mesh", "{x: 2}",
      "--shape", "[10, 5]"],
     "redist: error: --from-boxes: box layout: ranks 0 and 1 both hold the element (2, 0) (boxes [0, 3) x [0, 5) and "
     "[2, 10) x [0, 5) overlap; replicas hold equal boxes)"),
    (["plan", "--from", "[10, 5]", "--mesh", "{x: 2}", "--to-boxes", "[[[0, 10], [0, 5]]]", "--shape", "[10, 5]"],
     "redist: error: --to-boxes: the box layout lists 1 entries, the world has 2 ranks (one box or null per rank)"),
    # A box layout (redist/box.hpp) holds values, not partial ones.
    (["plan", "--from-shardy", SHARDY_MESH + ' #sdy.sharding<@mesh, [{"y":(1)3}], unreduced={"x"}>', "--shape", "[6]",
      "--to", "[6]"],
     "redist: error: --from-shardy: unreduced={...}: a box layout holds values, not partial ones (reduce them first)"),

    (["convert"] + MESH + ["--type", "[{x}8] min{y}", "--to", "jax"],
     "redist: error: --to: the type has no JAX PartitionSpec: pending min values have no PartitionSpec (JAX's unreduced "
     "axes are pending sums)"),
    (["convert", "--mesh", "{x: 4}", "--type", "[4{x:(1)2}8]", "--to", "dtensor"],
     "redist: error: --to: the type has no DTensor placements: dimension 0 is split by a sub-axis, which placements cannot name"),
    (["show", "--xla", "{mesh['x'=2,'y'=2], [{'x'}, {}], manual={'y'}}", "--shape", "[8, 8]"],
     "redist: error: --xla: manual axes (manual, manual={...}) are not read: a redist type lays out a global array, not "
     "per-device values (at column 34 of '{mesh['x'=2,'y'=2], [{'x'}, {}], manual={'y'}}')"),
    (["plan", "--from-xla", "{mesh['x'=2,'y'=2], [{'z'}, {}]}", "--to", "[8, 8]", "--shape", "[8, 8]"],
     "redist: error: --from-xla: unknown axis \"z\" (the mesh has \"x\", \"y\") (at column 23 of "
     "'{mesh['x'=2,'y'=2], [{'z'}, {}]}')"),
    (["show"] + MESH + ["--jax", "P('x')", "--shape", "(8, n)"],
     "redist: error: --shape: expected a global shape such as '[256, 1024]', '(256, 1024)' or 'torch.Size([256, 1024])', "
     "found '(8, n)'"),
    (["show"] + MESH + ["--jax", "P('x')", "--shape", "(8, 0)"],
     "redist: error: --shape: global size 0 (at column 5 of '[8, 0]')"),
    (["show", "--jax", "NamedSharding(mesh=Mesh('x': 2), spec=P('q'))", "--shape", "[8]"],
     "redist: error: --jax: unknown mesh axis 'q' (at column 41 of 'NamedSharding(mesh=Mesh('x': 2), spec=P('q'))')"),
]

# (arguments, text in stderr): usage errors, exit 2.
USAGE = [
    (["show"] + MESH, "--type is required"),
    (["show"] + MESH + ["--jax", "P('x')"], "--jax requires --shape"),
    (["show"] + MESH + ["--type", "[8]", "--jax", "P()", "--shape", "[8]"], "--type excludes --jax"),
    (["show"] + MESH + ["--type", "[8]", "--shape", "[8]"], "--shape: only used with --jax, --dtensor, --xla, --shardy"),
    (["show"] + MESH + ["--type", "[8]", "--color", "sometimes"], "--color: sometimes not in {auto,always,never}"),
    (["show"] + MESH + ["--type", "[8]", "--notation", "numpy"], "--notation: numpy not in {redist,jax,dtensor,xla,xla-named,shardy}"),
    (["plan"] + MESH + ["--from", "[8]", "--from-dtensor", "[Replicate(), Replicate()]", "--shape", "[8]", "--to", "[8]"],
     "--from excludes --from-dtensor"),
    (["plan"] + MESH + ["--from-jax", "P()", "--to", "[8]"], "--from-jax requires --shape"),
    (["plan"] + MESH + ["--from-boxes", "[[[0, 8]]]", "--to", "[8]", "--shape", "[8]"],
     "--mesh: --from-boxes places the source's mesh itself"),
    (["plan", "--from-boxes", "[[[0, 8]]]", "--to-boxes", "[[[0, 8]]]"], "--from-boxes requires --shape"),
    (["plan"] + MESH + ["--from", "[8]"], "--to is required"),
    (["plan"] + MESH + ["--from", "[8]", "--to", "[8]", "--json", "--notation", "jax"], "--json excludes --notation"),
    (["run", "--backend", "host"] + MESH + ["--from", "[8]", "--to", "[8]", "--shape", "[8]"],
     "--shape: only used with --from-jax, --from-dtensor, --from-xla, --from-shardy, --to-jax, --to-dtensor, --to-xla, --to-shardy"),
    (["convert"] + MESH + ["--type", "[8]", "--to", "yaml"], "--to: yaml not in {redist,jax,dtensor,xla,xla-named,shardy,mesh}"),
    (["convert"] + MESH, "--type is required"),
    (["plan", "--from-xla", "{devices=[2]<=[2]}", "--mesh", "{x: 2}", "--to", "[8]", "--shape", "[8]"],
     "--mesh: --from-xla places the source's mesh itself"),
    (["show", "--xla", "{devices=[2]<=[2]}", "--mesh", "{x: 2}", "--shape", "[8]"], "--mesh excludes --xla"),
    (["show", "--mesh", "{x: 2}", "--jax", "NamedSharding(mesh=Mesh('x': 2), spec=P('x'))", "--shape", "[8]"],
     "--mesh: --jax places its mesh itself"),
]


def run_in_terminal(redist, args, env):
    """stdout on a pseudo-terminal: what a user at a terminal sees."""
    master, slave = pty.openpty()
    p = subprocess.Popen([redist] + args, stdout=slave, stderr=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.wait()
    return out.decode()


def svg_tiles(path):
    """Parse an SVG file (raises on malformed XML); its root and its tile rects."""
    root = ET.parse(path).getroot()
    return root, [r for r in root.iter(SVG + "rect") if r.get("class") == "tile"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redist", required=True)
    redist = ap.parse_args().redist
    checks = Checks()
    expect = checks.expect

    # The picture of the example, exactly; plain in a pipe.
    r = run(redist, ["show"] + MESH + ["--type", "[64{x}128, 32{y}64]"])
    expect(r.returncode == 0 and r.stderr == "", "show: rc %d stderr %r" % (r.returncode, r.stderr))
    expect(r.stdout.splitlines() == GRID, "show picture:\n%s" % r.stdout)
    # The same type in JAX and DTensor notation draws the same picture.
    for alt in (["--jax", "PartitionSpec('x', 'y')"], ["--dtensor", "[Shard(0), Shard(1)]"]):
        r = run(redist, ["show"] + MESH + alt + ["--shape", "[128, 64]"])
        expect(r.returncode == 0 and r.stdout.splitlines() == GRID, "show %s:\n%s%s" % (alt, r.stdout, r.stderr))
    r = run(redist, ["show"] + MESH + ["--type", "[64{x}128, 32{y}64]", "--notation", "jax"])
    expect(r.stdout.splitlines()[0] == GRID[0].replace("[64{x}128, 32{y}64]", "PartitionSpec('x', 'y')"),
           "show --notation jax: %r" % r.stdout)
    r = run(redist, ["show"] + MESH + ["--type", "[64{x}128, 32{y}64]", "--notation", "dtensor"])
    expect(r.stdout.splitlines()[0] == GRID[0].replace("[64{x}128, 32{y}64]", "[Shard(0), Shard(1)]"),
           "show --notation dtensor: %r" % r.stdout)
    # Pending values: a note and '+' between the devices of different partials; a notation
    # that cannot write the type says so in one line and the header shows ours.
    r = run(redist, ["show"] + MESH + ["--dtensor", "[Shard(0), Partial()]", "--shape", "[8]", "--notation", "jax"])
    expect(r.returncode == 0 and r.stdout.splitlines()[0] ==
           "mesh {x: 2, y: 2} | type PartitionSpec('x', unreduced={'y'}) | global [8] | tile [4] | local size 4 elements",
           "show partial --notation jax:\n%s%s" % (r.stdout, r.stderr))
    r = run(redist, ["show"] + MESH + ["--dtensor", "[Shard(0), Partial('max')]", "--shape", "[8]", "--notation", "jax"])
    expect(r.returncode == 0 and r.stdout.splitlines() == [
        "no JAX PartitionSpec: pending max values have no PartitionSpec (JAX's unreduced axes are pending sums); "
        "the type is shown in redist notation",
        "mesh {x: 2, y: 2} | type [4{x}8] max{y} | global [8] | tile [4] | local size 4 elements",
        "partial over y: a box is the max of 2 partial values; '+' joins the devices of different partials",
        "0     4     8",
        "┌─────┬─────┐",
        "│ 0+1 │ 2+3 │",
        "└─────┴─────┘"], "show partial:\n%s%s" % (r.stdout, r.stderr))

    # Colour: on a terminal unless NO_COLOR is set, with --color always anywhere, never with never.
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    show = ["show"] + MESH + ["--type", "[64{x}128, 32{y}64]"]
    expect("\x1b[38;2;255;255;255;48;2;31;119;180m 0 \x1b[0m" in run_in_terminal(redist, show, env), "no colour on a terminal")
    expect("\x1b[" not in run_in_terminal(redist, show, dict(env, NO_COLOR="1")), "colour despite NO_COLOR")
    expect("\x1b[" not in run_in_terminal(redist, show + ["--color", "never"], env), "colour with --color never")
    expect("\x1b[48" not in run(redist, show, env).stdout, "colour in a pipe")
    r = run(redist, show + ["--color", "always"], dict(env, NO_COLOR="1"))
    expect(r.stdout.count("\x1b[0m") == 4, "--color always: %r" % r.stdout)

    with tempfile.TemporaryDirectory() as tmp:
        # show --svg: valid SVG 1.1, one rect per box with a palette colour each, labels, ticks.
        path = os.path.join(tmp, "show.svg")
        r = run(redist, show + ["--svg", path])
        expect(r.returncode == 0 and r.stdout.splitlines() == GRID, "show --svg stdout %r" % r.stdout)
        root, tiles = svg_tiles(path)
        expect(root.tag == SVG + "svg" and root.get("version") == "1.1", "svg root %s %s" % (root.tag, root.attrib))
        w, h = int(root.get("width")), int(root.get("height"))
        expect(root.get("viewBox") == "0 0 %d %d" % (w, h) and w > 100 and h > 100, "viewBox %r" % root.get("viewBox"))
        expect(len(tiles) == 4 and len({t.get("fill") for t in tiles}) == 4, "tiles %s" % [t.attrib for t in tiles])
        texts = {t.get("class"): [] for t in root.iter(SVG + "text")}
        for t in root.iter(SVG + "text"):
            texts[t.get("class")].append(t.text)
        expect(texts.get("label") == ["0", "1", "2", "3"], "labels %s" % texts.get("label"))
        expect(sorted(texts.get("tick", []), key=int) == ["0", "0", "32", "64", "64", "128"], "ticks %s" % texts.get("tick"))
        expect(texts.get("title") == [GRID[0]], "title %s" % texts.get("title"))
        expect([t.find(SVG + "title").text for t in tiles][3] == "[64:128, 32:64] on device 3", "tile tooltips")

        # A 3-D, replicated type: one grid per leading block, each titled.
        path3 = os.path.join(tmp, "show3.svg")
        r = run(redist, ["show", "--mesh", "{x: 2, y: 2, z: 2}", "--type", "[{x}8, {y}4, 12]", "--svg", path3])
        root, tiles = svg_tiles(path3)
        slices = [t.text for t in root.iter(SVG + "text") if t.get("class") == "slice"]
        expect(slices == ["[0:4, :, :]", "[4:8, :, :]"] and len(tiles) == 4, "3-D slices %s tiles %d" % (slices, len(tiles)))
        expect([t.text for t in root.iter(SVG + "text") if t.get("class") == "label"] == ["0,1", "2,3", "4,5", "6,7"],
               "3-D labels")

        # plan --svg: the printed plan is unchanged (table and JSON); one panel per state. The
        # paper's objective: a dynslice and an allgather (by time the exchange is chosen).
        good = ["plan", "--mesh", "{x: 4, y: 8}", "--from", "[64{x}256, 1024]", "--to", "[256, 128{y}1024]",
                "--objective", "bytes"]
        plain_table, plain_json = run(redist, good).stdout, run(redist, good + ["--json"]).stdout
        ppath = os.path.join(tmp, "plan.svg")
        r = run(redist, good + ["--svg", ppath])
        expect(r.returncode == 0 and r.stdout == plain_table, "plan --svg changed the table: %r" % r.stdout)
        r = run(redist, good + ["--json", "--svg", ppath])
        expect(r.returncode == 0 and r.stdout == plain_json, "plan --json --svg changed the JSON")
        prog = json.loads(plain_json)
        root, tiles = svg_tiles(ppath)
        groups = [g.get("class") for g in root.iter(SVG + "g")]
        expect(groups.count("panel") == len(prog["steps"]) + 1 and groups.count("step") == len(prog["steps"]),
               "plan panels %s" % groups)
        expect(len(tiles) == 4 + 32 + 8, "plan tiles %d" % len(tiles))
        texts = [t.text for t in root.iter(SVG + "text")]
        for want in ["source", "after step 1: dynslice", "after step 2: allgather", "8 groups of 4", "131072 B per device",
                     "local 65536 / bound 65536", "local 8192 / bound 65536", "local 32768 / bound 65536"]:
            expect(want in texts, "plan svg lacks %r" % want)

        # The same plan from the JAX and DTensor spellings of its types, and the types printed back.
        r2 = run(redist, ["plan", "--mesh", "{x: 4, y: 8}", "--from-jax", "P('x')", "--to-dtensor", "[Replicate(), Shard(1)]",
                          "--shape", "[256, 1024]", "--objective", "bytes"])
        expect(r2.returncode == 0 and r2.stdout == plain_table, "plan from JAX/DTensor:\n%s%s" % (r2.stdout, r2.stderr))
        r = run(redist, good + ["--notation", "jax"])
        expect(r.stdout == plain_table + "types as JAX PartitionSpec:\n  source  PartitionSpec('x')\n"
               "  step 1  PartitionSpec('x', 'y')\n  step 2  PartitionSpec(None, 'y')\n  target  PartitionSpec(None, 'y')\n",
               "plan --notation jax:\n%s" % r.stdout)
        r = run(redist, ["plan", "--mesh", "{x: 2, y: 2}", "--from", "[{x}8] sum{y}", "--to", "[8]", "--notation", "dtensor"])
        lines = r.stdout.splitlines()
        expect(lines[-5:] == ["types as DTensor placements:", "  source  [Shard(0), Partial()]", "  step 1  [Shard(0), Shard(0)]",
                              "  step 2  [Replicate(), Replicate()]", "  target  [Replicate(), Replicate()]"],
               "plan --notation dtensor:\n%s" % r.stdout)
        r = run(redist, ["plan", "--mesh", "{x: 2, y: 2}", "--from", "[{x}8] sum{y}", "--to", "[8]", "--notation", "jax"])
        expect("  source  PartitionSpec('x', unreduced={'y'})" in r.stdout.splitlines(),
               "plan --notation jax, partial:\n%s" % r.stdout)
        r = run(redist, ["plan", "--mesh", "{x: 2, y: 2}", "--from", "[{x}8] max{y}", "--to", "[8]", "--notation", "jax"])
        expect("  source  [4{x}8] max{y} (no JAX PartitionSpec: pending max values have no PartitionSpec (JAX's "
               "unreduced axes are pending sums))" in r.stdout.splitlines(), "plan --notation jax, max:\n%s" % r.stdout)

    # convert: all notations, or one; round trips.
    r = run(redist, ["convert"] + MESH + ["--type", "[64{x}128, 32{y}64]"])
    expect(r.returncode == 0 and r.stdout == "redist       [64{x}128, 32{y}64]\njax          PartitionSpec('x', 'y')\n"
           "dtensor      [Shard(0), Shard(1)]\n", "convert: %r" % r.stdout)
    r = run(redist, ["convert"] + MESH + ["--jax", "P(('x', 'y'), None)", "--shape", "[8, 4]", "--to", "redist"])
    expect(r.stdout == "[2{y, x}8, 4]\n", "convert jax -> redist: %r" % r.stdout)
    # --shape as Python prints it (JAX and NumPy tuples, PyTorch's torch.Size), or bare.
    for shape in ["(8, 4)", "torch.Size([8, 4])", "8, 4", " (8, 4,) "]:
        r = run(redist, ["convert"] + MESH + ["--jax", "P(('x', 'y'), None)", "--shape", shape, "--to", "redist"])
        expect(r.returncode == 0 and r.stdout == "[2{y, x}8, 4]\n", "convert --shape %r: %r %r" % (shape, r.stdout, r.stderr))
    r = run(redist, ["convert"] + MESH + ["--dtensor", "[Shard(0), Replicate()]", "--shape", "(6,)", "--to", "redist"])
    expect(r.returncode == 0 and r.stdout == "[3{x}6]\n", "convert --shape (6,): %r %r" % (r.stdout, r.stderr))
    r = run(redist, ["convert"] + MESH + ["--type", "[2{y, x}8, 4]", "--to", "jax,dtensor"])
    expect(r.stdout == "jax          PartitionSpec(('x', 'y'))\ndtensor      [Shard(0), Shard(0)]\n", "convert --to jax,dtensor: %r" % r.stdout)
    r = run(redist, ["convert"] + MESH + ["--type", "[2{x, y}8]"])
    expect(r.returncode == 0 and r.stdout.splitlines()[2] == "dtensor      [_StridedShard(0, split_factor=2), Shard(0)]",
           "convert, strided placements: %r" % r.stdout)
    r = run(redist, ["convert", "--mesh", "{x: 2, y: 2, z: 2}", "--type", "[1{y, x, z}8]"])
    expect(r.returncode == 0 and r.stdout.splitlines()[2] ==
           "dtensor      [_StridedShard(0, split_factor=2), _StridedShard(0, split_factor=2), Shard(0)]",
           "convert, strided placements in the middle: %r" % r.stdout)
    r = run(redist, ["convert", "--mesh", "{x: 4}", "--type", "[4{x:(1)2}8]"])
    expect(r.returncode == 0 and r.stdout.splitlines()[2] ==
           "dtensor      none: dimension 0 is split by a sub-axis, which placements cannot name",
           "convert, no placements: %r" % r.stdout)
    r = run(redist, ["convert"] + MESH + ["--dtensor", "[Partial(), Shard(0)]", "--shape", "[8]", "--to", "redist"])
    expect(r.stdout == "[4{y}8] sum{x}\n", "convert dtensor partial: %r" % r.stdout)
    # A notation that places its mesh: the mesh first, with its devices, as --mesh takes it.
    r = run(redist, ["convert", "--xla", "{devices=[2,2]<=[2,2]T(1,0)}", "--shape", "[8, 8]"])
    expect(r.returncode == 0 and r.stdout == "mesh         {d0: 2, d1: 2} @ [0, 2, 1, 3]\nredist       [4{d0}8, 4{d1}8]\n"
           "jax          PartitionSpec('d0', 'd1')\ndtensor      [Shard(0), Shard(1)]\n", "convert xla: %r" % r.stdout)
    r = run(redist, ["convert", "--mesh", "{d0: 2, d1: 2} @ [0, 2, 1, 3]", "--type", "[4{d0}8, 4{d1}8]", "--to", "xla"])
    expect(r.returncode == 0 and r.stdout == "{devices=[2,2]<=[2,2]T(1,0)}\n", "convert the mesh line back: %r" % r.stdout)
    r = run(redist, ["convert", "--shardy", 'sdy.mesh @m = <["x"=2], device_ids=[1, 0]> #sdy.sharding<@m, [{"x"}]>',
                     "--shape", "[4]", "--to", "mesh"])
    expect(r.returncode == 0 and r.stdout == "{x: 2} @ [1, 0]\n", "convert --to mesh: %r" % r.stdout)

    # DTensor's nested uneven chunks (no type says them) drawn, planned and run as their box layout.
    r = run(redist, ["show"] + MESH + ["--dtensor", "[Shard(0), Shard(0)]", "--shape", "[10, 5]"])
    expect(r.returncode == 0 and r.stdout.splitlines() == BOX_LAYOUT, "show box layout:\n%s%s" % (r.stdout, r.stderr))
    r = run(redist, ["show", "--boxes", "[[[0, 3], [0, 5]], [[3, 5], [0, 5]], [[5, 8], [0, 5]], null, [[8, 10], [0, 5]]]",
                     "--shape", "[10, 5]"])
    want = [BOX_LAYOUT[0].replace("4 ranks", "5 ranks"), "ranks holding no elements: 3"] + BOX_LAYOUT[1:-2] + [
        "   │ 4 │", BOX_LAYOUT[-1]]
    expect(r.returncode == 0 and r.stdout.splitlines() == want, "show --boxes:\n%s%s" % (r.stdout, r.stderr))
    with tempfile.TemporaryDirectory() as tmp:
        svg = os.path.join(tmp, "b.svg")
        r = run(redist, ["show"] + MESH + ["--dtensor", "[Shard(0), Shard(0)]", "--shape", "[10, 5]", "--svg", svg])
        expect(r.returncode == 0 and len(svg_tiles(svg)[1]) == 4, "show box layout --svg: %r" % r.stderr)
        psvg = os.path.join(tmp, "p.svg")
        r = run(redist, ["plan"] + MESH + ["--from-dtensor", "[Shard(0), Shard(0)]", "--shape", "[10, 5]",
                                          "--to-dtensor", "[Shard(1), Shard(1)]", "--svg", psvg])
        root, tiles = svg_tiles(psvg) if r.returncode == 0 else (None, [])
        expect(r.returncode == 0 and len(tiles) == 8 and
               root.find(SVG + "title").text == "redist program on a world of 4 ranks: a box layout -> a box layout, "
               "4-byte elements", "plan box layouts --svg: %r %d tiles" % (r.stderr, len(tiles)))
        expect(r.returncode == 0 and "the target box layout" in r.stdout, "plan box layouts table: %r" % r.stdout)
        r = run(redist, ["plan"] + MESH + ["--from-dtensor", "[Shard(0), Shard(0)]", "--shape", "[10, 5]",
                                          "--to-dtensor", "[Shard(1), Replicate()]", "--json"])
        expect(r.returncode == 0 and json.loads(r.stdout)["source"] == {"boxes": [
            [[0, 3], [0, 5]], [[3, 5], [0, 5]], [[5, 8], [0, 5]], [[8, 10], [0, 5]]]} and
            json.loads(r.stdout)["steps"][0]["op"] == "exchange", "plan box layout --json: %r %r" % (r.stdout, r.stderr))
    r = run(redist, ["run", "--backend", "host"] + MESH + ["--from-dtensor", "[Shard(0), Shard(0)]", "--shape", "[6]",
                                                          "--to-dtensor", "[Shard(0), Replicate()]", "--verify"])
    expect(r.returncode == 0 and "verify: OK, 12 elements checked on 4 ranks" in r.stdout,
           "run box layout --verify:\n%s%s" % (r.stdout, r.stderr))

    # FSDP2 over tensor parallelism, _StridedShard: tp's chunks first, then dp's of each; even
    # it is a type (tp major), uneven the box layout of those nested chunks.
    strided = ["--mesh", "{dp: 2, tp: 2}", "--from-dtensor", "[_StridedShard(0, split_factor=2), Shard(0)]"]
    r = run(redist, ["plan"] + strided + ["--shape", "[8, 3]", "--to", "[8, 3]", "--json"])
    expect(r.returncode == 0 and json.loads(r.stdout)["source"] == "[2{dp, tp}8, 3]",
           "plan _StridedShard --json: %r %r" % (r.stdout[:300], r.stderr))
    r = run(redist, ["plan"] + strided + ["--shape", "[5, 3]", "--to", "[5, 3]", "--json"])
    expect(r.returncode == 0 and json.loads(r.stdout)["source"] == {"boxes": [
        [[0, 2], [0, 3]], [[3, 4], [0, 3]], [[2, 3], [0, 3]], [[4, 5], [0, 3]]]},
           "plan uneven _StridedShard --json: %r %r" % (r.stdout[:300], r.stderr))
    r = run(redist, ["run", "--backend", "host"] + strided + ["--shape", "[5, 3]", "--to-dtensor",
                                                             "[Replicate(), Shard(0)]", "--verify"])
    expect(r.returncode == 0 and "verify: OK, 30 elements checked on 4 ranks" in r.stdout,
           "run _StridedShard --verify:\n%s%s" % (r.stdout, r.stderr))

    # DTensor's Replicate() beside nested uneven chunks: replicas in the box layout.
    r = run(redist, ["run", "--backend", "host", "--mesh", "{x: 2, y: 2, z: 2}", "--from-dtensor",
                     "[Shard(0), Shard(0), Replicate()]", "--shape", "[6]", "--to", "[6]", "--verify"])
    expect(r.returncode == 0 and "verify: OK, 48 elements checked on 8 ranks" in r.stdout,
           "run replicated box layout --verify:\n%s%s" % (r.stdout, r.stderr))

    # A box layout given as JSON, replicas on ranks 0 and 2, to a type on other ranks, and between two layouts.
    r = run(redist, ["run", "--backend", "host", "--verify", "--from-boxes",
                     "[[[0, 3], [0, 5]], [[3, 10], [0, 5]], [[0, 3], [0, 5]], null]", "--to-mesh", "{x: 2} @ [3, 1]",
                     "--to", "[{x}10, 5]", "--shape", "[10, 5]"])
    expect(r.returncode == 0 and "verify: OK, 50 elements checked on 4 ranks" in r.stdout,
           "run --from-boxes --verify:\n%s%s" % (r.stdout, r.stderr))
    r = run(redist, ["plan", "--from-boxes", "[[[0, 3], [0, 5]], [[3, 10], [0, 5]]]", "--to-boxes",
                     "[[[0, 10], [0, 2]], [[0, 10], [2, 5]]]", "--shape", "[10, 5]", "--json"])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    expect(r.returncode == 0 and j.get("world") == 2 and j["target"] == {"boxes": [[[0, 10], [0, 2]], [[0, 10], [2, 5]]]},
           "plan --from-boxes --to-boxes --json: %r %r" % (r.stdout[:300], r.stderr))

    # Shardy's sub-axes in any order: drawn, planned and run as their box layout.
    y13 = SHARDY_MESH + ' #sdy.sharding<@mesh, [{"y":(1)3}, {}]>'
    r = run(redist, ["show", "--shardy", y13, "--shape", "[12, 4]", "--color", "never"])
    expect(r.returncode == 0 and r.stdout.splitlines() == SHARDY_BOXES, "show Shardy sub-axes:\n%s%s" % (r.stdout, r.stderr))
    r = run(redist, ["plan", "--from-shardy", y13, "--to-shardy", SHARDY_MESH + ' #sdy.sharding<@mesh, [{"x"}, {"y"}]>',
                     "--shape", "[12, 12]", "--json"])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    expect(r.returncode == 0 and j["source"]["boxes"][7] == [[0, 4], [0, 12]] and j["target"] == "[6{x}12, 2{y}12]" and
           [s["op"] for s in j["steps"]] == ["exchange"], "plan Shardy sub-axes --json: %r %r" % (r.stdout, r.stderr))
    r = run(redist, ["run", "--backend", "host", "--from-shardy", y13, "--to-shardy",
                     SHARDY_MESH + ' #sdy.sharding<@mesh, [{"y":(3)2}, {"y":(1)3}]>', "--shape", "[12, 7]", "--verify"])
    expect(r.returncode == 0 and "verify: OK, " in r.stdout and "on 12 ranks, all in place" in r.stdout,
           "run Shardy sub-axes --verify:\n%s%s" % (r.stdout, r.stderr))

    # XLA's named shardings: the same layouts as Shardy's (sub-axes in any order included),
    # drawn, planned, run and written.
    x13 = "{mesh['x'=2,'y'=6], [{'y':(1)3}, {}]}"
    r = run(redist, ["show", "--xla", x13, "--shape", "[12, 4]", "--color", "never"])
    expect(r.returncode == 0 and r.stdout.splitlines() == SHARDY_BOXES, "show XLA named sub-axes:\n%s%s" % (r.stdout, r.stderr))
    r = run(redist, ["run", "--backend", "host", "--from-xla", x13, "--to-xla",
                     "{mesh[x=2,y=6], device_ids=([2,6]T(1,0)), [{y:(3)2}, {y:(1)3}]}", "--shape", "[12, 7]", "--verify"])
    expect(r.returncode == 0 and "verify: OK, " in r.stdout and "on 12 ranks" in r.stdout,
           "run XLA named sub-axes --verify:\n%s%s" % (r.stdout, r.stderr))
    r = run(redist, ["run", "--backend", "host", "--verify", "--shape", "[8, 8]", "--from-xla",
                     "{mesh['x'=2,'y'=2], device_ids=(0,2,1,3), [{'x'}, {}], unreduced={'y'}}",
                     "--to-xla", "{mesh['x'=2,'y'=2], [{}, {'y', 'x'}]}"])
    expect(r.returncode == 0 and "[4{x}8, 8] sum{y} on {x: 2, y: 2} @ [0, 2, 1, 3] -> [8, 2{x, y}8]" in r.stdout and
           "verify: OK" in r.stdout, "run XLA named unreduced --verify:\n%s%s" % (r.stdout, r.stderr))
    # Partial sums as an HloSharding: an unreduced subgroup, a sharding group set aside.
    r = run(redist, ["run", "--backend", "host", "--verify", "--shape", "[8, 8]", "--from-xla",
                     "{devices=[2,1,2]<=[4] last_tile_dims={unreduced} shard_as 0}", "--to-xla", "{devices=[4,1]<=[4]}"])
    expect(r.returncode == 0 and "[4{d0}8, 8] sum{u} on {d0: 2, u: 2} -> [2{d0}8, 8] on {d0: 4}" in r.stdout and
           "verify: OK" in r.stdout, "run XLA unreduced subgroup --verify:\n%s%s" % (r.stdout, r.stderr))
    r = run(redist, ["convert", "--mesh", "{x: 2, y: 4}", "--type", "[{x}8, 8] sum{y}", "--to", "xla"])
    expect(r.returncode == 0 and r.stdout == "{devices=[2,1,4]<=[8] last_tile_dims={unreduced}}\n",
           "convert sums --to xla: %r %r" % (r.stdout, r.stderr))
    r = run(redist, ["convert", "--mesh", "{x: 2, y: 4} @ [0, 4, 1, 5, 2, 6, 3, 7]", "--type", "[{x}8, 8] sum{y}",
                     "--to", "xla-named"])
    expect(r.returncode == 0 and r.stdout == "{mesh['x'=2,'y'=4], device_ids=([2,4]T(1,0)), [{'x'}, {}], unreduced={'y'}}\n",
           "convert --to xla-named: %r %r" % (r.stdout, r.stderr))
    r = run(redist, ["convert", "--xla", "{mesh['x'=2,'y'=2], [{'y'}, {'x'}]}", "--shape", "[8, 8]", "--to", "redist,xla"])
    expect(r.returncode == 0 and r.stdout == "redist       [4{y}8, 4{x}8]\nxla          {devices=[2,2]<=[2,2]T(1,0)}\n",
           "convert --xla named --to redist,xla: %r %r" % (r.stdout, r.stderr))

    # JAX's NamedSharding carries its mesh (its repr lists the devices): a pipeline boundary
    # from one stage's mesh to the next's, as JAX prints the two arrays' shardings.
    stage0 = ("NamedSharding(mesh=Mesh(device_ids=array([[0, 1],\n       [2, 3]]), axis_names=('dp', 'tp'), "
              "axis_types=(Auto, Auto)), spec=PartitionSpec('dp', None, 'tp'), memory_kind=device)")
    stage1 = ("NamedSharding(mesh=Mesh(device_ids=array([[4, 5],\n       [6, 7]]), axis_names=('dp', 'tp'), "
              "axis_types=(Auto, Auto)), spec=PartitionSpec(('dp', 'tp'),), memory_kind=device)")
    r = run(redist, ["run", "--backend", "host", "--verify", "--shape", "[8, 4, 6]", "--from-jax", stage0, "--to-jax", stage1])
    expect(r.returncode == 0 and "world of 8 ranks: [4{dp}8, 4, 3{tp}6] on {dp: 2, tp: 2} -> [2{tp, dp}8, 4, 6] on "
           "{dp: 2, tp: 2} @ [4, 5, 6, 7]" in r.stdout and "verify: OK" in r.stdout,
           "run --from-jax NamedSharding:\n%s%s" % (r.stdout, r.stderr))
    r = run(redist, ["convert", "--jax", "NamedSharding(mesh=Mesh('x': 2, 'y': 4, axis_types=(Auto, Auto)), "
                     "spec=PartitionSpec('x', None), memory_kind=device)", "--shape", "[8, 8]", "--to", "redist"])
    expect(r.returncode == 0 and r.stdout == "[4{x}8, 8]\n", "convert --jax NamedSharding: %r %r" % (r.stdout, r.stderr))

    # XLA's {replicated} holds the array on every device of the world, on either side,
    # whichever side places the other's devices (the maximal device, a Shardy device list).
    on4 = 'sdy.mesh @m = <["x"=4], device_ids=[4, 5, 6, 7]> #sdy.sharding<@m, [{"x"}, {}]>'
    for frm, to, header in (
            (["--from-xla", "{maximal device=3}"], ["--to-xla", "{replicated}"],
             "world of 4 ranks: [8, 8] on {} @ [3] -> [8, 8] on {r: 4}"),
            (["--from-xla", "{replicated}"], ["--to-xla", "{devices=[4,1]<=[4]}"],
             "world of 4 ranks: [8, 8] on {r: 4} -> [2{d0}8, 8] on {d0: 4}"),
            (["--from-shardy", on4], ["--to-xla", "{replicated}"],
             "world of 8 ranks: [2{x}8, 8] on {x: 4} @ [4, 5, 6, 7] -> [8, 8] on {r: 8}"),
            (["--from-xla", "{replicated}"], ["--to-shardy", on4],
             "world of 8 ranks: [8, 8] on {r: 8} -> [2{x}8, 8] on {x: 4} @ [4, 5, 6, 7]")):
        r = run(redist, ["run", "--backend", "host", "--verify", "--shape", "[8, 8]"] + frm + to)
        expect(r.returncode == 0 and header in r.stdout and "verify: OK" in r.stdout,
               "run %s -> %s:\n%s%s" % (frm[1], to[1], r.stdout, r.stderr))

    for args, line in BAD_INPUT:
        r = run(redist, args)
        expect(r.returncode == 1, "%s: exit %d, expected 1 (%r)" % (args, r.returncode, r.stderr))
        expect(r.stderr == line + "\n", "%s:\n  stderr   %r\n  expected %r" % (args, r.stderr, line + "\n"))
        expect(r.stdout == "", "%s: printed %r" % (args, r.stdout))
    for args, text in USAGE:
        r = run(redist, args)
        expect(r.returncode == 2 and text in r.stderr, "%s: exit %d, stderr %r" % (args, r.returncode, r.stderr))
    for sub, opts in (("show", ["--svg", "--color", "--jax", "--dtensor", "--notation"]),
                      ("convert", ["--jax", "--dtensor", "--to"]),
                      ("plan", ["--svg", "--from-jax", "--to-dtensor", "--shape", "--notation"])):
        r = run(redist, [sub, "--help"])
        expect(r.returncode == 0 and all(o in r.stdout for o in opts), "%s --help: %r" % (sub, r.stdout))

    return checks.report("all show/convert/svg checks passed")


if __name__ == "__main__":
    sys.exit(main())
