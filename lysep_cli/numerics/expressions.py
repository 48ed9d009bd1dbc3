"""Formulas written in the experiments file, parsed (never evaluated as Python) into sympy expressions.

The grammar (docs/your-pde.md): numbers; the variables x1..xd and t; + - * / ** and parentheses; calls
of the functions in :data:`FUNCTIONS`; the constants pi and e.  Everything is checked before sympy sees
a number or builds a node, so that no formula can make sympy (or Python) work long or fail inside:

- the text: at most :data:`MAX_LENGTH` characters, ASCII only (Python's parser folds look-alikes such as
  a fullwidth or bold x1 into ``x1``, and cannot encode a lone surrogate);
- the tree (Python's ``ast``, every node against a whitelist): nested at most :data:`MAX_DEPTH` levels,
  where a call, a sign, a power and a run of ``+ -`` (or of ``* /``) each count one level;
- the numbers: integer literals of at most :data:`MAX_LITERAL_DIGITS` digits, finite float literals,
  exponents that are numbers within +-:data:`MAX_EXPONENT`, and no exact power of a number beyond
  :data:`MAX_DIGITS` digits (estimated from the base and exponent before sympy computes it: a tower
  ``((9**64)**64)**64`` is refused at its second level);
- the derivatives: :func:`derivative_size` bounds the size of a formula's second derivatives before sympy
  computes them (lysep_cli/numerics/user_problems.py refuses a u beyond :data:`MAX_DERIVATIVE_NODES`).

:func:`refusal` then checks each expression derived from a formula (sympy's derivatives included) for
what NumPy cannot evaluate as a real number: a ComplexInfinity (``1/0``, ``log(0)``), the imaginary unit
(``log(-2)``, ``sqrt(-1)``), a function without a NumPy counterpart (DiracDelta: the second derivative
of ``abs``), an exact number beyond the float range.  :func:`compile_expression` turns an expression into
a NumPy function of the points.
"""

from __future__ import annotations

import ast
import math
from typing import Callable

import numpy as np
import sympy

#: the functions a formula may call (name -> sympy function)
FUNCTIONS: dict[str, Callable[..., sympy.Expr]] = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "exp": sympy.exp, "log": sympy.log,
    "sqrt": sympy.sqrt, "tanh": sympy.tanh, "sinh": sympy.sinh, "cosh": sympy.cosh, "abs": sympy.Abs,
    "atan": sympy.atan, "asin": sympy.asin, "acos": sympy.acos,
}
#: the sympy functions a derived expression may hold: those of :data:`FUNCTIONS` and sign (the
#: derivative of abs); each has a NumPy counterpart in ``lambdify``
NUMPY_FUNCTIONS = frozenset({sympy.sin, sympy.cos, sympy.tan, sympy.exp, sympy.log, sympy.tanh, sympy.sinh,
                             sympy.cosh, sympy.Abs, sympy.atan, sympy.asin, sympy.acos, sympy.sign})
CONSTANTS = {"pi": sympy.pi, "e": sympy.E}
MAX_LENGTH = 2000
#: deepest nesting of calls, signs, powers and runs of + - (or * /) in one formula
MAX_DEPTH = 24
#: most digits of an integer literal (write larger numbers as floats, 1.5e20)
MAX_LITERAL_DIGITS = 15
MAX_EXPONENT = 64
#: most decimal digits of an exact number in a formula or its derivatives (floats end near 1e308)
MAX_DIGITS = 300
#: the most nodes of u's second derivatives (and of c's first ones), summed over the variables, as
#: :func:`derivative_size` bounds them before sympy computes any.  The paper's four problems written as
#: formulas need <= 3,250; 24 nested sin 11,227 (a 4 s build), a product of 12 factors in x1 x2 22,154
#: (4 s), of 25 in x1 47,913 (12 s), of 150 in x1 7.3 million (minutes, never finished)
MAX_DERIVATIVE_NODES = 25_000


class ExpressionError(ValueError):
    """A formula outside the grammar; the message says what, in one line."""


def variables(d: int, time: bool) -> dict[str, sympy.Symbol]:
    """The symbols a formula of a d-dimensional problem may use: x1..xd, and t when ``time``."""
    out = {f"x{i}": sympy.Symbol(f"x{i}", real=True) for i in range(1, d + 1)}
    if time:
        out["t"] = sympy.Symbol("t", real=True)
    return out


