"""What every figure of ``lysep plot`` shares: the style, a solver's colour, marker and line style (the same
in every figure), and writing a figure as PNG and PDF (atomically, the same records giving the same bytes)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import matplotlib

matplotlib.use("Agg")  # no display; must come before pyplot

import matplotlib.pyplot as plt  # noqa: E402

from lysep_cli.solvers import SOLVERS, solver_def  # noqa: E402
from lysep_cli.store.atomic import write_bytes  # noqa: E402

FORMATS = ("png", "pdf")
STYLE = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7,
    "xtick.labelsize": 7, "ytick.labelsize": 7, "figure.titlesize": 9, "lines.linewidth": 0.8,
    "savefig.dpi": 200, "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.5,
}

#: solver -> (colour, marker, line style): the same in every figure; the extras (dashed, dash-dotted, dotted)
#: are told apart from PINN and LySep (solid) where their curves coincide
LOOKS = {
    "pinn": ("tab:red", "o", "-"), "lysep": ("tab:blue", "s", "-"),
    "pinn-adam": ("tab:green", "v", "--"), "pinn-lbfgs": ("tab:orange", "^", "-."),
    "pinn-lm": ("tab:purple", "P", ":"), "poly": ("tab:brown", "*", "--"),
    "rfls": ("tab:pink", "D", "--"), "rfm": ("tab:olive", "X", "--"),
    "varpro-gd": ("tab:cyan", "h", "--"), "varpro-lbfgs": ("tab:gray", "<", "-."), "varpro-lm": ("black", ">", ":"),
}
#: solvers not in LOOKS take the next of these, in their order of appearance
EXTRA_LOOKS = [("gold", "p", "--"), ("tab:cyan", "d", ":"), ("tab:gray", "H", "--"), ("black", "8", "-.")]


def looks(solvers: Iterable[str]) -> dict[str, tuple[str, str, str]]:
    """Solver -> (colour, marker, line style) for ``solvers``."""
    out, extra = {}, iter(EXTRA_LOOKS * 8)
    for s in solvers:
        out[s] = LOOKS.get(s) or next(extra)
    return out


@dataclass(frozen=True)
class Drawn:
    """What a figure function did: the files it wrote, and what each panel shows (panel key -> the panel's
    content, a dataclass of the figure's module)."""

    paths: list[Path]
    panels: dict[Any, Any]


def is_seed_free(solver: str) -> bool:
    """A solver whose run does not depend on the seed (poly): one fit, no seed."""
    return solver in SOLVERS and solver_def(solver).capabilities.seed_free


def save(fig, out_dir: Path, stem: str) -> list[Path]:
    """``stem``.png and ``stem``.pdf under ``out_dir``, each written atomically; the figure is closed."""
    paths = []
    try:
        for ext in FORMATS:
            buf = io.BytesIO()
            # no creation date in a PDF: the same records give the same bytes (no churn in the archive)
            fig.savefig(buf, format=ext, **({"metadata": {"CreationDate": None}} if ext == "pdf" else {}))
            paths.append(write_bytes(Path(out_dir) / f"{stem}.{ext}", buf.getvalue()))
    finally:
        plt.close(fig)
    return paths


__all__ = ["FORMATS", "STYLE", "LOOKS", "Drawn", "is_seed_free", "looks", "save", "plt"]
