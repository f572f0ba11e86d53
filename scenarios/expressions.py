"""A grounded call as the arithmetic a person would ask for ("What is 98 + 51?"): the call's one value where it is
an expression (`EXPRESSION`), or the expression its description states over its arguments (`formula`), a chain's
calls each over the previous result (`chain_expression`); kept only where the expression's value (`arithmetic`) is
the answer, so a tool that does something else with an expression is asked for by what it does."""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Any

from mcprl.checks import as_number
from mcprl.scenarios.explored import ExploredCall
from mcprl.scenarios.lexicon import OPERATOR_WORDS
from mcprl.scenarios.phrasing import first_sentence, quoted

EXPRESSION = re.compile(r"[-+*/%^().\d\s]*\d\s*[-+*/%^]+\s*[-(\d][-+*/%^().\d\s]*")  # arithmetic: "(7 - 2) / 5"
_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def arithmetic(expression: str) -> float | None:
    """The value of an `EXPRESSION` ("^" a power, as calculators read it); None where it has none (a
    division by zero, a power past 1000) or is not one."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 1000:
                raise OverflowError
            return _ARITHMETIC[type(node.op)](left, right)
        raise ValueError(node)

    try:
        number = value(ast.parse(expression.replace("^", "**"), mode="eval").body)
        return float(number) if isinstance(number, (int, float)) and math.isfinite(number) else None
    except (SyntaxError, ValueError, ArithmeticError, TypeError):
        return None


_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%", ast.Pow: "**"}
_BINDS = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.Mod: 2, ast.Pow: 3}  # (how tightly each binds)


def in_words(expression: str) -> str | None:
    """An `EXPRESSION` as people say it ("45 * 6": "45 times 6", "8 - 3 - 2": "8 minus 3 minus 2"), where said left
    to right it means what its brackets and precedence make it: each operator's right operand a number, its left a
    number or an operator that binds as tightly or more ("2 * 3 + 4"; not "2 + 3 * 4", "(7 - 2) / 5"). None
    otherwise."""
    source = expression.replace("^", "**")

    def said(node: ast.AST, binds: int) -> str | None:
        if isinstance(node, ast.Constant) or isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
            return ast.get_source_segment(source, node)
        if not isinstance(node, ast.BinOp) or type(node.op) not in _SYMBOLS or _BINDS[type(node.op)] < binds:
            return None
        left = said(node.left, _BINDS[type(node.op)] + isinstance(node.op, ast.Pow))  # (a power binds to its right)
        right = said(node.right, 4)  # (a number alone)
        return f"{left} {OPERATOR_WORDS[_SYMBOLS[type(node.op)]]} {right}" if left and right else None

    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    return said(tree, 0) if isinstance(tree, ast.BinOp) else None


def _fill(
    description: str, tool: str, args: dict[str, Any], linked: frozenset[str], previous: str
) -> tuple[str, dict[str, str]]:
    """The description's first sentence with the call's values in place of the argument names it
    mentions, and the arguments it does not mention."""
    text = first_sentence(description) or f"Use {tool}"
    rest: dict[str, str] = {}
    for name, value in args.items():
        shown = previous if name in linked else quoted(value)
        pattern = rf"(?<![\w-]){re.escape(name.replace('_', ' '))}(?![\w-])"
        if len(name) > 1:
            # a word, but never the first one: that is the verb ("Change an item's stock", argument `change`)
            text, hits = re.subn(rf"(?<=.){pattern}", lambda _: shown, text, flags=re.IGNORECASE)  # noqa: B023
        else:  # a letter: a variable everywhere when beside an operator ("a - b"), else only where no word
            # follows it, so that an article ("a number") stays
            operand = re.search(rf"(?<!\w){name}\s*[-+*/%^=<>]|[-+*/%^=<>]\s*{name}(?!\w)", text)
            text, hits = re.subn(pattern if operand else rf"{pattern}(?!\s+[A-Za-z]{{3}})", lambda _: shown, text)  # noqa: B023
        if not hits:
            rest[name.replace("_", " ")] = shown
    return text, rest


def formula(
    description: str, tool: str, args: dict[str, Any], linked: frozenset[str] = frozenset(), previous: str = ""
) -> str | None:
    """The call as an expression of its values, where its description states one over every
    argument ("Multiply two numbers and return a * b" -> "18.5 * 10"); a `linked` argument is the
    previous call's expression, `previous`, in brackets ("(18.5 * 10) - 3"); or the call's one value,
    where it is an expression itself ("98 + 51" of a calculator's `expression`). None otherwise."""
    if (
        not linked
        and len(args) == 1
        and isinstance(value := next(iter(args.values())), str)
        and EXPRESSION.fullmatch(value)
    ):
        return " ".join(value.split())
    text, rest = _fill(description, tool, args, linked, f"({previous})")
    if rest:
        return None
    for clause in re.split(r",\s*|;\s*|\s+and\s+", text):
        verb, _, body = clause.partition(" ")
        body = body if verb.isalpha() else clause  # "return 18.5 * 10": the expression after its verb
        if re.fullmatch(r"[-+*/%^().\d\s]+", body) and re.search(r"[\d)]\s*[-+*/%^]+\s*[-\d(]", body):
            return body.strip()
    return None


def chain_expression(
    chain: list[ExploredCall], linked: list[frozenset[str]], descriptions: dict[str, str], answer: Any
) -> str | None:
    """The chain as one expression, where each call's description states one and each call after
    the first takes the previous result ("(18.5 * 10) - 3"), and that expression's value is the
    answer (to the answer's decimals: a calculator's 3.33 of 10 / 3); else None. A tool that does
    something else with an expression (its degree, its logical negation) is asked for by what it does."""
    expression = ""
    for i, (c, ln) in enumerate(zip(chain, linked)):
        if bool(i) != bool(ln):
            return None
        expression = formula(descriptions.get(c.tool, ""), c.tool, c.arguments, ln, expression)
        if expression is None:
            return None
    value, number = arithmetic(expression), as_number(answer)
    if value is None or number is None:
        return None
    decimals = len(str(answer).strip().partition(".")[2]) if "e" not in str(answer).lower() else 15
    same = (
        math.isclose(value, number, rel_tol=1e-9, abs_tol=1e-9) or bool(decimals) and round(value, decimals) == number
    )
    return expression if same else None
