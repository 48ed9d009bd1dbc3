"""The progress display's line per finished run (lysep_cli/execution/progress.py)."""

from __future__ import annotations

import io

from rich.console import Console

from lysep_cli.execution.progress import RichReporter
from lysep_cli.execution.runner import RunKey
from lysep_cli.specs import load_specs

from foundation_helpers import synthetic_record, write_tiny


def _line(tmp_path, resumed: list[int] | None) -> str:
    spec = load_specs(write_tiny(tmp_path))["elliptic-2d"]
    record, _ = synthetic_record(spec, "pinn", 3, 6, 0, J=1e-3, l2=2e-2, seconds=12.5)
    if resumed is not None:
        record.diagnostics["resumed_at_sweeps"] = resumed
    out = io.StringIO()
    reporter = RichReporter("elliptic-2d", Console(file=out, width=400, force_terminal=False))
    reporter.start(1)
    reporter.done(RunKey("pinn", 3, 6, 0), record)
    reporter.stop()
    return next(line for line in out.getvalue().splitlines() if "seed 0" in line)


def test_a_finished_run_and_how_often_it_was_resumed(tmp_path):
    assert _line(tmp_path, None).split() == ["pinn", "L3-M6", "seed", "0:", "ok", "J", "1.000e-03", "l2", "2.000e-02",
                                             "(12.5", "s)"]
    assert _line(tmp_path, [1377]).endswith("(12.5 s)  resumed from a checkpoint at sweep 1377")
    assert _line(tmp_path, [814, 963, 1500]).endswith(
        "(12.5 s)  resumed 3 times, from checkpoints at sweeps 814, 963 and 1500")
