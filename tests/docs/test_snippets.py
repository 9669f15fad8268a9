#!/usr/bin/env python3
"""Tests of the docs snippet runner (snippets.py) on small markdown files: a snippet passes
only when it prints exactly its output block and exits as documented; a missing output
block, a different output or status, an unmarked code block or a repeated name fail;
--update and `update` rewrite the blocks; extract writes the C++ sources and the manifest."""
import contextlib
import io
import os
import stat
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import snippets  # noqa: E402

FENCE = "```"


def md(text: str) -> str:
    return textwrap.dedent(text).replace("~~~", FENCE)


class RunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        # A stand-in for a built snippet and for the redist tool.
        self.exe = self.script("snippet_exe", 'print("hello")\nprint("  world")\n')
        self.redist = self.script(
            "redist",
            'import sys\nargs = sys.argv[1:]\nprint("args:", args)\n'
            'if "--bad" in args:\n    print("redist: error: --bad: no", file=sys.stderr)\n    sys.exit(1)\n')

    def tearDown(self):
        self.tmp.cleanup()

    def script(self, name: str, body: str) -> str:
        p = self.dir / name
        p.write_text(f"#!{sys.executable}\n{body}")
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
        return str(p)

    def write(self, text: str, name: str = "doc.md") -> Path:
        p = self.dir / name
        p.write_text(md(text))
        return p

    def call(self, *argv: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = snippets.main(list(argv))
        return rc, out.getvalue() + err.getvalue()

    def check(self, path: Path, name: str, *extra: str) -> tuple[int, str]:
        return self.call("check", str(path), "--name", name, "--exe", self.exe, "--redist", self.redist, *extra)

    CPP_OK = """\
        Intro.

        <!-- snippet: hello -->
        ~~~cpp
        int main() {}
        ~~~

        It prints:

        ~~~text
        hello
          world
        ~~~
        """

    def test_matching_output_passes(self):
        p = self.write(self.CPP_OK)
        self.assertEqual(self.check(p, "hello")[0], 0)

    def test_different_output_fails_with_a_diff(self):
        p = self.write(self.CPP_OK.replace("  world", " world"))
        rc, out = self.check(p, "hello")
        self.assertEqual(rc, 1)
        self.assertIn("snippet 'hello' printed something else than its output block", out)
        self.assertIn("+  world", out)
        self.assertIn("- world", out)

    def test_extra_output_line_fails(self):
        p = self.write(self.CPP_OK.replace("  world\n", ""))
        self.assertEqual(self.check(p, "hello")[0], 1)

    def test_missing_output_block_fails(self):
        p = self.write("""\
            <!-- snippet: hello -->
            ~~~cpp
            int main() {}
            ~~~

            <!-- snippet: args -->
            ~~~sh
            redist plan
            ~~~

            ~~~text
            args: ['plan']
            ~~~
            """)
        rc, out = self.check(p, "hello")
        self.assertEqual(rc, 1)
        self.assertIn("snippet 'hello' has no output block", out)
        self.assertEqual(self.check(p, "args")[0], 0)  # the next snippet's output is its own
        rc, out = self.call("lint", str(p))
        self.assertEqual(rc, 1)
        self.assertIn("snippet 'hello' has no output block", out)

    def test_shell_snippet_runs_the_tool_with_quoted_arguments(self):
        p = self.write("""\
            <!-- snippet: plan -->
            ~~~sh
            redist plan --mesh '{x: 4, y: 8}' \\
              --from "[64{x}256, 1024]"
            ~~~

            ~~~text
            args: ['plan', '--mesh', '{x: 4, y: 8}', '--from', '[64{x}256, 1024]']
            ~~~
            """)
        self.assertEqual(self.check(p, "plan")[0], 0)

    def test_exit_status_and_stderr_are_checked(self):
        text = """\
            <!-- snippet: bad exit=1 -->
            ~~~sh
            redist plan --bad
            ~~~

            ~~~text
            args: ['plan', '--bad']
            redist: error: --bad: no
            ~~~
            """
        self.assertEqual(self.check(self.write(text), "bad")[0], 0)
        rc, out = self.check(self.write(text.replace("exit=1", "exit=0")), "bad")
        self.assertEqual(rc, 1)
        self.assertIn("exited with status 1, the docs say 0", out)
        rc, out = self.check(self.write(text.replace("redist: error: --bad: no\n", "")), "bad")
        self.assertEqual(rc, 1)

    def test_shell_snippet_must_be_a_redist_command(self):
        p = self.write("""\
            <!-- snippet: ls -->
            ~~~sh
            ls /
            ~~~

            ~~~text
            ~~~
            """)
        rc, out = self.check(p, "ls")
        self.assertEqual(rc, 1)
        self.assertIn("must start with 'redist'", out)

    def test_launcher_runs_the_program(self):
        launcher = self.script("launcher", 'import subprocess, sys\nprint("launched")\n'
                               'sys.exit(subprocess.call(sys.argv[1:]))\n')
        p = self.write(self.CPP_OK.replace("~~~text\n        hello", "~~~text\n        launched\n        hello"))
        self.assertEqual(self.check(p, "hello")[0], 1)
        self.assertEqual(self.check(p, "hello", f"--launcher={launcher}")[0], 0)

    def test_update_rewrites_and_inserts_output_blocks(self):
        p = self.write("""\
            <!-- snippet: hello -->
            ~~~cpp
            int main() {}
            ~~~

            ~~~text
            stale
            ~~~

            <!-- snippet: plan -->
            ~~~sh
            redist plan
            ~~~

            The end.
            """)
        self.assertEqual(self.check(p, "hello")[0], 1)
        self.assertEqual(self.check(p, "hello", "--update")[0], 0)
        self.assertEqual(self.check(p, "hello")[0], 0)
        self.assertEqual(self.check(p, "plan", "--update")[0], 0)
        self.assertEqual(self.check(p, "plan")[0], 0)
        self.assertIn("~~~text\nargs: ['plan']\n~~~\n\nThe end.".replace("~~~", FENCE), p.read_text())
        self.assertNotIn("stale", p.read_text())

    def test_update_from_a_build_tree(self):
        build = self.dir / "build"
        (build / "tests" / "docs").mkdir(parents=True)
        (build / "tools").mkdir()
        os.symlink(self.exe, build / "tests" / "docs" / "docs_programs")
        os.symlink(self.redist, build / "tools" / "redist")
        p = self.write(md(self.CPP_OK.replace("  world", "stale")) + md("""
            <!-- snippet: plan -->
            ~~~sh
            redist plan
            ~~~
            """))
        rc, out = self.call("update", "--build", str(build), str(p))
        self.assertEqual(rc, 0, out)
        self.assertIn("2 output block(s) rewritten", out)
        self.assertEqual(self.call("lint", str(p))[0], 0)
        self.assertEqual(self.check(p, "hello")[0], 0)
        self.assertEqual(self.check(p, "plan")[0], 0)

    def test_lint_wants_every_cpp_and_redist_block_marked(self):
        base = """\
            ~~~sh
            cmake -S . -B build
            ~~~

            ~~~json
            {"format": "redist-program/1"}
            ~~~
            """
        self.assertEqual(self.call("lint", str(self.write(base)))[0], 0)
        for block in ("~~~cpp\nint x;\n~~~\n", "~~~sh\nredist plan --mesh '{}'\n~~~\n"):
            rc, out = self.call("lint", str(self.write(base + "\n" + block)))
            self.assertEqual(rc, 1, block)
            self.assertIn("neither a snippet", out)
            self.assertEqual(self.call("lint", str(self.write(base + "\n<!-- fragment -->\n" + block)))[0], 0)

    def test_names_must_be_unique(self):
        a = self.write(self.CPP_OK, "a.md")
        b = self.write(self.CPP_OK, "b.md")
        rc, out = self.call("lint", str(a), str(b))
        self.assertEqual(rc, 1)
        self.assertIn("snippet name 'hello' is also used at", out)
        rc, out = self.call("extract", "--out", str(self.dir / "out"), str(a), str(b))
        self.assertEqual(rc, 1)
        self.assertIn("also used", out)

    def test_bad_markers_are_reported(self):
        rc, out = self.call("lint", str(self.write("<!-- snippet: x mpi=two -->\n```cpp\n```\n")))
        self.assertEqual(rc, 1)
        self.assertIn("unknown option 'mpi=two'", out)
        rc, out = self.call("lint", str(self.write("<!-- snippet: x -->\n```python\n```\n")))
        self.assertEqual(rc, 1)
        self.assertIn("snippets are cpp or sh blocks", out)
        rc, out = self.call("lint", str(self.write("<!-- snippet: x -->\n```cpp\nint main() {}\n")))
        self.assertEqual(rc, 1)
        self.assertIn("never closed", out)

    def test_extract_writes_sources_and_manifest(self):
        p = self.write(md(self.CPP_OK) + md("""
            <!-- snippet: ranks mpi=4 -->
            ~~~cpp
            int main() { return 0; }
            ~~~

            ~~~text
            ~~~

            <!-- snippet: plan exit=1 -->
            ~~~sh
            redist plan
            ~~~

            ~~~text
            ~~~
            """))
        out = self.dir / "out"
        self.assertEqual(self.call("extract", "--out", str(out), str(p))[0], 0)
        self.assertEqual(sorted(f.name for f in out.iterdir()), ["hello.cpp", "ranks.cpp", "snippets.cmake"])
        self.assertTrue((out / "hello.cpp").read_text().endswith(
            "namespace redist_docs_hello {\n" f'#line 5 "{p.resolve()}"\n'
            "int main() { return 0; }\n}  // namespace redist_docs_hello\n"))
        self.assertIn(f"doc.md:3 by tests/docs/snippets.py", (out / "hello.cpp").read_text())
        self.assertIn("int main() { return 0; return 0; }\n", (out / "ranks.cpp").read_text())
        manifest = (out / "snippets.cmake").read_text()
        self.assertIn(f'redist_doc_snippet(hello cpp "{p.resolve()}" "{out / "hello.cpp"}" 0 0)', manifest)
        self.assertIn(f'redist_doc_snippet(ranks cpp "{p.resolve()}" "{out / "ranks.cpp"}" 4 0)', manifest)
        self.assertIn(f'redist_doc_snippet(plan sh "{p.resolve()}" "" 0 0)', manifest)
        # Unchanged sources are not rewritten (no rebuild after a reconfigure).
        before = (out / "hello.cpp").stat().st_mtime_ns
        os.utime(out / "hello.cpp", ns=(before - 10**9, before - 10**9))
        self.assertEqual(self.call("extract", "--out", str(out), str(p))[0], 0)
        self.assertEqual((out / "hello.cpp").stat().st_mtime_ns, before - 10**9)

    def test_a_cpp_snippet_becomes_one_part_of_the_docs_program(self):
        text = """\
            <!-- snippet: prog -->
            ~~~cpp
            // A comment.
            #include <cstdio>

            #include <vector>

            using V = std::vector<int>;

            int main(int argc, char** argv) {
              if (argc > 1) {
                std::puts(argv[1]);
              }
            }
            ~~~

            ~~~text
            ~~~
            """
        p = self.write(text)
        out = self.dir / "out"
        self.assertEqual(self.call("extract", "--out", str(out), str(p))[0], 0)
        md_path = p.resolve()
        self.assertTrue((out / "prog.cpp").read_text().endswith(
            f'#line 3 "{md_path}"\n// A comment.\n#include <cstdio>\n\n#include <vector>\n\n'
            f'namespace redist_docs_prog {{\n#line 8 "{md_path}"\n'
            "using V = std::vector<int>;\n\nint main(int argc, char** argv) {\n  if (argc > 1) {\n"
            "    std::puts(argv[1]);\n  }\nreturn 0; }\n}  // namespace redist_docs_prog\n"))
        for bad, message in (
                ("using V = std::vector<int>;\n", "doc.md:9: snippet 'prog': an #include after code"),
                ("int main(int argc, char** argv) {", "needs exactly one `int main(...) {` at the start of a line, found 0"),
                ("  }\n            }", "doc.md:10: snippet 'prog': main's closing brace must be alone on a line")):
            if bad.startswith("using"):
                broken = text.replace(bad, bad + "            #include <map>\n")
            elif bad.startswith("int"):
                broken = text.replace(bad, "int start(int argc, char** argv) {")
            else:
                broken = text.replace(bad, "  } }")
            rc, got = self.call("extract", "--out", str(out), str(self.write(broken)))
            self.assertEqual(rc, 1, broken)
            self.assertIn(message, got)

    def test_the_program_gets_its_arguments(self):
        echo = self.script("echo_exe", 'import sys\nprint(" ".join(sys.argv[1:]))\n')
        p = self.write(self.CPP_OK.replace("hello\n          world", "hello"))
        rc, out = self.call("check", str(p), "--name", "hello", "--exe", echo, "--exe-arg", "hello")
        self.assertEqual(rc, 0, out)
        rc, out = self.call("check", str(p), "--name", "hello", "--exe", echo, "--exe-arg", "other")
        self.assertEqual(rc, 1, out)


if __name__ == "__main__":
    unittest.main()
