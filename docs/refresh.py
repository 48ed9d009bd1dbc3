"""Regenerate the parts of the docs that the tool writes from the archive.

    python docs/refresh.py [--results results/paper] [FILE ...]     (default files: README.md docs/results.md docs/lysep-depth.md docs/lysep.md docs/harder.md)

A generated part sits between two markers that name the command which writes it:

    <!-- BEGIN lysep compare --headline elliptic-2d elliptic-10d -->
    ... (replaced by the command's output) ...
    <!-- END lysep -->

Each command runs as ``lysep ARGS --results RESULTS`` from the repository root; everything outside the
markers (the prose, the explanations) is left as it is.  `make docs` calls this after `make outputs`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- BEGIN lysep (?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- END lysep -->)", re.S)


def refresh(text: str, run: Callable[[list[str]], str]) -> str:
    """``text`` with the body of every marker block replaced by ``run(args)`` (args: the marker's words)."""
    def body(m: re.Match) -> str:
        out = run(m.group("args").split()).rstrip("\n")
        return f"{m.group(1)}{out}\n{m.group(4)}"

    return BLOCK.sub(body, text)


def lysep_runner(results: str) -> Callable[[list[str]], str]:
    """Runs ``lysep ARGS --results RESULTS`` (this interpreter's lysep; ARGS alone when they name their own
    ``--results``) and returns its stdout."""
    def run(args: list[str]) -> str:
        own = "--results" in args  # a block that names its own records (docs/harder.md: results/harder)
        cmd = [sys.executable, "-m", "lysep_cli.cli", *args, *([] if own else ["--results", results])]
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", default=["README.md", "docs/results.md", "docs/lysep-depth.md", "docs/lysep.md",
                                                 "docs/harder.md"])
    ap.add_argument("--results", default="results/paper")
    args = ap.parse_args()
    run = lysep_runner(args.results)
    for name in args.files:
        path = ROOT / name
        old = path.read_text()
        new = refresh(old, run)
        if new != old:
            path.write_text(new)
        print(f"{name}: {len(BLOCK.findall(old))} generated block(s), {'changed' if new != old else 'unchanged'}")


if __name__ == "__main__":
    main()
