"""The explanations of README and docs/results.md: every file they name exists, and the committed outputs of
studies/pinn_plateau_phi.py and studies/fit_size.py are what the scripts regenerate from the archive."""

import lysep_cli  # noqa: F401

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from foundation_helpers import on_archive_platform

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "results" / "paper"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def script(name: str):
    if str(ROOT / "studies") not in sys.path:
        sys.path.insert(0, str(ROOT / "studies"))  # a study imports studies/common.py as its scripts do
    spec = importlib.util.spec_from_file_location(name, ROOT / "studies" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def plateau():
    return script("pinn_plateau_phi")


@pytest.fixture(scope="module")
def fit_size():
    return script("fit_size")


def named_files(text: str) -> set[str]:
    """Backticked file paths and names (with an extension of ours) in a markdown text."""
    names = set()
    for token in re.findall(r"`([^`\s]+)`", text):
        token = token.rstrip(".,;:)")
        if re.search(r"\w\.(py|md|txt|csv|png|json)$", token) and "<" not in token and "*" not in token:
            names.add(token)
    return names


def resolve(name: str) -> Path | None:
    """The file a name stands for: a path from the repository root, a bare name under studies/(results/),
    or a bare name of a file of the archive's experiments (`summary.md` of a study)."""
    for base in (ROOT, ROOT / "studies" / "results", ROOT / "studies", ROOT / "benchmarks" / "results", ROOT / "benchmarks"):
        if (base / name).exists():
            return base / name
    if "/" not in name:
        return next(iter(ARCHIVE.glob(f"*/*/{name}")), None)
    return None


@pytest.mark.parametrize("doc", ["README.md", "docs/results.md", "studies/explanations.md"])
def test_every_file_named_exists(doc):
    names = named_files((ROOT / doc).read_text(encoding="utf-8"))
    assert {"studies/results/fit_size.md", "pinn_plateau_phi.md"} & names or doc != "README.md"
    missing = sorted(n for n in names if resolve(n) is None)
    assert not missing, f"{doc} names files that do not exist: {missing}"


def test_the_new_explanations_are_named():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    results = (ROOT / "studies" / "explanations.md").read_text(encoding="utf-8")  # moved from docs/results.md
    for name in ("studies/results/fit_size.md", "pinn_plateau_phi.md", "pinn_ablations.md"):
        assert name in readme
    for name in ("studies/results/pinn_plateau_phi.md", "studies/results/fit_size.md",
                 "studies/results/stay_5000_e2d.txt", "studies/results/pinn_torch_curve_e2d.md"):
        assert name in results
    assert results.count("unmeasured (no committed file)") >= 2


def same_up_to_round_off(committed: str, regenerated: str, rel: float = 0.1) -> None:
    """The two texts line by line: the same words, every number within ``rel`` (one-ulp figures are
    round-off themselves and may move by a little on another platform)."""
    a, b = committed.splitlines(), regenerated.splitlines()
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert NUMBER.sub("#", x) == NUMBER.sub("#", y), (x, y)
        for u, v in zip(map(float, NUMBER.findall(x)), map(float, NUMBER.findall(y))):
            assert u == v or abs(u - v) <= rel * max(abs(u), abs(v)), (x, y)


def test_plateau_file_is_what_the_script_gives(plateau):
    committed = (ROOT / "studies" / "results" / "pinn_plateau_phi.md").read_text(encoding="utf-8")
    same_up_to_round_off(committed, plateau.report(ARCHIVE, None).replace(str(ARCHIVE), "results/paper"))


def test_fit_size_rows_are_what_the_script_gives(fit_size):
    committed = (ROOT / "studies" / "results" / "fit_size.md").read_text(encoding="utf-8").splitlines()
    regenerated = fit_size.report(ARCHIVE, ("elliptic-2d",), 3, None).splitlines()
    rows = [r for r in regenerated if r.startswith("| elliptic-2d")]
    assert len(rows) == 13  # PINN, LySep, rfls at four sizes, rfm at one
    committed = [r for r in committed if r.startswith("| elliptic-2d")]
    if not on_archive_platform():  # elsewhere the one-ulp, float32 and bit-for-bit columns are round-off
        committed, rows = ([" | ".join(r.split(" | ")[:6]) for r in t] for t in (committed, rows))
    same_up_to_round_off("\n".join(committed), "\n".join(rows))


def test_plateau_monomial_derivatives_match_differences(plateau):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (3, 7))
    h = 1e-5
    for j in range(3):
        e = np.zeros((3, 1))
        e[j] = h
        first = (plateau.monomials(X + e, 3) - plateau.monomials(X - e, 3)) / (2 * h)
        second = (plateau.monomials(X + e, 3) - 2 * plateau.monomials(X, 3) + plateau.monomials(X - e, 3)) / h**2
        assert np.allclose(plateau.monomial_derivatives(X, 3, j, 1), first, atol=1e-8)
        assert np.allclose(plateau.monomial_derivatives(X, 3, j, 2), second, atol=1e-4)
    assert len(plateau.exponents(2, 4)) == 15 and len(plateau.exponents(10, 2)) == 66


def test_projection_is_exact_on_polynomials_and_not_below(plateau):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (2, 50))
    cubic = 1 + X[0] - 2 * X[0] * X[1] ** 2
    assert plateau.projection_error(cubic, X, 3) < 1e-12
    assert plateau.projection_error(cubic, X, 2) > 0.1


def test_one_ulp_draws_move_every_entry_by_one_ulp(fit_size):
    W = np.array([[3.5e8, -1e-3, 0.0, 2.0]])
    for moved in fit_size.one_ulp_draws(W, 3, seed=5):
        assert np.all(np.abs(moved - W) == np.spacing(np.abs(W)))
        assert np.all(moved != W)


def test_stay_5000_runs_and_its_file_says_it_stayed():
    text = (ROOT / "studies" / "results" / "stay_5000_e2d.txt").read_text(encoding="utf-8")
    assert "bit for bit those of the record: J yes, J_S yes" in text
    assert "first sweep with J < 1e-6: none" in text
    short = script("stay_5000").report(ARCHIVE, 3)  # the rerun's first sweeps are the record's
    if on_archive_platform():  # bits are promised on the archive's platform only
        assert "first 3 sweeps bit for bit those of the record: J yes, J_S yes" in short
    else:
        assert "first 3 sweeps bit for bit those of the record: J " in short
