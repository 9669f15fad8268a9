#!/usr/bin/env python3
"""Runnable snippets in the documentation: the markdown is the single source of truth.

A snippet is a fenced code block preceded by an HTML comment naming it; the next fenced
block after it must be a ```text block holding exactly what the snippet prints:

    <!-- snippet: plan_listing3 -->
    ```sh
    redist plan --mesh '{devs: 32}' --from '[32, 64{devs}2048]' --to '[1{devs}32, 2048]'
    ```
    (prose may come in between)
    ```text
    redist program on {devs: 32}: ...
    ```

Kinds, from the code block's language:
  cpp   a complete C++ program: its #include lines, then the rest, with `int main(...) {` at
        the start of a line and its closing `}` alone on a line. CMake builds every C++
        snippet into one program against redist::redist (tests/docs/: one translation unit,
        each snippet's code after its #include lines in namespace redist_docs_<name>, its
        main returning 0 at its end as ::main does) and ctest runs it with the snippet's
        name; its stdout must equal the output block.
  sh    one `redist ...` command line (backslash-newline continues it), run with the built
        command-line tool; stdout then stderr must equal the output block.
Options after the name, `key=value`:
  exit=N      expected exit status (default 0)
  mpi=N       cpp: link redist::mpi and run under mpiexec with N ranks
  nccl=1      cpp: link the NCCL backend (in CI: the CPU stand-in for CUDA and NCCL)
A ```cpp block, or a ```sh block whose first word is `redist`, that is meant as a fragment
(not runnable on its own) must be preceded by `<!-- fragment -->`; `lint` reports any other
unmarked one, so that nothing in the docs escapes checking by accident.

Subcommands:
  extract --out DIR MD...        write DIR/<name>.cpp for the C++ snippets (only when changed)
                                 and DIR/snippets.cmake (one redist_doc_snippet(...) call each)
  check MD --name N [--exe PATH] [--exe-arg ARG]... [--redist PATH] [--launcher ARG]... [--update]
                                 run one snippet and compare with its output block (exit 1 and
                                 a diff on mismatch); --update rewrites the block instead
  update --build DIR MD...       maintainers: run every snippet from a build tree and rewrite
                                 all output blocks (cpp with DIR/tests/docs/docs_programs <name>,
                                 sh with DIR/tools/redist, mpi ones under
                                 `mpiexec --oversubscribe -n N`)
  lint MD...                     structure only: names unique, every snippet has its output
                                 block, no unmarked C++ or `redist` block
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

MARKER = re.compile(r"^<!--\s*snippet:\s*([A-Za-z0-9_]+)((?:\s+[a-z]+=[A-Za-z0-9_]+)*)\s*-->\s*$")
FRAGMENT = re.compile(r"^<!--\s*fragment\s*-->\s*$")
FENCE = re.compile(r"^(`{3,})\s*([A-Za-z0-9_+-]*)\s*$")
OPTIONS = {"exit", "mpi", "nccl"}
KINDS = {"cpp", "sh"}
CPP_MAIN = re.compile(r"^int main\s*\([^)]*\)\s*\{")


class DocError(Exception):
    """A structural problem in a markdown file: `file:line: message`."""


@dataclasses.dataclass
class Block:
    lang: str
    start: int  # index of the opening fence line
    end: int  # index of the closing fence line
    lines: list[str]
    marker: int | None = None  # index of the line just above, if it is a comment we know

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


@dataclasses.dataclass
class Snippet:
    name: str
    kind: str
    path: Path
    line: int  # 1-based line of the marker
    code: Block
    output: Block | None
    options: dict[str, int]

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def blocks(lines: list[str], path: Path) -> list[Block]:
    """The fenced code blocks of a markdown file, in order."""
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != fence:
            j += 1
        if j == len(lines):
            raise DocError(f"{path}:{i + 1}: code block opened here is never closed")
        marker = i - 1
        while marker >= 0 and not lines[marker].strip():
            marker -= 1
        out.append(Block(lang, i, j, lines[i + 1 : j], marker if marker >= 0 else None))
        i = j + 1
    return out


def parse(path: Path) -> tuple[list[str], list[Snippet], list[Block]]:
    """Lines, snippets and unmarked blocks (fragments excluded) of a markdown file."""
    lines = path.read_text(encoding="utf-8").split("\n")
    bs = blocks(lines, path)
    snippets: list[Snippet] = []
    unmarked: list[Block] = []
    used_as_output: set[int] = set()
    for k, b in enumerate(bs):
        if k in used_as_output:
            continue
        above = lines[b.marker] if b.marker is not None else ""
        m = MARKER.match(above)
        if not m:
            if not FRAGMENT.match(above):
                unmarked.append(b)
            continue
        name = m.group(1)
        where = f"{path}:{b.marker + 1}"
        if b.lang not in KINDS:
            raise DocError(f"{where}: snippet '{name}' is a '{b.lang}' block; snippets are cpp or sh blocks")
        options: dict[str, int] = {}
        for item in m.group(2).split():
            key, value = item.split("=", 1)
            if key not in OPTIONS or not value.isdigit():
                raise DocError(f"{where}: snippet '{name}': unknown option '{item}' (exit=N, mpi=N, nccl=1)")
            options[key] = int(value)
        if b.lang == "sh" and ("mpi" in options or "nccl" in options):
            raise DocError(f"{where}: snippet '{name}': mpi= and nccl= apply to cpp snippets only")
        output = None
        if k + 1 < len(bs) and bs[k + 1].lang == "text":
            output = bs[k + 1]
            used_as_output.add(k + 1)
        snippets.append(Snippet(name, b.lang, path, b.marker + 1, b, output, options))
    return lines, snippets, unmarked


def find(paths: list[Path], name: str) -> Snippet:
    for p in paths:
        for s in parse(p)[1]:
            if s.name == name:
                return s
    raise DocError(f"no snippet named '{name}' in {', '.join(map(str, paths))}")


def command_argv(s: Snippet, redist: str | None) -> list[str]:
    """The argv of a sh snippet, its leading `redist` replaced by the built tool."""
    text = s.code.text.replace("\\\n", " ").strip()
    if "\n" in text:
        raise DocError(f"{s.where}: snippet '{s.name}' must be one command line (continue lines with a backslash)")
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise DocError(f"{s.where}: snippet '{s.name}': cannot split the command line: {e}") from e
    if not argv or argv[0] != "redist":
        raise DocError(f"{s.where}: snippet '{s.name}' must start with 'redist', found {text!r}")
    if redist is None:
        raise DocError(f"{s.where}: snippet '{s.name}' needs --redist PATH")
    return [redist] + argv[1:]


def program_part(s: Snippet) -> str:
    """A C++ snippet as one part of the docs' single program: its #include lines (with any
    blank, comment or other preprocessor line among them) at file scope, then the rest in
    namespace redist_docs_<name>, where its main is an ordinary function and so returns 0 at
    its closing brace, as ::main does. #line directives keep the markdown's line numbers."""
    lines = s.code.lines
    first = s.code.start + 2  # the markdown's 1-based line number of lines[0]
    k = 0
    while k < len(lines) and (not lines[k].strip() or lines[k].lstrip().startswith(("#", "//"))):
        k += 1
    head, body = lines[:k], list(lines[k:])
    for j, line in enumerate(body):
        if line.lstrip().startswith("#include"):
            raise DocError(f"{s.path}:{first + k + j}: snippet '{s.name}': an #include after code; "
                           f"put every #include before the code")
    mains = [j for j, line in enumerate(body) if CPP_MAIN.match(line)]
    if len(mains) != 1:
        raise DocError(f"{s.where}: snippet '{s.name}' needs exactly one `int main(...) {{` at the start of a "
                       f"line, found {len(mains)}")
    i = mains[0]
    if body[i].rstrip().endswith("}"):  # int main() { ... } on one line
        line = body[i].rstrip()
        body[i] = line[:-1].rstrip() + " return 0; }"
    else:
        close = next((j for j in range(i + 1, len(body)) if body[j].rstrip() == "}"), None)
        if close is None:
            raise DocError(f"{s.path}:{first + k + i}: snippet '{s.name}': main's closing brace must be "
                           f"alone on a line")
        body[close] = "return 0; }"
    ns = f"redist_docs_{s.name}"
    md = s.path.resolve()
    return "".join([f'#line {first} "{md}"\n', *(line + "\n" for line in head),
                    f"namespace {ns} {{\n", f'#line {first + k} "{md}"\n', *(line + "\n" for line in body),
                    f"}}  // namespace {ns}\n"])


