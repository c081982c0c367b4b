"""`$name` and `${expression}` in block bodies: arithmetic, comparisons and `a if c else b` over
block arguments and the repeat index `i`. Parsed with `ast` and evaluated over a whitelist of
node types; nothing else in Python is reachable."""

from __future__ import annotations

import ast
import operator
import re

from ait_build.errors import Location, SpecError, did_you_mean

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Mod: operator.mod}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}
_FUNCS = {"min": min, "max": max, "str": str, "int": int}
_WHOLE = re.compile(r"^\$(\w+)$|^\$\{(.*)\}$", re.S)
_PART = re.compile(r"\$\{([^}]*)\}|\$(\w+)")
MAX_EXPR_CHARS = 200
MAX_VALUE_CHARS = 1000  # a computed string (a tensor name, an op name) is never longer
MAX_INT = 2**63


def evaluate(text: str, env: dict, loc: Location):
    if len(text) > MAX_EXPR_CHARS:
        raise SpecError(f"expression longer than {MAX_EXPR_CHARS} characters", loc)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"bad expression '{text}': {exc.msg}", loc) from None
    try:
        return _eval(tree.body, env, loc, text)
    except (TypeError, ValueError, ArithmeticError) as exc:  # '1 < "a"', int("x"), min()
        raise SpecError(f"cannot evaluate '{text}': {exc}", loc) from None


def _eval(node, env, loc, text):
    value = _eval_node(node, env, loc, text)
    if isinstance(value, (str, list)) and len(value) > MAX_VALUE_CHARS or \
            isinstance(value, int) and abs(value) > MAX_INT:
        raise SpecError(f"expression '{text}' makes a value too large to be a spec value", loc)
    return value


def _eval_node(node, env, loc, text):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("true", "false"):
            return node.id == "true"
        if node.id not in env:
            raise SpecError(f"unknown name '{node.id}' in expression '{text}'"
                            + did_you_mean(node.id, env), loc)
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left, env, loc, text), _eval(node.right, env, loc, text)
        if isinstance(node.op, ast.Mod) and isinstance(left, str):  # '%0999999999d' % 1
            raise SpecError(f"string formatting with % is not supported in expression '{text}'", loc)
        if isinstance(node.op, ast.Mult):  # check 'x' * 10**9 before building it
            seq, count = (left, right) if isinstance(left, (str, list)) else (right, left)
            if isinstance(seq, (str, list)) and isinstance(count, int) \
                    and count * len(seq) > MAX_VALUE_CHARS:
                raise SpecError(f"expression '{text}' makes a value too large to be a spec value", loc)
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        value = _eval(node.operand, env, loc, text)
        return (not value) if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, env, loc, text) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and all(type(op) in _CMPOPS for op in node.ops):
        left = _eval(node.left, env, loc, text)
        for op, comp in zip(node.ops, node.comparators):
            right = _eval(comp, env, loc, text)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        cond = _eval(node.test, env, loc, text)
        return _eval(node.body if cond else node.orelse, env, loc, text)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS
            and not node.keywords and all(not isinstance(a, ast.Starred) for a in node.args)):
        return _FUNCS[node.func.id](*[_eval(a, env, loc, text) for a in node.args])
    raise SpecError(f"unsupported syntax in expression '{text}' (use + - * / // %, comparisons, "
                    "and/or/not, 'a if c else b', min, max, int, str)", loc)


def substitute(value, env: dict, loc: Location):
    """Replace `$name` / `${expr}` in a string: a whole-string reference keeps the value's type,
    references inside a longer string are formatted into it."""
    if not isinstance(value, str) or "$" not in value:
        return value
    whole = _WHOLE.match(value)
    if whole:
        name, expr = whole.groups()
        return evaluate(expr if expr is not None else name, env, loc)
    # `${}` is an empty expression (group 1 is ""), not a `$name`
    return _PART.sub(lambda m: str(evaluate(m.group(1) if m.group(1) is not None else m.group(2),
                                            env, loc)), value)
