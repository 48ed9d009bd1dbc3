"""Run the planned runs of a sweep on a dask.distributed cluster: one task per run, or per stack.

The client (``lysep run --scheduler ...``) plans as usual, then sends each run's spec and key to the
scheduler.  A worker builds the experiment's data itself (deterministic Halton points), trains through
:func:`lysep_cli.execution.runner.execute` (one BLAS thread, no file I/O) and sends back the record and the
weights.  With a stacked device (``--device cuda``, ``cpu-stacked``; docs/gpu.md) a task is a cell's stack,
the seeds of one (solver, L, M), trained by :func:`lysep_cli.execution.runner.execute_stack` on the worker's
device (one GPU per worker), and the workers are checked to run that device (:meth:`Session._check_device`).  Only the client writes files, with the runner's atomic writer, so the workers need no shared
filesystem and may run in any directory on any machine; the numbers equal those of ``--jobs 1``.

Failure handling:

* a worker lost mid-run (killed, out of memory): the scheduler reruns the task on another worker, and
  the client receives its result once (``distributed.scheduler.allowed-failures`` losses per task,
  3 by default, before the run is reported as failed);
* a run raising inside a worker: reported with its error text, the other runs go on;
* Ctrl-C or SIGTERM on the client: the outstanding tasks are cancelled, finished records stay.

Platform pins (lysep_cli/platform_pin.py): a ``dask worker`` process imports NumPy before lysep, so the pins
lysep sets when it is imported come too late there unless the worker was started with ``--preload
lysep_cli.platform_pin`` (or from an environment that has them).  A worker whose NumPy or OpenBLAS runs
without the pins its environment asks for refuses every run (:func:`run_task`), the client refuses to
start with such a worker or with one on another platform than its own (:meth:`Session.open`), and a
record made on another platform than the client's is not written (lysep_cli/execution/runner.py): one
results directory never mixes platforms silently.

Who may use the cluster: dask ships pickled functions, so whoever reaches a scheduler's port can run code on
every worker.  A ``local`` cluster binds its scheduler, workers and dashboard to the loopback interface;
a remote scheduler should be a ``tls://`` one, with the certificates given by ``--tls-ca-file``,
``--tls-cert`` and ``--tls-key`` (:class:`TLSFiles`) or by dask's configuration
(``distributed.comm.tls.*``), and then a client without a certificate its CA signed is refused.

dask.distributed is the optional extra ``lysep[dask]`` (installed by ``make install``); it is imported
only when a scheduler is actually used.  See docs/cluster.md.
"""

from __future__ import annotations

import json
import logging
import os
import queue as queue_mod
import signal
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urlsplit

from lysep_cli.accel import backend
from lysep_cli.execution import interrupts, runner
from lysep_cli.execution.memory import tune_malloc
from lysep_cli.execution.runner import Reporter, RunKey
from lysep_cli.numerics.network import Params
from lysep_cli.solvers import stacks
from lysep_cli.specs import ExperimentSpec
from lysep_cli.store.fingerprint import (DEVICE_KEYS, EXACT_KEYS, differing, fingerprint, pins_not_in_force,
                                         same_platform, stacked_numerics_id)
from lysep_cli.store.schema import RunRecord

ENV_VAR = "LYSEP_SCHEDULER"
SCHEMES = ("tcp", "tls", "ws", "wss")
CONNECT_TIMEOUT = 10.0
#: how to start a worker so that its NumPy and OpenBLAS load under lysep's platform pins (docs/cluster.md)
PIN_HINT = "start the workers with `dask worker --preload lysep_cli.platform_pin ...` (docs/cluster.md)"
PROGRESS_EVERY = 1.0  # seconds between a worker's progress events for one run
DASHBOARD_PORT = 8787
#: where a ``local`` cluster listens: this machine only (dask would bind every interface)
LOOPBACK = "127.0.0.1"


class ClusterError(ValueError):
    """Bad scheduler address or file, unreachable scheduler, dask.distributed missing (one line)."""


Terminated = interrupts.Terminated
"""SIGTERM on the client during a cluster sweep (handled like Ctrl-C, exit code 143)."""


# ---------------------------------------------------------------------------------------------
# Where the scheduler is.

