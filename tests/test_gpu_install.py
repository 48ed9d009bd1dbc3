"""Installing the GPU extra on a machine with only a driver (issue 46, item 5): ``lysep[gpu]`` asks for CuPy with
its CUDA-libraries extra (NVRTC, cuBLAS, cuSOLVER as wheels: ``cupy-cuda12x[ctk]``), and the help text that
names it prints it (rich markup would eat an unescaped ``[gpu]``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from typer.testing import CliRunner

from lysep_cli.cli import app

ROOT = Path(__file__).resolve().parents[1]


def test_run_help_names_the_gpu_extra():
    out = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "300", "TERMINAL_WIDTH": "300"}).stdout
    assert "pip install 'lysep[gpu]'" in out, [line for line in out.splitlines() if "pip install" in line]
    assert "pip install 'lysep')" not in out


def test_the_gpu_extra_brings_the_cuda_libraries():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (cupy,) = extras["gpu"]
    assert cupy.startswith("cupy-cuda12x[ctk]"), cupy  # without [ctk]: NVRTC, cuBLAS, cuSOLVER must be installed
    doc = (ROOT / "docs/gpu.md").read_text()
    assert "cupy-cuda12x[ctk]" in doc
