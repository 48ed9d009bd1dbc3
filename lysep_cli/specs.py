"""Experiment specs: load and validate experiments.yaml, and parse the CLI's run selectors.

experiments.yaml has one top-level key, ``experiments``, mapping a name to a block::

    elliptic-2d:
      table: 1                      # paper table number (optional)
      pde: elliptic                 # elliptic | parabolic | hyperbolic
      d: 2                          # spatial dimension
      solution: exp-sin             # optional, see problems.make_problem
      sizes: [[3, 30], [3, 50]]     # (L, M) pairs, L >= 2, M >= 1
      n_train: 1000
      n_test: 350
      iterations: 2000
      seeds: [0, 1, 2]
      solvers:                      # solver name -> its settings (validated by the solver's Settings)
        pinn: {lr: 1.0e-3, lr_final: 1.0e-4}

Every validation error is a :class:`BadInput` whose message is one line naming the file, the
experiment, the solver (for a solver setting) and the field.  A spec that loads can be run: every
solver block is a valid typed ``Settings`` and every solver can train every size of its experiment.

Problems written in the file (``problems:``) are checked only when a command uses them: a broken one
never stops a command on other experiments.  :func:`load_specs` checks a problem's keys and keeps the
first fault as the experiment's ``invalid``; :func:`select_experiments` builds and checks the problems
of the experiments a command names (sympy, the checks of lysep_cli/numerics/user_problems.py at the
check points and the experiment's training and test points) and refuses a faulty one in one line; with
no name given it leaves such experiments out.  ``lysep list`` shows each with :func:`refusal`.

A ``families:`` section (:class:`Family`) holds problems with one knob ``kappa`` in their formulas and a grid
of kappa; :func:`load_specs` expands each into members ``NAME-k<kappa>``, a problem and an experiment each
(docs/harder.md).  Top-level keys ``x-NAME`` are not read (a place for YAML anchors).
"""

from __future__ import annotations

import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, NoReturn

import yaml

from lysep_cli.numerics.user_problems import DOMAINS, ProblemError, ProblemSpec
from lysep_cli.solvers import SOLVERS, SettingsError, SolverSettings, solver_def

PDES = ("elliptic", "parabolic", "hyperbolic")
REQUIRED = ("pde", "d", "sizes", "n_train", "n_test", "iterations", "seeds", "solvers")
OPTIONAL = ("table", "solution", "problem")
#: the top-level keys of an experiments file
TOP_KEYS = ("experiments", "problems", "families")
PROBLEM_KEYS = ("pde", "d", "domain", "c", "u", "f")
#: Largest spatial dimension.  The ball's points are drawn by rejection from the cube, whose share inside
#: the unit ball falls like 1 / d! (1 in 402 at d = 10, 1 in 3,068 at d = 12, 1 in 27,340 at d = 14: 1.6 s
#: and 17 s for 1,500 points); on the box, sympy's derivation of a problem's 2d + 1 functions grows as
#: fast (u = prod x_i (1 - x_i): 1.2 s at d = 12, 44 s at d = 30).  docs/your-pde.md.
MAX_D = 12
D_REASON = ("the ball's points are drawn by rejection from the cube (1 candidate in 3,068 kept at d = 12, "
            "1 in 27,340 at d = 14), and sympy's derivatives grow with d (docs/your-pde.md)")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: Largest count of seeds one --seeds selector may name.
MAX_SEEDS = 100_000
#: Largest count of seeds an experiment of the file may list: each is one run per solver and size (the
#: paper's experiments list 10; 10,000 seeds of elliptic-2d's 4 sizes and 2 solvers are 80,000 runs).
MAX_SPEC_SEEDS = 10_000
#: Largest seed: 2^32 - 1, what every NumPy generator takes (``RandomState`` and ``np.random.seed`` stop
#: there; ``default_rng`` takes more) and far below the byte offsets of the run locks (lysep_cli/store/locks.py).
MAX_SEED = 2**32 - 1
#: Most iterations of a run: a run keeps its history (8 bytes an iteration and series) in memory and on disk,
#: and at the archive's fastest pace (PINN at elliptic-2d (3,30), 1.8 ms an iteration) 10^6 iterations are
#: half a CPU-hour a run; the paper runs 2000.
MAX_ITERATIONS = 1_000_000
SEED_REASON = "seeds are 0 ... 2^32 - 1, what every NumPy generator takes"
ITERATIONS_REASON = ("a run keeps J at every iteration (8 bytes each, in memory and on disk), and the paper runs "
                     "2000; `lysep run --dry-run` estimates what a run costs")