@dataclass(frozen=True)
class Target:
    """A scheduler to connect to (``address``) or a LocalCluster to start (``local_workers``)."""

    address: str | None = None
    local_workers: int | None = None
    local_default: bool = False  # a bare ``local``: one worker per core, or per GPU with --device cuda
    tls: "TLSFiles | None" = None
    """the client's certificates for a tls:// scheduler (None: dask's configuration, if any)"""

    def describe(self) -> str:
        return self.address if self.address is not None else f"local:{self.local_workers}"

    def for_device(self, device: str) -> "Target":
        """This target for ``device``: a bare ``local`` with ``cuda`` starts one worker per GPU."""
        if self.local_default and device == "cuda":
            return Target(local_workers=max(1, backend.gpu_count()))
        return self

    def with_tls(self, tls: "TLSFiles | None") -> "Target":
        """This target with the client's certificates; ClusterError unless it is a tls:// scheduler."""
        if tls is None:
            return self
        if self.address is None or not self.address.startswith("tls://"):
            raise ClusterError(f"--tls-ca-file, --tls-cert and --tls-key go with a tls:// scheduler, not "
                               f"{self.describe()}")
        return Target(self.address, tls=tls)


# ---------------------------------------------------------------------------------------------
# Who may use it: TLS.

@dataclass(frozen=True)
class TLSFiles:
    """A client's TLS material for a ``tls://`` scheduler: the CA that signed the cluster's certificates,
    and this client's certificate and key (PEM files; the key may be in the certificate file)."""

    ca_file: Path
    cert: Path
    key: Path | None = None

    @classmethod
    def of(cls, ca_file: Path | None, cert: Path | None, key: Path | None) -> "TLSFiles | None":
        """The options as given (None when none is); ClusterError for a partial set or an unreadable file."""
        if ca_file is None and cert is None and key is None:
            return None
        if ca_file is None or cert is None:
            raise ClusterError("TLS needs --tls-ca-file and --tls-cert (and --tls-key unless the certificate "
                               "file holds the key)")
        for option, path in (("--tls-ca-file", ca_file), ("--tls-cert", cert), ("--tls-key", key)):
            if path is not None and not (path.is_file() and os.access(path, os.R_OK)):
                raise ClusterError(f"{option} {path}: not a readable file")
        return cls(ca_file, cert, key)

    def security(self) -> Any:
        """The ``distributed.Security`` of a client that requires encryption."""
        distributed = _import_distributed()
        return distributed.Security(tls_ca_file=str(self.ca_file), tls_client_cert=str(self.cert),
                                    tls_client_key=None if self.key is None else str(self.key),
                                    require_encryption=True)


