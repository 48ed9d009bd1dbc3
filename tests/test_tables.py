"""aggregate() and the paper-layout tables (Markdown, LaTeX)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from lysep_cli.reports import selection as reporting
from lysep_cli.execution import runner
from lysep_cli.reports import tables
from lysep_cli.store.records import load_records
from lysep_cli.reports.selection import Selection
from lysep_cli.specs import default_config, load_specs

from foundation_helpers import synthetic_record, write_tiny


@pytest.fixture
def paper_specs():
    return load_specs(default_config())


def rec(solver, L, M, seed, J, l2, J_S=None, status="ok"):
    spec = load_specs(default_config())["elliptic-2d"]
    return synthetic_record(spec, solver, L, M, seed, J=J, l2=l2, J_S=J_S, status=status)[0]


def synthetic():
    rs = [rec("pinn", 3, 30, s, J, l2) for s, (J, l2) in enumerate([(1e-2, 5e-2), (3e-2, 7e-2)])]
    rs += [rec("lysep", 3, 30, s, 3e-5, 2e-3, J_S=2e-5) for s in range(10)]
    rs += [rec("lysep", 3, 30, 10, None, None, J_S=None, status="diverged")]
    rs += [rec("rfls", 3, 30, 0, 1e-6, 1e-4)]
    return rs


def selection(records, its=2000):
    return Selection(records=records, iterations={"elliptic-2d": its})


def test_aggregate():
    df = reporting.aggregate(synthetic())
    assert set(reporting.COLUMNS) <= set(df.columns)
    pinn = df[df.solver == "pinn"].iloc[0]
    assert (pinn.n_seeds, pinn.n_diverged) == (2, 0)
    # the sample std (N - 1): sqrt(((1e-2 - 2e-2)^2 + (3e-2 - 2e-2)^2) / 1)
    assert pinn.J_mean == pytest.approx(2e-2) and pinn.J_std == pytest.approx(2 ** 0.5 * 1e-2)
    assert np.isnan(pinn.J_S_mean)
    lysep = df[df.solver == "lysep"].iloc[0]
    assert (lysep.n_seeds, lysep.n_diverged, lysep.n_runs) == (10, 1, 11)
    assert lysep.J_S_mean == pytest.approx(2e-5) and lysep.J_S_std == pytest.approx(0.0, abs=1e-20)
    assert reporting.aggregate([]).empty


def test_markdown_layout(paper_specs):
    text = tables.render_tables(selection(synthetic()), [paper_specs["elliptic-2d"]], "markdown")
    lines = text.splitlines()
    row = lambda prefix: next(l for l in lines if re.match(prefix, l))  # noqa: E731
    assert "| (3,30)  | PINN" in text
    pinn = row(r"\| \(3,30\)\s+\| PINN")
    assert "2.00e-02±1.41e-02" in pinn and "6.00e-02±1.41e-02" in pinn and "2/10 ‡" in pinn
    lysep = row(r"\|\s+\| LySep")
    assert "2.00e-05±" in lysep and "3.00e-05±" in lysep and "10/10 (1 div.)" in lysep and "‡" not in lysep
    # The published numbers are on their own "paper" rows, never in ours.
    paper = [l for l in lines if "↳ paper" in l]
    assert "1.88e-02±6.78e-03" in paper[0] and "2.36e-05±4.72e-06" in paper[1]
    assert "1.88e-02" not in pinn
    assert "rfls †" in text and "not in the paper" in text
    assert "No runs yet for (L,M) = (3,50), (3,80), (3,100)" in text
    assert "Iterations" not in text and "Not shown" not in text  # all at the spec's 2000


def _check_latex_rows(tex):
    body = tex[tex.index("\\midrule"):tex.index("\\bottomrule")]
    for line in body.splitlines():
        if line.startswith("&"):
            cells = (" " + line.rstrip("\\ ")).split(" & ")
            width = sum(2 if "\\multicolumn{2}" in c else 1 for c in cells)
            assert width == 6, line
    assert tex.count("{") == tex.count("}")


def test_latex_layout(paper_specs):
    tex = tables.render_tables(selection(synthetic()), [paper_specs["elliptic-2d"]], "latex", standalone=True)
    assert "\\toprule" in tex and "\\bottomrule" in tex and "\\multirow{5}{*}{$(3,30)$}" in tex
    assert "& PINN & \\multicolumn{2}{c}{2.00e-02$\\pm$1.41e-02}" in tex
    assert "sample std" in tex and "$N-1$" in tex
    assert "\\textit{1.88e-02$\\pm$6.78e-03}" in tex
    assert "rfls$^{\\dagger}$" in tex
    _check_latex_rows(tex)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
def test_latex_compiles(tmp_path, paper_specs):
    tex = tables.render_tables(selection(synthetic()), list(paper_specs.values())[:1], "latex", standalone=True)
    (tmp_path / "t.tex").write_text(tex)
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_table_from_a_tiny_run(tmp_path):
    specs = load_specs(write_tiny(tmp_path))
    spec = specs["parabolic-5d"]
    runner.run_experiment(spec, [runner.RunKey("pinn", 3, 5, 0)], 5, tmp_path / "res")
    runner.run_experiment(spec, [runner.RunKey("pinn", 3, 5, 1)], 3, tmp_path / "res")  # other iterations
    sel = reporting.select(load_records(tmp_path / "res"), [spec])
    md = tables.render_tables(sel, [spec], "markdown")
    J = sel.records[0].final.J
    # one seed: the sample std is undefined, the cell is the mean alone (never nan)
    assert len(sel.records) == 1 and f"| {J:.2e} " in md and f"{J:.2e}±" not in md and "1/2 ‡" in md
    assert "nan" not in md
    assert "Not shown: 1 run record(s) that do not match the spec (1 with other iterations)." in md
    tex = tables.render_tables(sel, [spec], "latex")
    assert f"{{{J:.2e}}}" in tex and f"{J:.2e}$\\pm$" not in tex and "$J^{p}$" in tex and "Not shown: 1 run record(s)" in tex
    _check_latex_rows(tex)
    # Shown with --iterations 3: the other record, and the note says which count the spec asks for.
    md3 = tables.render_tables(reporting.select(load_records(tmp_path / "res"), [spec], 3), [spec], "markdown")
    assert "Iterations: 3 (the spec asks for 5)." in md3 and "1 with other iterations" in md3