def parse(text: object, allowed: dict[str, sympy.Symbol]) -> sympy.Expr:
    """The sympy expression of ``text``; ExpressionError for anything outside the grammar."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ExpressionError(f"expected a formula (a string), got {type(text).__name__}")
    text = str(text).strip()
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"formula longer than {MAX_LENGTH} characters")
    if not text.isascii():
        i, ch = next((i, ch) for i, ch in enumerate(text) if not ch.isascii())
        raise ExpressionError(f"non-ASCII character {ascii(ch)[1:-1]} (U+{ord(ch):04X}) at position {i}: formulas "
                              "are ASCII (look-alikes of x1 such as a fullwidth or bold x are not x1)")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        shown = repr(text) if len(text) <= 80 else f"{text[:60]!r}... ({len(text)} characters)"
        raise ExpressionError(f"cannot parse {shown}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL byte; nesting beyond the parser's stack
        reason = "nested too deeply" if isinstance(exc, (RecursionError, MemoryError)) else str(exc)
        raise ExpressionError(f"cannot parse the formula: {' '.join(reason.split())}") from None
    depth = nesting(tree.body)
    if depth > MAX_DEPTH:
        raise ExpressionError(f"nested {depth} levels deep, beyond {MAX_DEPTH} (calls, signs, powers and "
                              "runs of + - or * / each count one level)")
    return _build(tree.body, allowed)


#: operators that sympy flattens into one node: a run of them is one level of nesting
_GROUPS = {ast.Add: "+", ast.Sub: "+", ast.Mult: "*", ast.Div: "*"}


def _group(node: ast.AST) -> str | None:
    return _GROUPS.get(type(node.op)) if isinstance(node, ast.BinOp) else None


def nesting(root: ast.AST) -> int:
    """The nesting depth of a formula's tree, counted without recursion (any tree Python's parser makes):
    a node adds a level unless it continues its parent's run of + - (or * /)."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        group = _group(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.expr_context, ast.operator, ast.unaryop)):
                continue
            same_run = group is not None and _group(child) == group
            stack.append((child, depth if same_run else depth + 1))
    return deepest


def _digits(x: sympy.Expr) -> float:
    """Decimal digits of the longest numerator or denominator of the exact numbers in ``x`` (0: none)."""
    rationals = [x] if isinstance(x, sympy.Rational) else x.atoms(sympy.Rational)
    bits = max((max(int(abs(r.p)).bit_length(), int(r.q).bit_length()) for r in rationals), default=0)
    return bits * math.log10(2)


_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: _power(a, b)}