def default_workers() -> int:
    """Cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def parse_address(text: str, what: str = "--scheduler") -> Target | None:
    """``tcp://HOST:PORT`` (also tls, ws, wss; a bare HOST:PORT means tcp), ``local``, ``local:N``, or
    ``none`` (no cluster: run with ``--jobs``); :class:`ClusterError` otherwise."""
    text = text.strip()
    if text.lower() == "none":
        return None
    if text == "local" or text.startswith("local:"):
        if text == "local":
            return Target(local_workers=default_workers(), local_default=True)
        n = text.split(":", 1)[1]
        if not (n.isascii() and n.isdecimal()) or int(n) < 1:  # 0-9 alone ("²", "٣" are not N)
            raise ClusterError(f"{what}: expected local:N with N >= 1 workers, got {text!r}")
        return Target(local_workers=int(n))
    url = text if "://" in text else f"tcp://{text}"
    bad = ClusterError(f"{what}: malformed scheduler address {text!r} "
                       f"(expected tcp://HOST:PORT, local or local:N)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise bad from None
    if (parts.scheme not in SCHEMES or not parts.hostname or port is None or port < 1
            or parts.path not in ("", "/") or parts.query or parts.fragment or parts.username):
        raise bad
    return Target(address=f"{parts.scheme}://{parts.netloc}")


def read_scheduler_file(path: str | Path) -> Target:
    """The address in a scheduler file (JSON written by ``dask scheduler --scheduler-file``,
    dask-jobqueue, dask-mpi)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ClusterError(f"--scheduler-file {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClusterError(f"--scheduler-file {path}: cannot read it ({exc.__class__.__name__})") from None
    try:
        info = json.loads(text)
    except ValueError:
        raise ClusterError(f"--scheduler-file {path}: not a dask scheduler file (invalid JSON)") from None
    address = info.get("address") if isinstance(info, dict) else None
    if not isinstance(address, str) or not address:
        raise ClusterError(f"--scheduler-file {path}: not a dask scheduler file (no \"address\")")
    target = parse_address(address, what=f"--scheduler-file {path}")
    if target is None or target.address is None:
        raise ClusterError(f"--scheduler-file {path}: malformed scheduler address {address!r}")
    return target


def resolve_target(scheduler: str | None, scheduler_file: Path | None,
                   environ: Mapping[str, str] = os.environ) -> Target | None:
    """The cluster to use: ``--scheduler``, else ``--scheduler-file``, else ``$LYSEP_SCHEDULER``;
    None means no cluster."""
    if scheduler is not None and scheduler_file is not None:
        raise ClusterError("give either --scheduler or --scheduler-file, not both")
    if scheduler_file is not None:
        return read_scheduler_file(scheduler_file)
    if scheduler is not None:
        return parse_address(scheduler)
    env = environ.get(ENV_VAR, "").strip()
    return parse_address(env, what=f"${ENV_VAR}") if env else None


# ---------------------------------------------------------------------------------------------
# The task run by a worker.

def _ready_worker() -> None:
    """Refuse (RuntimeError, one line) where this process runs without the platform pins a local run has;
    undo the nanny's MALLOC_TRIM_THRESHOLD_=65536 (lysep_cli/execution/memory.py)."""
    unpinned = pins_not_in_force()
    if unpinned:
        raise RuntimeError(f"this dask worker runs without lysep's platform pins ({'; '.join(unpinned)}): "
                           f"NumPy was loaded before lysep; {PIN_HINT}")
    tune_malloc()


def _progress(topic: str | None, keys: list[RunKey]) -> Callable[[int, Any], None] | None:
    """progress(k, J) sending each run's loss as a dask event about once a second (J: one value, or one
    per key of a stack (S,)); None where there is no topic or no worker."""
    if topic is None:
        return None
    try:
        from distributed import get_worker

        log = get_worker().log_event
    except (ImportError, ValueError):
        return None
    last = [-PROGRESS_EVERY]
    idents = [[key.solver, key.L, key.M, key.seed] for key in keys]

    def progress(k: int, J: Any) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_EVERY:
            last[0] = now
            values = J if hasattr(J, "__len__") else [J]
            try:
                for ident, value in zip(idents, values):
                    log(topic, {"key": ident, "k": int(k), "J": float(value)})
            except Exception:  # a lost progress event costs nothing
                pass

    return progress


def run_task(spec: ExperimentSpec, key: RunKey, iterations: int,
             topic: str | None = None) -> tuple[dict[str, Any], Params]:
    """One run on a worker: :func:`runner.execute` (no file I/O), progress sent as dask events.  Refused
    (RuntimeError, one line) where this process runs without the platform pins a local run has."""
    _ready_worker()
    return runner.execute(spec, key, iterations, _progress(topic, [key]))


def run_stack_task(spec: ExperimentSpec, keys: list[RunKey], iterations: int, device: str,
                   topic: str | None = None) -> list[tuple[RunRecord, Params]]:
    """One stack on a worker: the seeds ``keys`` of one (solver, L, M) in one stack on ``device``
    (:func:`runner.execute_stack`, no file I/O: no checkpoint, as no run on a worker keeps one), (record,
    params) per key in order.  Refused as :func:`run_task` is; a worker that cannot run ``device`` (no CuPy,
    no GPU) raises its one line."""
    _ready_worker()
    return runner.execute_stack(spec, keys, iterations, device, _progress(topic, keys))


def worker_device(device: str) -> dict[str, str] | str:
    """What a record of ``device`` made on this worker adds to the fingerprint (the device, array library,
    GPU model, CUDA runtime, stacked numerics id: lysep_cli/accel/backend.py), or why it cannot run here."""
    try:
        return backend.resolve(device).fingerprint(stacked_numerics_id())
    except backend.DeviceUnavailable as exc:
        return str(exc)


def worker_platform() -> tuple[dict[str, str], list[str]]:
    """A worker's fingerprint and the pins it runs without (:func:`pins_not_in_force`)."""
    return fingerprint(), pins_not_in_force()


# ---------------------------------------------------------------------------------------------
# The client side.

@dataclass
class Outcome:
    """A finished run: its record and weights, or the error it raised (``error``)."""

    key: RunKey
    record: dict[str, Any] | None = None
    params: Params | None = None
    error: str | None = None


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError("--scheduler needs dask.distributed: pip install 'lysep[dask]' "
                           "(make install does)") from None
    return distributed


def _error_text(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """Processes started within the block ignore SIGINT (inherited through exec).

    Ctrl-C in a terminal reaches the whole process group, the workers of a LocalCluster included;
    the client alone handles it (cancels, closes the cluster), without a traceback from each worker.
    (A worker that its nanny restarts later does not inherit this.)
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Session:
    """A connected dask client (and the LocalCluster it started, if any).

    Use :meth:`open` and close it (or use it as a context manager); :meth:`results` runs the tasks.
    """

    def __init__(self, client: Any, target: Target, local: Any = None, device: str = "cpu"):
        self.client, self.target, self.local, self.device = client, target, local, device
        self._outstanding: dict[Any, tuple[Any, list[RunKey]]] = {}
        self.warnings: list[str] = []
        self.device_facts: dict[str, str] = {}
        """a stacked device's entries of the fingerprint, as the workers run it (:meth:`_check_device`)"""

    @classmethod
    def open(cls, target: Target, timeout: float = CONNECT_TIMEOUT, device: str = "cpu") -> "Session":
        """Connect (or start a LocalCluster of single-threaded worker processes); ClusterError on failure.
        With a stacked ``device`` (cpu-stacked, cuda) each task is a cell's stack, and the workers must run
        that device (:meth:`_check_device`)."""
        distributed = _import_distributed()
        target = target.for_device(device)
        local = None
        try:
            if target.local_workers is not None:
                with _workers_ignore_sigint():
                    local = distributed.LocalCluster(
                        n_workers=target.local_workers, threads_per_worker=1, processes=True, host=LOOPBACK,
                        dashboard_address=f"{LOOPBACK}:{DASHBOARD_PORT}", silence_logs=logging.ERROR)
                client = distributed.Client(local, timeout=timeout, set_as_default=False)
                if device != "cpu":
                    from lysep_cli.execution.local_share import LocalShare

                    gpus = backend.gpu_count() if device == "cuda" else 0
                    client.register_plugin(LocalShare(target.local_workers, gpus, default_workers()))
            else:
                security = None if target.tls is None else target.tls.security()
                client = distributed.Client(target.address, timeout=timeout, set_as_default=False,
                                            **({} if security is None else {"security": security}))
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            if local is not None:
                local.close()
            detail = " ".join(str(exc).split()) or type(exc).__name__
            if isinstance(exc, TypeError) and "ssl" in detail.lower():  # tls:// with no certificate at all
                detail = ("a tls:// scheduler needs this client's certificates: --tls-ca-file, --tls-cert "
                          "(--tls-key), or dask's distributed.comm.tls configuration (docs/cluster.md)")
            elif isinstance(exc, TypeError):
                raise
            raise ClusterError(f"cannot reach the dask scheduler at {target.describe()}: {detail}") from None
        session = cls(client, target, local, device)
        try:
            if local is None:
                session.warnings = session._check_workers()
            if device != "cpu":
                session.device_facts = session._check_device(timeout)
        except BaseException:
            session.close()
            raise
        return session

    def _check_device(self, timeout: float) -> dict[str, str]:
        """The entries a record of the stacked device adds to the fingerprint (:func:`worker_device`), the
        same on every worker connected now (the first to join is waited for, up to ``timeout`` s) and
        computed by this machine's stacked engine (its numerics id): ClusterError otherwise, e.g. a
        ``cuda`` sweep whose workers lack CuPy or a GPU.  A worker joining later with other device facts
        has its records refused (lysep_cli/execution/runner.py), as one on another platform."""
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"--device {self.device}: no dask worker joined within {timeout:g} s to check "
                               f"that it runs the device ({_error_text(exc)}); start the workers first "
                               "(docs/gpu.md, \"A cluster of GPU workers\")") from None
        theirs = self.client.run(worker_device, self.device, on_error="return")
        unable = {w: f for w, f in theirs.items() if not isinstance(f, dict)}
        if unable:
            worker, why = sorted(unable.items())[0]
            why = why if isinstance(why, str) else _error_text(why)
            raise ClusterError(f"{len(unable)} of {len(theirs)} dask worker(s) cannot run --device {self.device} "
                               f"({worker}: {why}); start them where it runs (docs/gpu.md, \"A cluster of GPU "
                               "workers\")")
        first = sorted(theirs)[0]
        keys = ("numerics",) + DEVICE_KEYS
        facts = {**theirs[first], "numerics": stacked_numerics_id()}  # this machine's stacked engine
        other = {w: differing(facts, f, keys) for w, f in theirs.items() if differing(facts, f, keys)}
        if other:
            worker, diff = sorted(other.items())[0]
            raise ClusterError(f"{len(other)} of {len(theirs)} dask worker(s) run --device {self.device} unlike "
                               f"{first} (device) or this machine (stacked numerics) ({worker}: {'; '.join(diff)}); "
                               "one results directory holds one device's bits: give every worker the same GPU "
                               "model, CuPy, CUDA and lysep")
        return facts

    def _check_workers(self) -> list[str]:
        """Every worker connected now must import lysep (a worker that cannot unpickle a task dies,
        and the sweep would wait for ever), run with the platform pins (:func:`pins_not_in_force`) and on
        this machine's platform (every key of :data:`EXACT_KEYS`: its records are this machine's bits):
        ClusterError otherwise.  Another lysep version (not a key of the bits) is a warning."""
        # Builtins only: a function of lysep's own would fail to unpickle on exactly those workers.
        probe = self.client.run(exec, "import lysep_cli.execution.cluster", on_error="return")
        bad = {w: e for w, e in probe.items() if isinstance(e, BaseException)}
        if bad:
            worker, exc = sorted(bad.items())[0]
            raise ClusterError(f"{len(bad)} of {len(probe)} dask worker(s) cannot import lysep ({worker}: "
                               f"{_error_text(exc)}); install 'lysep[dask]' where the workers run")
        mine = fingerprint()
        theirs = self.client.run(worker_platform, on_error="return")
        unpinned = {w: p[1] for w, p in theirs.items() if isinstance(p, tuple) and p[1]}
        if unpinned:
            worker, problems = sorted(unpinned.items())[0]
            raise ClusterError(f"{len(unpinned)} of {len(theirs)} dask worker(s) run without lysep's platform "
                               f"pins ({worker}: {'; '.join(problems)}); {PIN_HINT}")
        other = {w: differing(mine, p[0], EXACT_KEYS) for w, p in theirs.items()
                 if isinstance(p, tuple) and not same_platform(mine, p[0])}
        if other:
            worker, keys = sorted(other.items())[0]
            raise ClusterError(f"{len(other)} of {len(theirs)} dask worker(s) run another platform than this "
                               f"machine ({worker}: {'; '.join(keys)}); their records would not be this "
                               "machine's bits: give the workers this machine's environment (NumPy, SciPy, "
                               "Python, lysep), or run lysep on a machine with theirs")
        versions = sorted({p[0].get("lysep", "?") for p in theirs.values() if isinstance(p, tuple)}
                          - {mine.get("lysep", "?")})
        return [f"workers run lysep {', '.join(versions)}, this machine {mine.get('lysep', '?')}"] if versions else []

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def describe(self) -> str:
        """``ADDRESS (N worker(s), dashboard URL)`` for the header line."""
        try:
            info = self.client.scheduler_info()
        except Exception:  # only cosmetic
            return self.target.describe()
        n = len(info.get("workers", {}))
        text = f"{self.target.describe()} ({n} worker(s)"
        if "dashboard" in info.get("services", {}):
            text += f", dashboard {self.client.dashboard_link}"
        text += ") - runs wait until workers join" if n == 0 else ")"
        return "; ".join([text] + [f"warning: {w}" for w in self.warnings])

    def cancel(self) -> None:
        """Cancel every task of this client still outstanding."""
        futures, self._outstanding = self._outstanding, {}
        pending = [f for f, _ in futures.values() if not f.done()]
        if pending:
            try:
                self.client.cancel(pending, force=True)
            except Exception:  # the scheduler may be gone already
                pass

    def close(self) -> None:
        """Cancel what is left, disconnect, stop the LocalCluster if this session started one."""
        self.cancel()
        try:
            self.client.close(timeout=5)
        except Exception:
            pass
        if self.local is not None:
            try:
                self.local.close(timeout=10)
            except Exception:
                pass
            self.local = None

    def tasks(self, keys: list[RunKey]) -> list[list[RunKey]]:
        """The runs of each task: one run each on ``cpu``; on a stacked device the seeds of each (solver, L,
        M) the stacked engine trains in one stack, and one run each for the solvers it leaves to the host
        (rfls, rfm: the CPU engine, as ``lysep run --device`` does locally)."""
        if self.device == "cpu":
            return [[key] for key in keys]
        out: list[list[RunKey]] = []
        for cell in runner.cells(keys):
            out += [cell] if stacks(cell[0].solver) else [[key] for key in cell]
        return out

    def _submit(self, spec: ExperimentSpec, runs: list[RunKey], iterations: int, topic: str, token: str) -> Any:
        """One task for ``runs`` (a run, or a stack); larger networks first (longest runs first: a shorter
        tail; the plan is unchanged)."""
        key = runs[0]
        seeds = "_".join(str(k.seed) for k in runs)
        name = f"lysep-{spec.name}-{key.solver}-L{key.L}-M{key.M}-seed{seeds}-{token}"
        priority = (key.L - 1) * key.M * key.M
        if self.device == "cpu" or not stacks(key.solver):
            return self.client.submit(run_task, spec, key, iterations, topic, key=name, pure=False,
                                      priority=priority)
        return self.client.submit(run_stack_task, spec, runs, iterations, self.device, topic, key=name, pure=False,
                                  priority=priority)

    def results(self, spec: ExperimentSpec, keys: list[RunKey], iterations: int,
                reporter: Reporter | None = None) -> Iterator[Outcome]:
        """Submit the tasks of ``keys`` (:meth:`tasks`: one per run, or one per stack) and yield each run's
        :class:`Outcome` as its task finishes (a stack's runs together, in seed order).

        Progress events become ``reporter.begin`` / ``reporter.loss`` calls (in this thread).  An
        exception raised by the consumer, Ctrl-C or SIGTERM (:class:`Terminated`) cancels the tasks
        still outstanding.
        """
        reporter = reporter or Reporter()
        events: queue_mod.Queue = queue_mod.Queue()
        token = uuid.uuid4().hex[:10]
        topic = f"lysep-progress-{token}"
        by_key = {(k.solver, k.L, k.M, k.seed): k for k in keys}
        started: set[RunKey] = set()
        with _sigterm_raises():
            self.client.subscribe_topic(topic, lambda event: events.put(("event", event)))
            try:
                futures = self._outstanding = {}
                for runs in self.tasks(keys):
                    fut = self._submit(spec, runs, iterations, topic, token)
                    futures[fut.key] = (fut, runs)
                    fut.add_done_callback(lambda f: events.put(("done", f.key)))
                remaining = len(futures)
                while remaining:
                    try:
                        kind, item = events.get(timeout=0.5)
                    except queue_mod.Empty:
                        continue
                    if kind == "event":
                        msg = item[1] if isinstance(item, tuple) and len(item) == 2 else item
                        key = by_key.get(tuple(msg.get("key", ()))) if isinstance(msg, dict) else None
                        if key is not None and key not in started:
                            started.add(key)
                            reporter.begin(key)
                        if key is not None:
                            reporter.loss(key, msg["k"], msg["J"])
                        continue
                    fut, runs = futures.pop(item, (None, None))
                    if fut is None:
                        continue
                    remaining -= 1
                    started.difference_update(runs)
                    outcomes = self._outcomes(fut, runs)
                    fut.release()
                    yield from outcomes
            finally:
                self.cancel()
                try:
                    self.client.unsubscribe_topic(topic)
                except Exception:
                    pass

    def _outcomes(self, fut: Any, runs: list[RunKey]) -> list[Outcome]:
        """Each run's :class:`Outcome` of a finished task (a run's (record, params), or a stack's list)."""
        error = None
        if fut.status == "finished":
            try:
                result = fut.result()
                pairs = result if isinstance(result, list) else [result]
                return [Outcome(key, record, params) for key, (record, params) in zip(runs, pairs)]
            except Exception as exc:  # the result was lost and could not be recomputed
                error = _error_text(exc)
        elif fut.status == "error":
            try:
                error = _error_text(fut.exception())
            except Exception as exc:
                error = _error_text(exc)
        else:
            error = f"task {fut.status} by the scheduler (lost connection?)"
        return [Outcome(key, error=error) for key in runs]
