"""Rich progress display for a sweep: one bar (runs done / to do), the current loss, a line per run."""

from __future__ import annotations

import math
import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lysep_cli.execution.runner import Reporter, RunKey
from lysep_cli.store.schema import RunRecord


class RichReporter(Reporter):
    """Progress bar on stderr; one log line per finished run (kept when the bar is redrawn)."""

    def __init__(self, title: str, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.title = title
        self.active: dict[RunKey, tuple[int, float]] = {}
        self.finished = 0
        self.failures = 0
        self._last_draw = 0.0
        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[status]}"),
                                 console=self.console)
        self.task: Any = None

    def start(self, total: int) -> None:
        self.progress.start()
        self.task = self.progress.add_task(self.title, total=total, status="")

    def _status(self) -> str:
        parts = []
        for key, (k, value) in self.active.items():
            loss = "…" if math.isnan(value) else f"{value:.3e}"
            parts.append(f"{key.solver} {key.L}x{key.M} s{key.seed} J {loss}")
        return " | ".join(parts)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_draw > 0.1:
            self._last_draw = now
            self.progress.update(self.task, status=self._status())

    def begin(self, key: RunKey) -> None:
        self.active[key] = (-1, math.nan)
        self._draw(force=True)

    def loss(self, key: RunKey, k: int, value: float) -> None:
        self.active[key] = (k, value)
        self._draw()

    def done(self, key: RunKey, record: RunRecord) -> None:
        self.active.pop(key, None)
        self.finished += 1
        final = record.final
        text = f"{key.label()}: {record.status}"
        if record.status == "diverged":
            text = f"[red]{text} at iteration {record.diverged_at}[/red]"
        text += f"  J {final.J:.3e}" if final.J is not None else "  J nan"
        if final.J_S is not None:
            text += f"  J_S {final.J_S:.3e}"
        if final.l2 is not None:
            text += f"  l2 {final.l2:.3e}"
        text += f"  ({record.seconds:.1f} s)"
        resumed = record.diagnostics.get("resumed_at_sweeps")
        if resumed:
            sweeps = [str(k) for k in resumed]  # one entry per interruption
            text += ("  resumed from a checkpoint at sweep " + sweeps[0] if len(sweeps) == 1 else
                     f"  resumed {len(sweeps)} times, from checkpoints at sweeps {', '.join(sweeps[:-1])} and {sweeps[-1]}")
        self.progress.console.print(text, highlight=False, markup=record.status == "diverged")
        self.progress.advance(self.task)
        self._draw(force=True)

    def failed(self, key: RunKey, error: str) -> None:
        self.active.pop(key, None)
        self.failures += 1
        self.progress.console.print(f"[red]{key.label()}: FAILED: {escape(error)}[/red]", highlight=False)
        self.progress.advance(self.task)
        self._draw(force=True)

    def stop(self) -> None:
        self.progress.stop()