def _build(root: ast.AST, allowed: dict[str, sympy.Symbol]) -> sympy.Expr:
    """The sympy expression of a checked tree, built bottom-up without recursion (a run of 1,000 ``+``
    is a tree 1,000 deep), one operation at a time in the order the text writes them."""
    values: list[sympy.Expr] = []
    stack: list[tuple[ast.AST, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        operands = _operands(node)
        if not ready and operands:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(operands))
            continue
        args = values[len(values) - len(operands):]
        del values[len(values) - len(operands):]
        values.append(_apply(node, args, allowed))
    return values[0]


def _operands(node: ast.AST) -> list[ast.AST]:
    """The sub-trees ``node`` is computed from; ExpressionError for a node outside the grammar."""
    if isinstance(node, (ast.Constant, ast.Name)):
        return []
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise ExpressionError(f"operator {type(node.op).__name__} not allowed (+ - * / ** only)")
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return [node.operand]
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise ExpressionError(f"call of {what!r} not allowed (functions: {', '.join(FUNCTIONS)})")
        if node.keywords or len(node.args) != 1:
            raise ExpressionError(f"{node.func.id}() takes one argument, no keywords")
        return [node.args[0]]
    raise ExpressionError(f"{type(node).__name__} not allowed in a formula")


def _apply(node: ast.AST, args: list[sympy.Expr], allowed: dict[str, sympy.Symbol]) -> sympy.Expr:
    """The value of ``node`` from the values of its :func:`_operands`."""
    if isinstance(node, ast.Constant):
        return _number(node.value)
    if isinstance(node, ast.Name):
        if node.id in allowed:
            return allowed[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        names = ", ".join(sorted(allowed))
        raise ExpressionError(f"unknown name {node.id!r} (variables: {names}; constants: pi, e)")
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](*args)
    if isinstance(node, ast.UnaryOp):
        return -args[0] if isinstance(node.op, ast.USub) else args[0]
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return FUNCTIONS[node.func.id](args[0])


def _number(value: object) -> sympy.Expr:
    """A literal: an integer of at most MAX_LITERAL_DIGITS digits, or a finite float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ExpressionError(f"only real numbers are allowed as constants, got {value!r}")
    if isinstance(value, int):
        if value >= 10**MAX_LITERAL_DIGITS:
            raise ExpressionError(f"an integer literal of {len(str(value))} digits, beyond {MAX_LITERAL_DIGITS} "
                                  "(write it as a float, e.g. 1.5e20)")
        return sympy.Integer(value)
    if not math.isfinite(value):
        raise ExpressionError("a number literal beyond the float range (it reads as inf)")
    return sympy.Float(value)


def _power(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    """base**exponent: the exponent a real number within +-MAX_EXPONENT, an exact result within
    MAX_DIGITS digits (judged before sympy computes it)."""
    if not exponent.is_number:
        raise ExpressionError("an exponent must be a number")
    try:
        value = complex(exponent.evalf(30))
    except (TypeError, ValueError, OverflowError):
        value = complex("nan")
    if value.imag != 0 or not math.isfinite(value.real):
        raise ExpressionError(f"exponent {exponent} is not a finite real number")
    if abs(value.real) > MAX_EXPONENT:
        raise ExpressionError(f"exponent {value.real:g} beyond +-{MAX_EXPONENT}")
    if abs(value.real) * _digits(base) > MAX_DIGITS:
        raise ExpressionError(f"a power of about {abs(value.real) * _digits(base):.3g} digits, beyond "
                              f"{MAX_DIGITS} (floats end near 1e308)")
    return base**exponent


def derivative_size(expr: sympy.Expr, x: sympy.Symbol, order: int = 2) -> int:
    """A bound on the node count of the ``order``-th (1 or 2) derivative of ``expr`` in x, from the product
    and chain rules, before sympy computes it: a product of n factors in x has n terms of n factors in
    its first derivative, n^2 / 2 in its second."""
    memo: dict[sympy.Basic, tuple[int, int, int]] = {}

    def sizes(e: sympy.Basic) -> tuple[int, int, int]:  # nodes of e, of de/dx, of d2e/dx2
        if e in memo:
            return memo[e]
        parts = [sizes(a) for a in e.args]
        s, d, d2 = (sum(p[k] for p in parts) for k in range(3))
        if x not in e.free_symbols:
            out = (1 + s, 0, 0)
        elif not parts:
            out = (1, 1, 1)
        elif isinstance(e, sympy.Add):
            out = (1 + s, 1 + d, 1 + d2)
        elif isinstance(e, sympy.Mul):  # m of the factors depend on x
            m = sum(1 for p in parts if p[1])
            out = (1 + s, d + m * (s + 1), d2 + m * s + (m - 1) * d + s * m * (m - 1) // 2 + m * m)
        else:  # a power or a function of its argument: f(a)' = f'(a) a', f(a)'' = f''(a) a'^2 + f'(a) a''
            out = (1 + s, 2 * s + d + 4, 5 * s + 2 * d + d2 + 8)
        memo[e] = out
        return out

    return max(sizes(expr)[order], 1)  # (sympy writes a zero derivative as one node, 0)


def refusal(expr: sympy.Expr) -> str | None:
    """Why NumPy cannot evaluate ``expr`` as a real number at the points (None: it can)."""
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        return "is infinite or undefined (a division by zero, log(0), tan(pi/2): sympy's ComplexInfinity)"
    if expr.has(sympy.I):
        return "is complex-valued (e.g. log or sqrt of a negative number); formulas must be real"
    others = sorted({type(f).__name__ for f in expr.atoms(sympy.Function, sympy.Derivative, sympy.Subs)
                     if type(f) not in NUMPY_FUNCTIONS})
    if "DiracDelta" in others:
        return ("holds a Dirac delta: abs(...) (or sqrt(y**2), which is abs(y)) differentiated at its kink, "
                "which a pointwise residual cannot evaluate; write a formula twice differentiable there")
    if others:
        return f"holds {', '.join(others)}, which NumPy cannot evaluate"
    big = _digits(expr)
    if big > MAX_DIGITS:
        return f"holds an exact number of about {big:.0f} digits, beyond the float range"
    return None


def compile_expression(expr: sympy.Expr, symbols: list[sympy.Symbol]) -> Callable[[np.ndarray], np.ndarray]:
    """A NumPy function of the points Z (n_in, N) (rows in the order of ``symbols``) giving (N,).
    ValueError where the values are complex (e.g. a negative number to a fractional power)."""
    f = sympy.lambdify(symbols, expr, modules="numpy")

    def evaluate(Z: np.ndarray) -> np.ndarray:
        raw = f(*Z)
        if np.iscomplexobj(raw):
            raise ValueError("complex values (e.g. a negative number to a fractional power)")
        out = np.asarray(raw, dtype=np.float64)
        return np.broadcast_to(out, Z.shape[1:]).copy() if out.shape != Z.shape[1:] else out

    return evaluate
