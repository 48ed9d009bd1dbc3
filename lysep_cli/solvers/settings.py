"""Typed solver settings: one frozen dataclass per solver, validated from a mapping (a YAML block).

A solver declares its settings like this::

    @dataclass(frozen=True)
    class Settings(SolverSettings):
        lr: float = setting(low=0.0, low_open=True, doc="first step")          # required
        weights: Literal["frozen", "through"] = setting("frozen", doc="...")    # a choice
        rcond: float | None = setting(None, low=0.0, doc="...")                 # optional number

A field added after run records were archived is declared with ``omit_default=True``: :meth:`to_dict`
(the ``settings`` of a run record, and so what a spec asks of a record) leaves it out while it holds its
default, so the records made before the field existed still match a spec that keeps the default, and a run
with any other value is a different run (e.g. ``lstsq: basic`` of rfls and LySep).

Supported field types: ``float``, ``int``, ``str``, ``bool``, ``Literal[...]`` of strings, and unions of
these with ``None``.  :meth:`SolverSettings.from_mapping` rejects an unknown key (with a "did you mean"
hint), a missing required key, a wrong type (a bool is not a number, 2.5 is not an integer), a non-finite
number, a value out of ``[low, high]`` (or the open interval), and a string outside a ``Literal``.  A
number written as a string (PyYAML reads ``1e-3`` without a dot as the string "1e-3") is accepted for a
float field when ``float()`` parses it.  Every error is a :class:`SettingsError` naming the field.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal, Mapping, TypeVar, Union

S = TypeVar("S", bound="SolverSettings")


class SettingsError(ValueError):
    """A bad solver setting; ``field`` names it (None: the block as a whole), ``reason`` says why."""

    def __init__(self, field_name: str | None, reason: str):
        self.field = field_name
        self.reason = reason
        super().__init__(f"setting {field_name!r}: {reason}" if field_name else reason)


def setting(default: Any = MISSING, *, low: float | None = None, high: float | None = None,
            low_open: bool = False, high_open: bool = False, doc: str = "", omit_default: bool = False) -> Any:
    """A settings field: ``default`` (none: required), the allowed range and a one-line description;
    ``omit_default``: left out of :meth:`SolverSettings.to_dict` while it holds ``default`` (module docstring)."""
    meta = {"low": low, "high": high, "low_open": low_open, "high_open": high_open, "doc": doc,
            "omit_default": omit_default}
    return field(default=default, metadata=meta)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _arms(tp: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(tp)
    if origin is Union or isinstance(tp, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def _convert(value: Any, tp: Any) -> Any:
    """``value`` checked against the type ``tp`` (and converted: int -> float, "1e-3" -> 0.001)."""
    arms = _arms(tp)
    wanted: list[str] = []
    for arm in arms:
        if arm is type(None):
            if value is None:
                return None
            wanted.append("null")
        elif typing.get_origin(arm) is Literal:
            choices = typing.get_args(arm)
            if isinstance(value, str) and value in choices:
                return value
            wanted.append(" | ".join(repr(c) for c in choices))
        elif arm is bool:
            if isinstance(value, bool):
                return value
            wanted.append("true | false")
        elif arm is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            wanted.append("an integer")
        elif arm is float:
            number = None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                number = float(value)
            elif isinstance(value, str):
                try:
                    number = float(value)
                except ValueError:
                    number = None
            if number is not None:
                if not math.isfinite(number):
                    raise ValueError(f"expected a finite number, got {value!r}")
                return number
            wanted.append("a number")
        elif arm is str:
            if isinstance(value, str):
                return value
            wanted.append("a string")
        else:  # pragma: no cover - a settings class with an unsupported type is a programming error
            raise TypeError(f"unsupported settings type {arm!r}")
    raise ValueError(f"expected {' or '.join(wanted)}, got {_describe(value)}")


def _check_range(value: Any, meta: Mapping[str, Any]) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    low, high = meta.get("low"), meta.get("high")
    if low is not None and (value <= low if meta.get("low_open") else value < low):
        raise ValueError(f"must be {'>' if meta.get('low_open') else '>='} {low:g}, got {value!r}")
    if high is not None and (value >= high if meta.get("high_open") else value > high):
        raise ValueError(f"must be {'<' if meta.get('high_open') else '<='} {high:g}, got {value!r}")


@dataclass(frozen=True)
class SolverSettings:
    """Base class of the solvers' settings dataclasses (frozen: a solve cannot change them)."""

    @classmethod
    def from_mapping(cls: type[S], mapping: Mapping[str, Any] | None) -> S:
        """Validated settings from a mapping (None: all defaults); SettingsError on bad input."""
        if mapping is None:
            mapping = {}
        if not isinstance(mapping, Mapping):
            raise SettingsError(None, f"settings must be a mapping, got {_describe(mapping)}")
        hints = typing.get_type_hints(cls)
        known = [f.name for f in fields(cls)]
        for key in mapping:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise SettingsError(str(key), f"unknown setting ({hint}known: {', '.join(known) or 'none'})")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in mapping:
                if f.default is MISSING and f.default_factory is MISSING:
                    raise SettingsError(f.name, "missing required setting")
                continue
            try:
                value = _convert(mapping[f.name], hints[f.name])
                _check_range(value, f.metadata)
            except ValueError as exc:
                raise SettingsError(f.name, str(exc)) from None
            values[f.name] = value
        obj = cls(**values)
        obj.check()
        return obj

    @classmethod
    def coerce(cls: type[S], value: "S | Mapping[str, Any] | None") -> S:
        """``value`` if it is already an instance, else :meth:`from_mapping` of it."""
        return value if isinstance(value, cls) else cls.from_mapping(value)  # type: ignore[arg-type]

    def check(self) -> None:
        """Checks across fields (override; raise SettingsError)."""

    def to_dict(self) -> dict[str, Any]:
        """Every field, defaults included (the ``settings`` of a run record), except an ``omit_default``
        field that holds its default (module docstring)."""
        out = dataclasses.asdict(self)
        for f in fields(self):
            if f.metadata.get("omit_default") and out[f.name] == f.default:
                del out[f.name]
        return out

    def replace(self: S, **changes: Any) -> S:
        """A validated copy with ``changes``."""
        return type(self).from_mapping({**self.to_dict(), **changes})

    # What the solver promises, given these settings (used by the runner and the contract test).

    def size_error(self, L: int, M: int) -> str | None:
        """Why this solver cannot train an (L, M) network (None: it can)."""
        return None

    def fit_error(self, n_in: int, n_train: int, L: int, M: int) -> str | None:
        """Why this solver cannot fit an (L, M) model on ``n_train`` points of ``n_in`` inputs (None: it can;
        checked where the experiments file and ``--sizes`` are read)."""
        return None

    def history_length(self, iterations: int) -> int:
        """Entries of history["J"] of a run that did not diverge: the initial value, then one per iteration."""
        return iterations + 1


@dataclass(frozen=True)
class NoSettings(SolverSettings):
    """Settings of a solver that has none (an empty block)."""
