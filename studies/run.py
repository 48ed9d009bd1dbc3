"""Every study of studies/: what it backs, the commands that regenerate its files, what it costs.

    python studies/run.py                      # the cheap studies (seconds each), into studies/results/
    python studies/run.py NAME [NAME ...]      # those studies in full (long ones say their cost first)
    python studies/run.py --list               # every study: cheap or long, cost, files, the claim
    python studies/run.py NAME --out DIR       # write the files into DIR instead (inputs copied there)

`make studies` runs the first form, `make studies STUDIES="a b"` the second.  A study whose inputs are
in the archive (results/paper) is rerun from them; `cheap` ones take seconds and are the default; a long
one prints its cost before it starts, and the ones marked `resumes` skip the runs their CSV already holds
after an interruption.  A long study with a `report` step (the summary from its committed rows) runs
that step alone among the defaults.  Studies whose inputs are not in the archive (`inputs`) say so and
are not run.  Every command runs from the repository root with one BLAS thread; `{py}` is this Python,
`{out}` the output folder.  tests/test_evidence.py checks this table against the modules, the Makefile,
the files under studies/results/ and the claims of README.md and docs/.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "studies" / "results"


@dataclass(frozen=True)
class Study:
    """One study: ``commands`` regenerate ``outputs`` (names under studies/results/); a command whose
    output file is named after ``>`` has its stdout written there."""

    claim: str
    outputs: tuple[str, ...]
    commands: tuple[str, ...]
    cost: str
    cheap: bool = False
    resumes: bool = False
    report: tuple[str, ...] = ()  # cheap commands: the summary from the committed rows
    reads: tuple[str, ...] = ()  # files of studies/results/ the commands read
    inputs: str = ""  # non-empty: the inputs are not in the archive, and why
    # how far a rerun of the cheap steps is from the committed files: 0, byte for byte; n, at most n lines
    # (the committed file predates the archive's regeneration: round-off digits); None, not comparable
    drift: int | None = 0


STUDIES: dict[str, Study] = {
    "archive_facts": Study(
        "README headline; docs/results.md 'Disagreements with the paper, explained' (every per-cell figure)",
        ("archive_facts.md",), ("{py} studies/archive_facts.py --out {out}/archive_facts.md",),
        "~3 CPU s", cheap=True),
    "pinn_plateau_phi": Study(
        "README headline; studies/explanations.md (a): the 2-D PINN stalls at the best affine phi",
        ("pinn_plateau_phi.md",), ("{py} studies/pinn_plateau_phi.py --out {out}/pinn_plateau_phi.md",),
        "~2 CPU s", cheap=True),
    "fit_size": Study(
        "README headline; docs/results.md 'The size of the fits': 2-D fits are fragile (one ulp of W_L)",
        ("fit_size.md",), ("{py} studies/fit_size.py --out {out}/fit_size.md",), "~35 CPU s", cheap=True),
    "b3_spread": Study(
        "studies/explanations.md (c): 10-D (3,20) LySep's seed spread is the seeded b_3",
        ("b3_spread_e10d_20.txt",), ("{py} studies/b3_spread.py > {out}/b3_spread_e10d_20.txt",),
        "~3 CPU s", cheap=True),
    "frozen_bias": Study(
        "README headline; studies/explanations.md (c), docs/lysep-depth.md: 10-D LySep's J is a W_L solve with b_L frozen",
        ("frozen_bias_e10d.txt", "frozen_bias_e10d_depth.txt"),
        ("{py} studies/frozen_bias.py --sizes 3x20,3x50,3x100,3x150 > {out}/frozen_bias_e10d.txt",
         "{py} studies/frozen_bias.py --experiment elliptic-10d-depth --sizes 2x50,4x50,5x50"
         " > {out}/frozen_bias_e10d_depth.txt"),
        "~15 CPU s", cheap=True),
    "cellstats_power": Study(
        "docs/archive.md (the regeneration's L-BFGS cell): the cell rule's false alarms per cell",
        ("cellstats_power.txt",), ("{py} studies/cellstats_power.py results/paper > {out}/cellstats_power.txt",),
        "~12 CPU s", cheap=True),
    "rfm_equal_accuracy": Study(
        "docs/results.md 'LySep against the one-shot least-squares methods': rfm at equal accuracy",
        ("rfm_equal_accuracy.md",), ("{py} studies/rfm_equal_accuracy.py > {out}/rfm_equal_accuracy.md",),
        "~1 CPU s", cheap=True, reads=("rfm_study.csv",)),
    "rfm_study": Study(
        "docs/results.md and docs/baselines.md 'rfm': accuracy and cost over (sigma, M), the default",
        ("rfm_study.csv", "rfm_study.md", "rfm_study_elliptic-2d.png", "rfm_study_elliptic-10d.png",
         "rfm_study_parabolic-5d.png", "rfm_study_hyperbolic-5d.png"),
        ("{py} studies/rfm_study.py",), "20-30 CPU-minutes (writes studies/results/ only)"),
    "lstsq_basic": Study(
        "docs/lysep.md and docs/baselines.md 'lstsq: basic': Matlab's backslash against min-norm",
        ("lstsq_basic.csv", "lstsq_basic.md"), ("{py} studies/lstsq_basic.py --out {out}/lstsq_basic",),
        "40-60 CPU-minutes", resumes=True,
        report=("{py} studies/lstsq_basic.py --report-only --out {out}/lstsq_basic",), reads=("lstsq_basic.csv",)),
    "pinn_ablations": Study(
        "README headline; studies/explanations.md (a), (e): PINN-GD ablations (PyTorch's init, steps, iterations)",
        ("pinn_ablations.csv", "pinn_ablations.md"), ("{py} studies/pinn_ablations.py --out {out}/pinn_ablations",),
        "about 10 CPU-hours (7 parts, cheapest first)", resumes=True,
        report=("{py} studies/pinn_ablations.py --summary-only --out {out}/pinn_ablations",),
        reads=("pinn_ablations.csv", "pinn_disagreements.txt"), drift=2),
    "pinn_torch_curve": Study(
        "README headline; studies/explanations.md (a): PINN's J curve from PyTorch's default start",
        ("pinn_torch_curve_e2d.md",), ("{py} studies/pinn_torch_curve.py --out {out}/pinn_torch_curve_e2d.md",),
        "~1 CPU-minute", reads=("pinn_ablations.csv",)),
    "pinn_curvature": Study(
        "studies/explanations.md (a): the curvature of J along PINN-GD's path sets the stable step",
        ("pinn_curvature_e2d.txt", "pinn_curvature_e2d.png", "pinn_curvature_e2d_lr2e-2.txt", "pinn_curvature_e2d.md"),
        ("{py} studies/pinn_curvature.py elliptic-2d --size 3x30 --seed 0 --at 0,100,500,2000"
         " --out {out}/pinn_curvature_e2d.txt --png {out}/pinn_curvature_e2d.png",
         "{py} studies/pinn_curvature.py elliptic-2d --size 3x30 --seed 0 --at 100,500,2000 --lr 2e-2"
         " --lr-final 2e-3 --out {out}/pinn_curvature_e2d_lr2e-2.txt"),
        "~15 CPU-minutes (pinn_curvature_e2d.md is the written summary of the two)"),
    "tune_pinn": Study(
        "README headline; studies/explanations.md (a), (d), (e): PINN learning-rate scans",
        ("pinn_schedule_scan_e2d.txt", "pinn_small_step_e10d.txt", "pinn_disagreements.txt"),
        ("{py} studies/tune_pinn.py elliptic-2d --size 3x30 --iterations 2000 --lrs 1e-3,2e-3,5e-3,1e-2,2e-2,3e-2,5e-2"
         " --ratio 0.1 --seeds 0-2 --archive results/paper --out {out}/pinn_schedule_scan_e2d.txt",
         "{py} studies/tune_pinn.py elliptic-10d --iterations 2000 --lrs 1e-2 --ratio 0.1 --archive results/paper"
         " --out {out}/pinn_small_step_e10d.txt --size 3x20 --seeds 0-4"),
        "~15 CPU-minutes (pinn_disagreements.txt: its scans, listed in its header, ~1 CPU-hour more)"),
    "stay_5000": Study(
        "studies/explanations.md (b): the archive's stuck seed stays on the ridge plateau to 5000 sweeps",
        ("stay_5000_e2d.txt",), ("{py} studies/stay_5000.py --out {out}/stay_5000_e2d.txt",), "~3.5 CPU-minutes"),
    "ridge_escape": Study(
        "studies/explanations.md (b): the ridge plateau and its escape, sweep by sweep",
        ("ridge_escape_e2d.txt",),
        ("{py} studies/ridge_escape.py elliptic-2d --sizes 3x30,3x100 --seed 3 --sweeps 600 --every 25"
         " > {out}/ridge_escape_e2d.txt",), "~4 CPU-minutes"),
    "escape_study": Study(
        "studies/explanations.md (b): round-off decides the escape only rarely",
        ("escape_e2d_100.txt", "escape_e2d_100_draw1.txt", "escape_e2d_100_more.txt"),
        ("{py} studies/escape_study.py elliptic-2d --size 3x100 --seeds 3,5 --eps 0,1e-15,1e-12 --draws 3"
         " --max-sweeps 2000 > {out}/escape_e2d_100.txt",),
        "~30 CPU-minutes per command (the other two files: more draws, their rows say which)"),
    "escape_sweeps": Study(
        "studies/explanations.md (b), docs/engine.md, docs/archive.md: escape sweeps of two archives side by side",
        ("regen_escape_e2d.txt", "backoff_escape_e2d.txt"),
        ("{py} studies/escape_sweeps.py results/paper results/regen > {out}/regen_escape_e2d.txt",),
        "seconds", inputs="a second archive (results/regen, or one made with backoff_max: 16) not committed"),
    "depth_stall": Study(
        "docs/lysep-depth.md (elliptic-2d-depth): two (5,50) seeds stop half-way down from the ridge fit",
        ("depth_stall_e2d_5x50.txt",),
        ("{py} studies/depth_stall.py elliptic-2d-depth --size 5x50 --seeds 0,6,8 --sweeps 400 --every 25"
         " > {out}/depth_stall_e2d_5x50.txt",), "~5 CPU-minutes"),
    "js_breakdown": Study(
        "studies/explanations.md (g): where LySep's J_S sits below J",
        ("js_breakdown.txt", "js_breakdown_e10d.txt"),
        ("{py} studies/js_breakdown.py parabolic-5d --size 3x20 --seeds 0 --sweeps 2000 --every 500"
         " > {out}/js_breakdown.txt",
         "{py} studies/js_breakdown.py elliptic-10d --size 3x20 --seeds 0 --sweeps 2000 --every 500"
         " > {out}/js_breakdown_e10d.txt"),
        "~10 CPU-minutes (the files' headers list every command they hold)"),
    "lysep_variants": Study(
        "docs/lysep.md 'Variants': weight treatment, W_3/b_3 solve, step rule side by side",
        ("lysep_variants.txt",),
        ("{py} studies/lysep_variants.py elliptic-10d 50 --seeds 0 --iterations 50 > {out}/lysep_variants.txt",),
        "~5 CPU-minutes (the file's header lists both commands)"),
    "baselines": Study(
        "docs/baselines.md 'Measured results': the baselines before the archive (10-D pinn-lm among them)",
        ("baselines.jsonl", "baselines10.jsonl", "baselines_table.md"),
        ("{py} studies/baselines.py --experiment elliptic-2d --solver rfls --seeds 0-9 --out {out}/baselines.jsonl",),
        "hours for every row (docs/baselines.md 'Reproducing' lists the commands)", resumes=False),
    "platform_spread_summary": Study(
        "docs/reproducibility.md 'What other platforms give (measured)': reruns under emulated platforms",
        ("platform_spread.txt",),
        ("bash studies/platform_spread.sh {out}/spread", "{py} studies/platform_spread_summary.py {out}/spread"
         " > {out}/platform_spread.txt"),
        "~10 CPU-minutes per emulated platform (3); needs an AVX-512 machine to emulate the others"),
    "fixed_tau_collapse": Study(
        "README headline; docs/results.md 'What the archive shows', docs/lysep.md: 10-D LySep as written at"
        " tau >= 1e2 collapses to poly of degree 0",
        ("fixed_tau_collapse.md",), ("{py} studies/fixed_tau_collapse.py --rerun",),
        "~2 CPU-minutes (the rerun; writes studies/results/ only)"),
    "verify_power": Study(
        "lysep_cli/reports/cellstats.py, docs/reproducibility.md: power and false alarms of verify --against's cell rule",
        ("verify_power.md",),
        ("{py} studies/verify_power.py results/paper results/paper-finals-2026-11.csv > {out}/verify_power.md",
         "{py} studies/verify_power.py --sizes results/paper results/paper-finals-2026-11.csv >> {out}/verify_power.md"),
        "a few CPU-minutes (simulated from the records, no reruns)"),
    "weights_spread": Study(
        "lysep_cli/reports/verify.py, docs/reproducibility.md: the weights pass's tolerance on another platform",
        ("weights_spread.txt",), ("{py} studies/weights_spread.py results/paper > {out}/weights_spread.txt",),
        "~3 CPU-minutes (952 records re-evaluated twice)"),
    "verify_plants": Study(
        "docs/reproducibility.md, docs/archive.md: planted changes against lysep verify, before and after issues 38, "
        "47 and 56",
        ("verify_plants.md", "verify_plants_56.md"),
        ("{py} studies/verify_plants.py before=BEFORE after=. > {out}/verify_plants.md",
         "{py} studies/verify_plants.py --issue47 before=BEFORE47 after=. >> {out}/verify_plants.md",
         "{py} studies/verify_plants.py --issue56 before=BEFORE56 after=. > {out}/verify_plants_56.md"),
        "a few CPU-minutes", inputs="checkouts of commits 7eba76a (BEFORE: `git worktree add BEFORE 7eba76a`), "
        "71c4bb1 (BEFORE47) and b815efc1 (BEFORE56)"),
}

# files of studies/results/ made by lysep commands or on other machines, not by a module of studies/
RECORDS: dict[str, str] = {
    "depth200_e10d.md": "docs/lysep-depth.md: `lysep run elliptic-10d-depth ... --iterations 200` (its header)",
    "fixed_tau_probe": "docs/lysep.md: the probe before the step-size study (its README.md)",
    "regen_verify_other_cpu.txt": "docs/reproducibility.md: `lysep verify` of the regeneration on another CPU",
    "reproducibility_history.md": "docs/reproducibility.md: the measurements and dated narratives behind its rules",
    "cluster_history.md": "docs/cluster.md: the measurements of the cluster path (pins, cost, workers kept busy)",
}


def _command(template: str, out: Path) -> tuple[list[str], Path | None]:
    """The argv of one command and the file its stdout goes to (None: the command writes its own)."""
    text = template.format(py=shlex.quote(sys.executable), out=shlex.quote(str(out)))
    head, _, target = text.partition(" > ")
    return shlex.split(head), (Path(target.strip()) if target else None)


def run(name: str, out: Path, steps: tuple[str, ...]) -> int:
    """Run the commands ``steps`` of study ``name`` into ``out``; the first failing exit status, or 0."""
    out.mkdir(parents=True, exist_ok=True)
    for f in STUDIES[name].reads:
        if out.resolve() != RESULTS.resolve() and (RESULTS / f).exists():
            shutil.copy2(RESULTS / f, out / f)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               OPENBLAS_NUM_THREADS="1")
    for template in steps:
        argv, target = _command(template, out)
        with open(target, "w", encoding="utf-8") if target else open(os.devnull, "w") as sink:
            rc = subprocess.run(argv, cwd=ROOT, env=env, stdout=sink if target else None).returncode
        if rc:
            print(f"studies: {name}: exit {rc} from {' '.join(argv)}", file=sys.stderr)
            return rc
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="studies to run in full (default: the cheap ones)")
    p.add_argument("--out", type=Path, default=RESULTS, help="output folder (default studies/results/)")
    p.add_argument("--list", action="store_true", help="list the studies and exit")
    a = p.parse_args(argv)
    unknown = [n for n in a.names if n not in STUDIES]
    if unknown:
        print(f"studies: unknown study {', '.join(unknown)} (known: {' '.join(STUDIES)})", file=sys.stderr)
        return 2
    if not a.list:
        try:
            a.out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            print(f"studies: cannot write to {a.out}: {e.strerror}", file=sys.stderr)
            return 2
    if a.list:
        for n, s in STUDIES.items():
            kind = "cheap" if s.cheap else ("not runnable here" if s.inputs else "long")
            print(f"{n:24} {kind:8} {s.cost}; {', '.join(s.outputs)}\n{'':24} backs: {s.claim}")
        return 0
    plan = [(n, STUDIES[n].commands) for n in a.names] or (
        [(n, s.commands) for n, s in STUDIES.items() if s.cheap]
        + [(n, s.report) for n, s in STUDIES.items() if s.report and not s.cheap])
    for name, steps in plan:
        s = STUDIES[name]
        if s.inputs:
            print(f"== {name}: not run: its inputs are {s.inputs}")
            continue
        cost = "its summary from the committed rows, seconds" if steps == s.report else s.cost
        print(f"== {name}: {cost}{'; resumes' if s.resumes and steps != s.report else ''} -> {a.out}", flush=True)
        rc = run(name, a.out, steps)
        if rc:
            return rc
        if s.drift != 0:
            print(f"   note: {name}'s committed files predate the archive's regeneration; this rerun differs from "
                  f"them ({'in at most %d lines' % s.drift if s.drift else 'cell counts and rates'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
