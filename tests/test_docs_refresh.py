"""docs/refresh.py: the blocks between markers are replaced by their command's output, nothing else."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("docs_refresh", ROOT / "docs" / "refresh.py")
refresh_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(refresh_mod)


def test_blocks_get_their_commands_output_and_the_prose_stays():
    text = ("intro\n<!-- BEGIN lysep table e1 -->\nold 1\n<!-- END lysep -->\nmiddle\n"
            "<!-- BEGIN lysep compare --headline e1 e2 -->\nold\n2\n<!-- END lysep -->\nend\n")
    calls = []

    def run(args):
        calls.append(args)
        return f"new {' '.join(args)}\n\n"

    out = refresh_mod.refresh(text, run)
    assert calls == [["table", "e1"], ["compare", "--headline", "e1", "e2"]]
    assert out == ("intro\n<!-- BEGIN lysep table e1 -->\nnew table e1\n<!-- END lysep -->\nmiddle\n"
                   "<!-- BEGIN lysep compare --headline e1 e2 -->\nnew compare --headline e1 e2\n"
                   "<!-- END lysep -->\nend\n")
    assert refresh_mod.refresh(out, run) == out  # idempotent


def test_the_committed_docs_have_their_generated_blocks():
    for name, n in (("README.md", 2), ("docs/results.md", 6), ("docs/lysep-depth.md", 2), ("docs/lysep.md", 1)):
        assert len(refresh_mod.BLOCK.findall((ROOT / name).read_text())) == n, name


def test_make_docs_reproduces_the_how_hard_block_from_the_archive():
    """docs/results.md's "how hard is each table" block is what `make docs` writes from results/paper: no diff."""
    text = (ROOT / "docs" / "results.md").read_text()
    blocks = [m for m in refresh_mod.BLOCK.finditer(text) if m.group("args").startswith("study poly-summary")]
    assert len(blocks) == 1
    out = refresh_mod.lysep_runner("results/paper")(blocks[0].group("args").split())
    assert out.rstrip("\n") + "\n" == blocks[0].group("body")
    assert "| elliptic-10d " in out and "k = 0" in out