#: Longest experiment name: it names a directory under results/ (file systems stop at 255 bytes).
MAX_NAME = 100
#: An experiments file is read whole: at most this many bytes (this project's is under 6 kB).
MAX_CONFIG_BYTES = 1 << 18
#: YAML nesting deeper than this is refused (PyYAML composes nodes recursively).
MAX_YAML_DEPTH = 32
#: Aliases (``*name``) in one file, and nodes of the document with every alias expanded (a "billion
#: laughs" file of nine aliases to nine aliases ... expands to 9^k nodes from a few hundred bytes).
MAX_YAML_ALIASES = 1_000
MAX_YAML_NODES = 200_000
#: A message quotes at most this many characters of a value from the file.
MAX_QUOTE = 80


class BadInput(ValueError):
    """Bad input from the user (experiments file, selectors, options, paths, a size beyond the memory,
    runs another lysep run holds): the command ends with exit code 2; the message is one line."""


@dataclass(frozen=True)
class ExperimentSpec:
    """One experiment of experiments.yaml (validated).

    sizes : (L, M) pairs in the order of the paper's table.
    solvers : solver name -> its validated settings (the solver's ``Settings`` dataclass).
    solver_sizes : solver name -> its own sizes, where its block gives ``sizes:`` (e.g. rfm's one wide
        hidden layer, L = 2); the others run the experiment's ``sizes`` (:meth:`sizes_for`).
    """

    name: str
    pde: str
    d: int
    sizes: tuple[tuple[int, int], ...]
    n_train: int
    n_test: int
    iterations: int
    seeds: tuple[int, ...]
    solvers: dict[str, SolverSettings] = field(default_factory=dict)
    table: int | None = None
    solution: str | None = None
    solver_sizes: dict[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    problem: ProblemSpec | None = None
    """a problem written in the experiments file (``problem:``); then ``solution`` is its identity"""
    invalid: str | None = None
    """why the experiment's problem cannot be used (a fault in its keys; one line naming the file, the
    problem and the field), found when the file is read; its formulas are checked by :func:`refusal`"""

    def sizes_for(self, solver: str) -> tuple[tuple[int, int], ...]:
        """The sizes ``solver`` runs in this experiment by default."""
        return self.solver_sizes.get(solver, self.sizes)


def n_inputs(pde: str, d: int) -> int:
    """The network's inputs: x (d) for an elliptic problem, (t, x) (d + 1) for the time-dependent ones."""
    return d if pde == "elliptic" else d + 1


def _one_line(text: str) -> str:
    """One line, printable whatever the file held (a lone surrogate is written as its escape)."""
    return " ".join(str(text).split()).encode("utf-8", "backslashreplace").decode("utf-8")


_KINDS = {int: "an integer", float: "a number", bool: "a boolean (yes, no, true, ...)", list: "a list",
          dict: "a mapping"}


def quoted(value: Any) -> str:
    """``repr(value)`` cut to :data:`MAX_QUOTE` characters, built without expanding a large value first."""
    import reprlib

    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 3, MAX_QUOTE, MAX_QUOTE
    text = short.repr(value)
    return text if len(text) <= MAX_QUOTE else text[:MAX_QUOTE - 3] + "..."


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


class _Checker:
    """Builds error messages that name the file, the experiment and the field."""

    def __init__(self, path: Path, experiment: str | None = None):
        self.path, self.experiment = path, experiment

    def fail(self, fieldname: str | None, message: str, solver: str | None = None) -> BadInput:
        where = [str(self.path)]
        if self.experiment is not None:
            where.append(f"experiment {self.experiment!r}")
        if solver is not None:
            where.append(f"solver {solver!r}")
        if fieldname is not None:
            where.append(f"field {fieldname!r}")
        return BadInput(_one_line(f"{', '.join(where)}: {message}"))

    def int_at_least(self, value: Any, fieldname: str, low: int, high: int | None = None,
                     why: str = "") -> int:
        if not _is_int(value):
            raise self.fail(fieldname, f"expected an integer, got {type(value).__name__} {quoted(value)}")
        if value < low:
            raise self.fail(fieldname, f"must be >= {low}, got {value}")
        if high is not None and value > high:
            raise self.fail(fieldname, f"must be <= {high:,}, got {quoted(value)}{': ' if why else ''}{why}")
        return value


def _parse_sizes(ck: "_Checker", sizes: Any, key: str) -> tuple[tuple[int, int], ...]:
    """A list of [L, M] pairs (L >= 2, M >= 1, no duplicate)."""
    if not isinstance(sizes, list) or not sizes:
        raise ck.fail(key, "expected a non-empty list of [L, M] pairs")
    parsed = []
    for i, pair in enumerate(sizes):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ck.fail(f"{key}[{i}]", f"expected a pair [L, M], got {pair!r}")
        L = ck.int_at_least(pair[0], f"{key}[{i}].L", 2)
        M = ck.int_at_least(pair[1], f"{key}[{i}].M", 1)
        parsed.append((L, M))
    if len(set(parsed)) != len(parsed):
        raise ck.fail(key, "duplicate (L, M) pair")
    return tuple(parsed)


def _parse_problem(name: Any, block: Any, path: Path) -> ProblemSpec | BadInput:
    """One entry of the ``problems:`` section (lysep_cli/numerics/user_problems.py), its keys checked;
    the first fault is returned, not raised (:func:`load_specs`), and the formulas are checked when the
    problem is used (:func:`refusal`)."""
    try:
        return _problem_keys(name, block, path)
    except BadInput as exc:
        return exc


def _problem_keys(name: Any, block: Any, path: Path) -> ProblemSpec:
    ck = _Checker(path, None)
    where = f"problems.{name}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise ck.fail(where, "a problem name is letters, digits, '.', '_' and '-'")
    if not isinstance(block, dict):
        raise ck.fail(where, f"expected a mapping of fields, got {type(block).__name__}")
    for key in block:
        if key not in PROBLEM_KEYS:
            raise ck.fail(f"{where}.{key}", f"unknown key (allowed: {', '.join(PROBLEM_KEYS)})")
    for key in ("pde", "d", "c"):
        if key not in block:
            raise ck.fail(f"{where}.{key}", "missing required key")
    if ("u" in block) == ("f" in block):
        raise ck.fail(f"{where}.u", "give the exact solution u, or the right-hand side f instead (not both)")
    if block["pde"] not in PDES:
        raise ck.fail(f"{where}.pde", f"unknown PDE {block['pde']!r} (choose from {', '.join(PDES)})")
    d = ck.int_at_least(block["d"], f"{where}.d", 1)
    if d > MAX_D:
        raise ck.fail(f"{where}.d", f"must be <= {MAX_D}, got {d}: {D_REASON}")
    domain = block.get("domain", "ball")
    if domain not in DOMAINS:
        raise ck.fail(f"{where}.domain", f"unknown domain {domain!r} (choose from {', '.join(DOMAINS)})")
    for key in ("c", "u", "f"):
        if key in block and (isinstance(block[key], bool) or not isinstance(block[key], (str, int, float))):
            raise ck.fail(f"{where}.{key}", f"expected a formula (a string), got {type(block[key]).__name__}")
    return ProblemSpec(name, block["pde"], d, str(block["c"]), str(block["u"]) if "u" in block else None,
                       domain, str(block["f"]) if "f" in block else None, config=str(path))


def _parse_experiment(name: Any, block: Any, path: Path,
                      problems: dict[str, ProblemSpec | BadInput] | None = None) -> ExperimentSpec:
    ck = _Checker(path, quoted(name)[1:-1] if isinstance(name, str) else str(name))
    if name is None:
        raise _Checker(path).fail("experiments", "an experiment has no name (YAML reads an empty key, ~ or null "
                                                 "as null); name it with letters, digits, '.', '_' and '-'")
    if not isinstance(name, str):
        raise ck.fail(None, f"the name {quoted(name)} is read by YAML as {_KINDS.get(type(name), 'a ' + type(name).__name__)}, not text: quote it "
                            f"('{name}':), or name it with letters, digits, '.', '_' and '-'")
    if len(name) > MAX_NAME:
        raise ck.fail(None, f"a name of {len(name)} characters; at most {MAX_NAME} (it names a directory under "
                            "results/)")
    if not _NAME.match(name):
        raise ck.fail(None, "an experiment name is letters, digits, '.', '_' and '-', starting with a letter "
                            "or digit (it names a directory under results/)")
    if not isinstance(block, dict):
        raise ck.fail(None, f"expected a mapping of fields, got {type(block).__name__}")
    for key in block:
        if key not in REQUIRED + OPTIONAL:
            raise ck.fail(str(key), f"unknown key (allowed: {', '.join(REQUIRED + OPTIONAL)})")
    problem, invalid = None, None
    if "problem" in block:
        problem = (problems or {}).get(block["problem"]) if isinstance(block["problem"], str) else None
        if problem is None:
            raise ck.fail("problem", f"no problem {block['problem']!r} in the file's problems: section")
        for key in ("pde", "d", "solution"):
            if key in block:
                raise ck.fail(key, f"given by problem {block['problem']!r}; remove it here")
        if isinstance(problem, BadInput):  # the experiment is kept, marked: only commands on it refuse it
            invalid, problem = str(problem), None
            block = {**block, "pde": PDES[0], "d": 1, "solution": f"{block['problem']}:invalid"}
        else:
            block = {**block, "pde": problem.pde, "d": problem.d}
    for key in REQUIRED:
        if key not in block:
            raise ck.fail(key, "missing required key")

    pde = block["pde"]
    if pde not in PDES:
        raise ck.fail("pde", f"unknown PDE {pde!r} (choose from {', '.join(PDES)})")
    d = ck.int_at_least(block["d"], "d", 1)
    if d > MAX_D:
        raise ck.fail("d", f"must be <= {MAX_D}, got {d}: {D_REASON}")
    solution = block.get("solution") if problem is None else problem.identity()
    if solution is not None and not isinstance(solution, str):
        raise ck.fail("solution", f"expected a string, got {type(solution).__name__}")
    table = block.get("table")
    if table is not None:
        ck.int_at_least(table, "table", 1)

    parsed_sizes = _parse_sizes(ck, block["sizes"], "sizes")

    n_train = ck.int_at_least(block["n_train"], "n_train", 1)
    n_test = ck.int_at_least(block["n_test"], "n_test", 1)
    iterations = ck.int_at_least(block["iterations"], "iterations", 1, MAX_ITERATIONS, ITERATIONS_REASON)

    seeds = block["seeds"]
    if not isinstance(seeds, list) or not seeds:
        raise ck.fail("seeds", "expected a non-empty list of integers")
    if len(seeds) > MAX_SPEC_SEEDS:
        raise ck.fail("seeds", f"{len(seeds):,} seeds; at most {MAX_SPEC_SEEDS:,} (each seed is one run per solver "
                               "and size; the paper's experiments list 10)")
    parsed_seeds = tuple(ck.int_at_least(s, f"seeds[{i}]", 0, MAX_SEED, SEED_REASON) for i, s in enumerate(seeds))
    if len(set(parsed_seeds)) != len(parsed_seeds):
        raise ck.fail("seeds", "duplicate seed")

    solvers = block["solvers"]
    if not isinstance(solvers, dict) or not solvers:
        raise ck.fail("solvers", "expected a non-empty mapping solver name -> settings")
    parsed_solvers: dict[str, SolverSettings] = {}
    own_sizes: dict[str, tuple[tuple[int, int], ...]] = {}
    for sname, settings in solvers.items():
        if sname not in SOLVERS:
            raise ck.fail(f"solvers.{sname}", f"unknown solver (registered: {', '.join(SOLVERS)})")
        if settings is not None and not isinstance(settings, dict):
            raise ck.fail(f"solvers.{sname}", f"settings must be a mapping, got {type(settings).__name__}",
                          solver=sname)
        settings = dict(settings or {})
        if "sizes" in settings:
            own_sizes[sname] = _parse_sizes(ck, settings.pop("sizes"), f"solvers.{sname}.sizes")
        try:
            typed = solver_def(sname).Settings.from_mapping(settings)
        except SettingsError as exc:
            raise ck.fail(exc.field, exc.reason, solver=sname) from None
        where = f"solvers.{sname}.sizes" if sname in own_sizes else "sizes"
        for i, (L, M) in enumerate(own_sizes.get(sname, parsed_sizes)):
            reason = typed.size_error(L, M) or typed.fit_error(n_inputs(pde, d), n_train, L, M)
            if reason is not None:
                raise ck.fail(f"{where}[{i}]", reason, solver=sname)
        parsed_solvers[sname] = typed

    # The problem must exist (e.g. the exp-sin solution is 2-D only).
    from lysep_cli.numerics.problems import make_problem

    if problem is None and invalid is None:
        try:
            make_problem(pde, d, solution)
        except ValueError as exc:
            raise ck.fail("solution" if solution is not None else "d", str(exc)) from None

    return ExperimentSpec(name, pde, d, parsed_sizes, n_train, n_test, iterations, parsed_seeds,
                          parsed_solvers, table, solution, own_sizes, problem, invalid)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a key given twice in one mapping is an error: plain PyYAML keeps
    the last value, so a repeated ``n_train:`` or ``lr:`` would silently change a run. Keys brought in
    by a merge (``<<: *anchor``) may still be overridden."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if repeated:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}",
                                                            key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


class _BoundedLoader(_UniqueKeyLoader):
    """:class:`_UniqueKeyLoader` that refuses, while composing and before anything is constructed, nesting
    deeper than :data:`MAX_YAML_DEPTH` (PyYAML recurses once per level: 500 levels were a RecursionError),
    more than :data:`MAX_YAML_ALIASES` aliases, and a document of more than :data:`MAX_YAML_NODES` nodes
    with its aliases expanded (nine aliases to nine aliases ..., k levels deep: 9^k nodes)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth, self._aliases, self._sizes = 0, 0, {}

    def _refuse(self, message: str) -> NoReturn:
        raise yaml.composer.ComposerError(None, None, message, self.peek_event().start_mark)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self._depth >= MAX_YAML_DEPTH:
            self._refuse(f"nested deeper than {MAX_YAML_DEPTH} levels")
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                self._refuse(f"more than {MAX_YAML_ALIASES:,} aliases (*name)")
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if id(node) not in self._sizes:  # (an alias returns its anchor's node, already counted)
            children = (node.value if isinstance(node, yaml.SequenceNode)
                        else [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else [])
            self._sizes[id(node)] = (node, 1 + sum(self._sizes[id(c)][1] for c in children))
        size = self._sizes[id(node)][1]
        if size > MAX_YAML_NODES:
            raise yaml.composer.ComposerError(None, None, f"more than {MAX_YAML_NODES:,} values with its aliases "
                                              "expanded (an alias bomb?)", node.start_mark)
        return node


def _read_config(path: Path, ck: "_Checker") -> str:
    """The text of an experiments file of at most :data:`MAX_CONFIG_BYTES` bytes: a longer file (``/dev/zero``,
    a pipe that does not end) is refused after reading that much, a regular file by its size first."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise ck.fail(None, "cannot read: Is a directory")
            if stat.S_ISREG(st.st_mode) and st.st_size > MAX_CONFIG_BYTES:
                raise ck.fail(None, f"{st.st_size:,} bytes; an experiments file is at most {MAX_CONFIG_BYTES:,} "
                                    "bytes (this project's is under 6 kB)")
            data = f.read(MAX_CONFIG_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        if isinstance(exc, BadInput):
            raise
        raise ck.fail(None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ck.fail(None, f"more than {MAX_CONFIG_BYTES:,} bytes (not a regular file: read no further); an "
                            "experiments file is at most that")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ck.fail(None, "not a UTF-8 text file") from None


def _read_document(path: Path) -> dict[Any, Any]:
    """The experiments file as a mapping (YAML, a key twice in one mapping refused; its size, depth and
    aliases bounded); BadInput otherwise."""
    ck = _Checker(path)
    text = _read_config(path, ck)
    try:
        doc = yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ck.fail(None, f"invalid YAML{where}: {problem}") from None
    if not isinstance(doc, dict):
        raise ck.fail(None, "expected a mapping with the key 'experiments'")
    for key in doc:
        if key not in TOP_KEYS and not (isinstance(key, str) and key.startswith("x-")):
            raise ck.fail(str(key), f"unknown top-level key (allowed: {', '.join(TOP_KEYS)}, and x-NAME for "
                                    "YAML anchors, not read)")
    return doc


def load_specs(path: str | Path) -> dict[str, ExperimentSpec]:
    """Read and validate an experiments file; returns name -> spec in file order (the members of its
    ``families:``, :func:`load_families`, after its own experiments)."""
    path = Path(path)
    ck = _Checker(path)
    doc = _read_document(path)
    families = _parse_families(doc.get("families", {}), path)
    experiments = doc.get("experiments", {} if families else None)
    if not isinstance(experiments, dict) or not (experiments or families):
        raise ck.fail("experiments", "expected a non-empty mapping name -> experiment")
    raw = doc.get("problems", {})
    if not isinstance(raw, dict):
        raise ck.fail("problems", "expected a mapping name -> problem")
    raw, experiments = dict(raw), dict(experiments)
    for family in families.values():
        for kappa in family.kappas:
            name = family.member(kappa)
            if name in raw or name in experiments:
                raise ck.fail(f"families.{family.name}", f"its member {name!r} is also a problem or an "
                                                          "experiment of the file; rename one")
            raw[name], experiments[name] = family.problem_block(kappa), family.experiment_block(kappa)
    problems = {str(name): _parse_problem(name, block, path) for name, block in raw.items()}
    return {str(name): _parse_experiment(name, block, path, problems) for name, block in experiments.items()}


# ---------------------------------------------------------------------------------------------
# Families: a problem with one difficulty knob kappa, and the experiment to run it with.

#: the knob's name in a family's formulas
KAPPA = re.compile(r"\bkappa\b")
FAMILY_KEYS = ("kappa_grid", "problem", "experiment")


def kappa_text(kappa: float) -> str:
    """kappa as written into formulas and names: 8 for 8.0, 0.25, 1e-05 (never a '+')."""
    return str(int(kappa)) if float(kappa).is_integer() and abs(kappa) < 1e15 else repr(float(kappa))


@dataclass(frozen=True)
class Family:
    """A family of the ``families:`` section: a problem whose formulas hold the name ``kappa``, the grid
    of kappa (increasing: harder), and the experiment block every member runs with.  Member kappa is the
    problem and experiment ``<name>-k<kappa>`` (:meth:`member`), its formulas with ``(kappa)`` written in
    (:meth:`problem_block`)."""

    name: str
    kappas: tuple[float, ...]
    problem: dict[str, Any]
    experiment: dict[str, Any]

    def member(self, kappa: float) -> str:
        return f"{self.name}-k{kappa_text(kappa)}"

    def problem_block(self, kappa: float) -> dict[str, Any]:
        """The problem block of member ``kappa``: ``kappa`` in every formula replaced by its value."""
        return {key: KAPPA.sub(f"({kappa_text(kappa)})", value) if key in ("c", "u", "f") and isinstance(value, str)
                else value for key, value in self.problem.items()}

    def experiment_block(self, kappa: float) -> dict[str, Any]:
        return {**self.experiment, "problem": self.member(kappa)}


def _finite_number(k: Any) -> bool:
    """A YAML int or float that is a finite float (an int of 400 digits is not)."""
    if isinstance(k, bool) or not isinstance(k, (int, float)):
        return False
    try:
        return math.isfinite(float(k))
    except OverflowError:
        return False


def _parse_families(raw: Any, path: Path) -> dict[str, Family]:
    """The ``families:`` section: each a mapping of kappa_grid (strictly increasing finite numbers, at
    least two), problem (a problem block whose formulas name kappa) and experiment (an experiment block
    without ``problem``).  The blocks themselves are checked as the members' problems and experiments."""
    ck = _Checker(path)
    if not isinstance(raw, dict):
        raise ck.fail("families", "expected a mapping name -> family")
    out: dict[str, Family] = {}
    for name, block in raw.items():
        where = f"families.{name}"
        if not isinstance(name, str) or not _NAME.match(name):
            raise ck.fail(where, "a family name is letters, digits, '.', '_' and '-', starting with a letter or digit")
        if not isinstance(block, dict):
            raise ck.fail(where, f"expected a mapping of fields, got {type(block).__name__}")
        for key in FAMILY_KEYS:
            if key not in block:
                raise ck.fail(f"{where}.{key}", "missing required key")
        for key in block:
            if key not in FAMILY_KEYS:
                raise ck.fail(f"{where}.{key}", f"unknown key (allowed: {', '.join(FAMILY_KEYS)})")
        grid = block["kappa_grid"]
        if not isinstance(grid, list) or len(grid) < 2 or not all(_finite_number(k) for k in grid):
            raise ck.fail(f"{where}.kappa_grid", "expected a list of at least two finite numbers")
        if any(b <= a for a, b in zip(grid, grid[1:])):
            raise ck.fail(f"{where}.kappa_grid", "must be strictly increasing (kappa grows with the difficulty)")
        problem, experiment = block["problem"], block["experiment"]
        if not isinstance(problem, dict) or not isinstance(experiment, dict):
            raise ck.fail(where, "problem and experiment must be mappings of fields")
        if not any(isinstance(problem.get(k), str) and KAPPA.search(problem[k]) for k in ("c", "u", "f")):
            raise ck.fail(f"{where}.problem", "no formula names kappa (the family's knob)")
        if "problem" in experiment:
            raise ck.fail(f"{where}.experiment.problem", "given by the family; remove it here")
        out[name] = Family(name, tuple(float(k) for k in grid), dict(problem), dict(experiment))
    return out


def load_families(path: str | Path) -> dict[str, Family]:
    """The ``families:`` of an experiments file (empty when it has none), in file order."""
    path = Path(path)
    return _parse_families(_read_document(path).get("families", {}), path)


def default_config() -> Path:
    """./experiments.yaml if present, else the one at the root of the source tree."""
    here = Path("experiments.yaml")
    if here.exists():
        return here
    return Path(__file__).resolve().parent.parent / "experiments.yaml"


def refusal(spec: ExperimentSpec) -> str | None:
    """Why the experiment's problem cannot be used, in one line naming the file, the problem and the field
    (None: it can, or it is one of the paper's).  A problem written in the file is built and checked here
    (lysep_cli/numerics/user_problems.py), at its check points and the experiment's training and test
    points, once per process."""
    if spec.invalid is not None:
        return spec.invalid
    if spec.problem is None:
        return None
    from lysep_cli.numerics.dataset import experiment_data

    try:
        experiment_data(spec)
    except ProblemError as exc:
        return str(_Checker(Path(spec.problem.config)).fail(f"problems.{spec.problem.name}.{exc.field}", exc.reason))
    return None


def select_experiments(specs: dict[str, ExperimentSpec], names: list[str] | None) -> list[ExperimentSpec]:
    """The named experiments, each once in the order first named; BadInput for an unknown name or one
    whose problem is refused (:func:`refusal`).  When ``names`` is empty: every experiment whose problem
    is not refused."""
    if not names:
        return [s for s in specs.values() if refusal(s) is None]
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise BadInput(f"unknown experiment {unknown[0]!r} (choose from {', '.join(specs)})")
    chosen = [specs[n] for n in dict.fromkeys(names)]
    for spec in chosen:
        reason = refusal(spec)
        if reason is not None:
            raise BadInput(reason)
    return chosen


# ---------------------------------------------------------------------------------------------
# CLI selectors.

# re.ASCII: \d is 0-9 alone (without it "٣x٥٠" or "３-５" would be read as numbers).
_SIZE = re.compile(r"^\s*(-?\d+)\s*[xX]\s*(-?\d+)\s*$", re.ASCII)
_RANGE = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$", re.ASCII)
_INT = re.compile(r"^\s*-?\d+\s*$", re.ASCII)


def _given(text: str | None, option: str) -> bool:
    """False for an absent option (None); BadInput for an empty one ("" never means "everything")."""
    if text is None:
        return False
    if not text.strip():
        raise BadInput(f"{option}: empty value (leave the option out to use the spec's)")
    return True


def parse_sizes(text: str | None, spec: ExperimentSpec, solver: str | None = None) -> list[tuple[int, int]]:
    """``--sizes``: "3x50,3x80" (any L >= 2, M >= 1), "smallest", or None for the spec's sizes (those of
    ``solver`` where its block gives its own)."""
    default = spec.sizes if solver is None else spec.sizes_for(solver)
    if not _given(text, "--sizes"):
        return list(default)
    assert text is not None
    if text.strip() == "smallest":
        return [default[0]]
    sizes: list[tuple[int, int]] = []
    for item in text.split(","):
        m = _SIZE.match(item)
        if not m:
            raise BadInput(f"--sizes: cannot parse {item.strip()!r}; expected LxM, e.g. 3x50,3x80")
        L, M = int(m.group(1)), int(m.group(2))
        if L < 2 or M < 1:
            raise BadInput(f"--sizes: {item.strip()!r} needs L >= 2 and M >= 1")
        if (L, M) not in sizes:
            sizes.append((L, M))
    return sizes


def seed_ranges(seeds: Iterable[int]) -> str:
    """The inverse of :func:`parse_seeds` for sorted seeds: [0, 1, 2, 3, 5, 7, 8, 9] -> "0-3,5,7-9"."""
    seeds = list(seeds)
    parts, i = [], 0
    while i < len(seeds):
        j = i
        while j + 1 < len(seeds) and seeds[j + 1] == seeds[j] + 1:
            j += 1
        parts.append(str(seeds[i]) if i == j else f"{seeds[i]}-{seeds[j]}")
        i = j + 1
    return ",".join(parts)


def parse_seeds(text: str | None, spec: ExperimentSpec) -> list[int]:
    """``--seeds``: "0-9", "0,3,5", "0-3,7", or None for the spec's seeds (at most MAX_SEEDS seeds)."""
    if not _given(text, "--seeds"):
        return list(spec.seeds)
    assert text is not None
    seeds: dict[int, None] = {}  # insertion-ordered set
    for item in text.split(","):
        m = _RANGE.match(item)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise BadInput(f"--seeds: empty range {item.strip()!r} (start > end)")
        elif _INT.match(item):
            lo = hi = int(item)
        else:
            raise BadInput(f"--seeds: cannot parse {item.strip()!r}; expected e.g. 0-9 or 0,3,5")
        if lo < 0:
            raise BadInput(f"--seeds: seeds must be >= 0, got {lo}")
        if hi > MAX_SEED:
            raise BadInput(f"--seeds: seeds must be <= {MAX_SEED:,}, got {hi}: {SEED_REASON}")
        if hi - lo + 1 + len(seeds) > MAX_SEEDS:
            raise BadInput(f"--seeds: more than {MAX_SEEDS:,} seeds (each seed is one run per solver and size)")
        twice = next((s for s in range(lo, hi + 1) if s in seeds), None)
        if twice is not None:  # as the experiments file: a duplicate seed is refused, not merged
            raise BadInput(f"--seeds: seed {twice} given twice")
        seeds.update(dict.fromkeys(range(lo, hi + 1)))
    return list(seeds)


def check_iterations(value: int | None, option: str = "--iterations") -> None:
    """BadInput for iterations below 1 or above :data:`MAX_ITERATIONS` (None: the spec's, checked with it)."""
    if value is not None and value < 1:
        raise BadInput(f"{option} must be >= 1, got {value}")
    if value is not None and value > MAX_ITERATIONS:
        raise BadInput(f"{option} must be <= {MAX_ITERATIONS:,}, got {value}: {ITERATIONS_REASON}")


def check_sizes(spec: ExperimentSpec, solvers: list[str],
                sizes: list[tuple[int, int]] | dict[str, list[tuple[int, int]]]) -> None:
    """BadInput when one of ``solvers`` cannot train one of ``sizes`` (its own, for a mapping; e.g. LySep
    needs L = 3)."""
    for name in solvers:
        for L, M in (sizes[name] if isinstance(sizes, dict) else sizes):
            s = spec.solvers[name]
            reason = s.size_error(L, M) or s.fit_error(n_inputs(spec.pde, spec.d), spec.n_train, L, M)
            if reason is not None:
                raise BadInput(f"--sizes: {L}x{M} cannot be run by {name!r}: {reason}")


def parse_solvers(text: str | None, spec: ExperimentSpec) -> list[str]:
    """``--solver``: a name, a comma list, "paper" (pinn, lysep) or "all" (every solver of the spec).

    None: the paper's solvers that the spec configures (all of its solvers if it has neither).
    """
    from lysep_cli.solvers import PAPER_SOLVERS

    if not _given(text, "--solver"):
        return [s for s in PAPER_SOLVERS if s in spec.solvers] or list(spec.solvers)
    assert text is not None
    if text.strip() == "all":
        return list(spec.solvers)
    names: list[str] = []
    for item in text.split(","):
        item = item.strip()
        group = list(PAPER_SOLVERS) if item == "paper" else [item]
        for name in group:
            if name not in SOLVERS:
                raise BadInput(f"--solver: unknown solver {name!r} (registered: {', '.join(SOLVERS)})")
            if name not in spec.solvers:
                raise BadInput(f"--solver: {name!r} has no settings in experiment {spec.name!r} "
                                f"(configured: {', '.join(spec.solvers)})")
            if name not in names:
                names.append(name)
    return names
