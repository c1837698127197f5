"""Rewrites of expression trees: :func:`rewrite_not` pushes ``Not`` down to the predicates,
:func:`balance` turns long ``and``/``or`` chains into balanced trees (and merges equalities of
one column into ``in``), and :data:`MAX_DEPTH` bounds how deep a tree may be evaluated."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.expressions.base import (
    BooleanExpression,
    BoundPredicate,
    BoundReference,
    Not,
    Op,
    _balanced,
    _Junction,
    _postorder,
)

__all__ = ["MAX_DEPTH", "balance", "rewrite_not"]


def rewrite_not(expr: BooleanExpression) -> BooleanExpression:
    """Removes every ``Not`` by negating what it wraps (De Morgan, then predicate negation).

    Bound, the result selects exactly what the original does (see
    :meth:`BoundPredicate.negate`); unbound, column types are not known, so an ordering
    comparison negates into its opposite alone, as in Iceberg's reference, which drops nulls
    and NaN the ``Not`` kept: bind first."""
    done: list[BooleanExpression] = []
    for node in _postorder(expr, _Junction):
        if isinstance(node, _Junction):
            right = done.pop()
            done.append(type(node)(done.pop(), right))
        elif isinstance(node, Not):
            done.append(rewrite_not(node.child.negate()))
        else:
            done.append(node)
    return done[0]


#: The deepest expression tree icefloe evaluates (after balancing associative chains): deeper
#: trees are refused with a clear error instead of exhausting a stack.
MAX_DEPTH = 100


def _operands(node: _Junction) -> list[BooleanExpression]:
    """The operands of the chain of ``type(node)`` rooted at ``node``, left to right."""
    out: list[BooleanExpression] = []
    todo: list[BooleanExpression] = [node]
    kind = type(node)
    while todo:
        x = todo.pop()
        if type(x) is kind:
            assert isinstance(x, _Junction)
            todo.append(x.right)
            todo.append(x.left)
        else:
            out.append(x)
    return out


def balance(expr: BooleanExpression) -> BooleanExpression:
    """``expr`` with every chain of ``and`` (or ``or``) rebuilt as a balanced tree, without
    recursion: a filter of 10,000 ``or`` terms, however it was built, then nests 14 levels deep.
    Raises :class:`~icefloe.exceptions.ValidationError` when the result still nests deeper than
    :data:`MAX_DEPTH` (deeply alternating ``and``/``or``/``not``)."""
    results: list[tuple[BooleanExpression, int]] = []  # (expression, depth)
    todo: list[tuple[BooleanExpression, int]] = [(expr, -1)]  # (node, -1 visit | n combine)
    while todo:
        node, n = todo.pop()
        if n < 0 and isinstance(node, _Junction):
            items = _operands(node)
            todo.append((node, len(items)))
            todo.extend((item, -1) for item in reversed(items))
        elif n < 0 and isinstance(node, Not):
            todo.append((node, 1))
            todo.append((node.child, -1))
        elif n < 0:
            results.append((node, 1))
        else:
            parts = results[len(results) - n :]
            del results[len(results) - n :]
            depth = max(d for _, d in parts) + (1 if n == 1 else (n - 1).bit_length())
            if depth > MAX_DEPTH:
                raise ValidationError(
                    f"filter expression nests {depth} levels deep (after balancing and/or "
                    f"chains); at most {MAX_DEPTH} are supported: simplify the alternation of "
                    "and, or and not"
                )
            if isinstance(node, Not):
                results.append((Not(parts[0][0]), depth))
            elif n <= _KEEP_SHAPE:
                # a short chain keeps its shape (the parentheses the user wrote)
                assert isinstance(node, _Junction)
                leaves = iter(e for e, _ in parts)
                shaped, height = _reshape(node, type(node), leaves)
                results.append((shaped, max(d for _, d in parts) + height))
            else:
                assert isinstance(node, _Junction)
                items = _merge_sets(type(node), [e for e, _ in parts])
                results.append((_balanced(type(node), items), depth))
    return results[0][0]


#: Chains of at most this many operands keep their shape when balanced.
_KEEP_SHAPE = 16


#: The predicates a wide chain of each kind merges, per column, into one set predicate:
#: ``a = 1 or a = 2 or a in (3, 4)`` is ``a in (1, 2, 3, 4)`` and ``a != 1 and a != 2`` is
#: ``a not in (1, 2)``, with the same answer for every row, nulls and NaN included.
_MERGED_OPS = {"Or": ("eq", "in", "in"), "And": ("not-eq", "not-in", "not-in")}


def _merge_sets(kind: type[_Junction], items: list[BooleanExpression]) -> list[BooleanExpression]:
    """``items`` (the operands of a wide ``kind`` chain) with the bound equality (or
    inequality) tests of each column merged into one set predicate, where the first of them
    stood: evaluated over data, a filter of 5,000 ``or``-ed equalities is one hash lookup per
    row instead of 5,000 comparisons and 5,000 ``or`` kernels."""
    single, multi, merged = (Op(o) for o in _MERGED_OPS[kind.__name__])
    groups: dict[BoundReference, list[Any]] = {}
    first: dict[BoundReference, int] = {}
    out: list[BooleanExpression | None] = []
    for e in items:
        if isinstance(e, BoundPredicate) and e.op in (single, multi):
            values = groups.setdefault(e.ref, [])
            if not values:
                first[e.ref] = len(out)
                out.append(None)
            if e.op is single:
                values.append(e.literal)
            else:
                values.extend(e.literals)
        else:
            out.append(e)
    for ref, at in first.items():
        out[at] = BoundPredicate(merged, ref, groups[ref])
    return [e for e in out if e is not None]


def _reshape(
    node: BooleanExpression, kind: type[_Junction], leaves: Iterator[BooleanExpression]
) -> tuple[BooleanExpression, int]:
    """``node``'s chain of ``kind`` with its operands replaced by ``leaves`` (in order), and
    the chain's height; recursion is bounded by :data:`_KEEP_SHAPE`."""
    if type(node) is not kind:
        return next(leaves), 0
    assert isinstance(node, _Junction)
    left, lh = _reshape(node.left, kind, leaves)
    right, rh = _reshape(node.right, kind, leaves)
    return kind(left, right), 1 + max(lh, rh)
