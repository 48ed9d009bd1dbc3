"""Formulas written in the experiments file, parsed (never evaluated as Python) into sympy expressions.

The grammar (docs/your-pde.md): numbers; the variables x1..xd and t; + - * / ** and parentheses; calls
of the functions in :data:`FUNCTIONS`; the constants pi and e.  The text is parsed with Python's ``ast``
module and every node is checked against this whitelist before a sympy expression is built from it by
hand: attribute access, subscripts, other names, keyword arguments, lambdas, comprehensions and so on are
refused, and so is an exponent above :data:`MAX_EXPONENT` in absolute value.  sympy then differentiates
the expression and :func:`compile_expression` turns it into a NumPy function of the points.
"""

from __future__ import annotations

import ast
from typing import Callable

import numpy as np
import sympy

#: the functions a formula may call (name -> sympy function)
FUNCTIONS: dict[str, Callable[..., sympy.Expr]] = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "exp": sympy.exp, "log": sympy.log,
    "sqrt": sympy.sqrt, "tanh": sympy.tanh, "sinh": sympy.sinh, "cosh": sympy.cosh, "abs": sympy.Abs,
    "atan": sympy.atan, "asin": sympy.asin, "acos": sympy.acos,
}
CONSTANTS = {"pi": sympy.pi, "e": sympy.E}
MAX_EXPONENT = 64
MAX_LENGTH = 2000


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
    text = str(text)
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"formula longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {text.strip()!r}: {exc.msg}") from None
    return _build(tree.body, allowed)


_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b}


def _build(node: ast.AST, allowed: dict[str, sympy.Symbol]) -> sympy.Expr:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"only numbers are allowed as constants, got {node.value!r}")
        return sympy.Integer(node.value) if isinstance(node.value, int) else sympy.Float(node.value)
    if isinstance(node, ast.Name):
        if node.id in allowed:
            return allowed[node.id]
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        names = ", ".join(sorted(allowed))
        raise ExpressionError(f"unknown name {node.id!r} (variables: {names}; constants: pi, e)")
    if isinstance(node, ast.BinOp):
        left, right = _build(node.left, allowed), _build(node.right, allowed)
        if isinstance(node.op, ast.Pow):
            if not right.is_number:
                raise ExpressionError("an exponent must be a number")
            if abs(float(right)) > MAX_EXPONENT:
                raise ExpressionError(f"exponent {float(right):g} beyond +-{MAX_EXPONENT}")
            return left**right
        op = _BINARY.get(type(node.op))
        if op is None:
            raise ExpressionError(f"operator {type(node.op).__name__} not allowed (+ - * / ** only)")
        return op(left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _build(node.operand, allowed)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise ExpressionError(f"call of {what!r} not allowed (functions: {', '.join(FUNCTIONS)})")
        if node.keywords or len(node.args) != 1:
            raise ExpressionError(f"{node.func.id}() takes one argument, no keywords")
        return FUNCTIONS[node.func.id](_build(node.args[0], allowed))
    raise ExpressionError(f"{type(node).__name__} not allowed in a formula")


def compile_expression(expr: sympy.Expr, symbols: list[sympy.Symbol]) -> Callable[[np.ndarray], np.ndarray]:
    """A NumPy function of the points Z (n_in, N) (rows in the order of ``symbols``) giving (N,)."""
    f = sympy.lambdify(symbols, expr, modules="numpy")

    def evaluate(Z: np.ndarray) -> np.ndarray:
        out = np.asarray(f(*Z), dtype=np.float64)
        return np.broadcast_to(out, Z.shape[1:]).copy() if out.shape != Z.shape[1:] else out

    return evaluate