def run(s: Snippet, exe: str | None, redist: str | None, launcher: list[str],
        exe_args: list[str] | None = None) -> tuple[int, str]:
    """Run a snippet; returns (exit status, what it printed)."""
    if s.kind == "sh":
        argv = command_argv(s, redist)
    else:
        if exe is None:
            raise DocError(f"{s.where}: snippet '{s.name}' needs --exe PATH")
        argv = launcher + [exe] + (exe_args or [])
    env = dict(os.environ, NO_COLOR="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    env.pop("CLICOLOR_FORCE", None)
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, p.stdout + (p.stderr if s.kind == "sh" else "")


def check(s: Snippet, status: int, printed: str, stderr_hint: str = "") -> list[str]:
    """Problems with a run, as lines (empty: the snippet is as documented)."""
    problems = []
    want = s.options.get("exit", 0)
    if status != want:
        problems.append(f"{s.where}: snippet '{s.name}' exited with status {status}, the docs say {want}")
    if s.output is None:
        problems.append(f"{s.where}: snippet '{s.name}' has no output block (a ```text block right after its code)")
        return problems
    if printed != s.output.text:
        diff = difflib.unified_diff(s.output.text.splitlines(keepends=True), printed.splitlines(keepends=True),
                                    f"{s.path} (documented)", "actual output", lineterm="\n")
        problems.append(f"{s.where}: snippet '{s.name}' printed something else than its output block "
                        f"(line {s.output.start + 1}):\n" + "".join(diff).rstrip("\n"))
        if printed and not printed.endswith("\n"):
            problems.append("  (the actual output does not end with a newline)")
    return problems


def rewrite(path: Path, results: dict[str, str]) -> int:
    """Replace (or insert) the output blocks of the named snippets; returns how many changed."""
    with open(path, "r+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # ctest -j may update several snippets of one file at once
        lines, snippets, _ = parse(path)
        changed = 0
        for s in sorted(snippets, key=lambda s: s.code.start, reverse=True):
            if s.name not in results:
                continue
            body = results[s.name].split("\n")
            if body and body[-1] == "":
                body.pop()
            if s.output is not None:
                if lines[s.output.start + 1 : s.output.end] != body:
                    lines[s.output.start + 1 : s.output.end] = body
                    changed += 1
            else:
                lines[s.code.end + 1 : s.code.end + 1] = ["", "```text", *body, "```"]
                changed += 1
        f.seek(0)
        f.write("\n".join(lines))
        f.truncate()
    return changed


def cmd_extract(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seen: dict[str, str] = {}
    calls = []
    for md in map(Path, args.md):
        for s in parse(md)[1]:
            if s.name in seen:
                raise DocError(f"{s.where}: snippet name '{s.name}' is also used at {seen[s.name]}")
            seen[s.name] = s.where
            source = ""
            if s.kind == "cpp":
                cpp = out / f"{s.name}.cpp"
                text = (f"// Generated from {s.where} by tests/docs/snippets.py; edit the markdown.\n"
                        f"// One part of the docs' program (tests/docs/CMakeLists.txt, docs_programs).\n"
                        + program_part(s))
                if not cpp.exists() or cpp.read_text(encoding="utf-8") != text:
                    cpp.write_text(text, encoding="utf-8")
                source = str(cpp)
            calls.append(f'redist_doc_snippet({s.name} {s.kind} "{md.resolve()}" "{source}" '
                         f'{s.options.get("mpi", 0)} {s.options.get("nccl", 0)})\n')
    manifest = out / "snippets.cmake"
    text = "# Generated by tests/docs/snippets.py extract.\n" + "".join(calls)
    if not manifest.exists() or manifest.read_text(encoding="utf-8") != text:
        manifest.write_text(text, encoding="utf-8")
    return 0


def cmd_check(args) -> int:
    s = find([Path(args.md)], args.name)
    status, printed = run(s, args.exe, args.redist, args.launcher or [], args.exe_arg)
    if args.update:
        n = rewrite(s.path, {s.name: printed})
        print(f"{s.where}: snippet '{s.name}': output block {'rewritten' if n else 'unchanged'}")
        return 0
    problems = check(s, status, printed)
    for p in problems:
        print(p)
    if problems and s.kind == "cpp" and status != 0 and printed:
        print("its stdout was:\n" + printed)
    return 1 if problems else 0


def cmd_update(args) -> int:
    build = Path(args.build)
    redist = build / "tools" / "redist"
    mpiexec = shutil.which("mpiexec") or "mpiexec"
    failed = 0
    for md in map(Path, args.md):
        results = {}
        for s in parse(md)[1]:
            exe = build / "tests" / "docs" / "docs_programs"
            if s.kind == "cpp" and not exe.exists():
                print(f"{s.where}: snippet '{s.name}': {exe} is not built, output block left as it is")
                failed += 1
                continue
            launcher = [mpiexec, "--oversubscribe", "-n", str(s.options["mpi"])] if "mpi" in s.options else []
            status, printed = run(s, str(exe), str(redist), launcher, [s.name])
            if status != s.options.get("exit", 0):
                print(f"{s.where}: snippet '{s.name}' exited with status {status} (docs say "
                      f"{s.options.get('exit', 0)}); its output is written anyway, check it")
                failed += 1
            results[s.name] = printed
        print(f"{md}: {rewrite(md, results)} output block(s) rewritten")
    return 1 if failed else 0


def cmd_lint(args) -> int:
    problems = []
    seen: dict[str, str] = {}
    for md in map(Path, args.md):
        _, snippets, unmarked = parse(md)
        for s in snippets:
            if s.name in seen:
                problems.append(f"{s.where}: snippet name '{s.name}' is also used at {seen[s.name]}")
            seen[s.name] = s.where
            if s.output is None:
                problems.append(f"{s.where}: snippet '{s.name}' has no output block (a ```text block right after its code)")
            if s.kind == "sh":
                try:
                    command_argv(s, "redist")
                except DocError as e:
                    problems.append(str(e))
        for b in unmarked:
            first = b.lines[0].split() if b.lines else []
            if b.lang == "cpp" or (b.lang == "sh" and first[:1] == ["redist"]):
                problems.append(f"{md}:{b.start + 1}: a {b.lang} block that is neither a snippet "
                                f"(<!-- snippet: name -->) nor marked <!-- fragment -->")
    for p in problems:
        print(p)
    if not problems:
        print(f"{len(seen)} snippets, all with output blocks; no unmarked code")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract")
    e.add_argument("--out", required=True)
    e.add_argument("md", nargs="+")
    c = sub.add_parser("check")
    c.add_argument("md")
    c.add_argument("--name", required=True)
    c.add_argument("--exe")
    c.add_argument("--exe-arg", action="append", help="one argument of the program after --exe, repeated")
    c.add_argument("--redist")
    c.add_argument("--launcher", action="append", help="one argument of the launcher (mpiexec ...), repeated")
    c.add_argument("--update", action="store_true", help="rewrite the output block from this run")
    u = sub.add_parser("update")
    u.add_argument("--build", required=True)
    u.add_argument("md", nargs="+")
    li = sub.add_parser("lint")
    li.add_argument("md", nargs="+")
    args = ap.parse_args(argv)
    try:
        return {"extract": cmd_extract, "check": cmd_check, "update": cmd_update, "lint": cmd_lint}[args.cmd](args)
    except DocError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
