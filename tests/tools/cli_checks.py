"""Shared pieces of the ctest drivers of the `redist` tool (test_cli.py, test_show.py,
test_svg_render.py): running the tool and collecting failed checks."""

import subprocess


def run(redist, args, env=None):
    """Run `redist args...`; stdout and stderr captured as text."""
    return subprocess.run([redist] + args, capture_output=True, text=True, env=env)


class Checks:
    """Failed checks, reported together at the end."""

    def __init__(self):
        self.failures = []

    def expect(self, cond, what):
        if not cond:
            self.failures.append(what)

    def fail(self, what):
        self.failures.append(what)

    def report(self, passed):
        """Print every failure (or `passed`); the exit status for the driver."""
        for f in self.failures:
            print("FAIL " + f)
        print("%d checks failed" % len(self.failures) if self.failures else passed)
        return 1 if self.failures else 0
