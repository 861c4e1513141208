"""Predictions computed when a check is judged, not when its paper is imported.

A check's prediction is often a closed form that takes seconds to evaluate (an exact
linearisation, an extreme-value model, a sandwich variance). Rounding it into a literal kept
in step by a test is fragile; computing it at import makes ``dpsim list`` slow. A
:class:`Deferred` is the number itself, evaluated once, the first time a check that holds it
is judged (:meth:`dpsim.engine.judgement.verdicts.Check.evaluate` calls :func:`resolved`)::

    THEORY = deferred_table(predictions)          # predictions() → {"slope": …, "ratio": {3: …}}
    slope_check(…, predicted=THEORY["slope"], tolerance=0.1)
    method_ratio_check(…, 0.9 * THEORY["ratio"][3], 1.1 * THEORY["ratio"][3])

Arithmetic with numbers and other deferred values gives a deferred value; indexing a
deferred mapping gives a deferred entry. A deferred value cannot be formatted (it would be
evaluated at import): a description names the prediction by its formula, and the verdict line
prints the number.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Any, Callable

_UNSET = object()


def _operator(op, swap: bool = False):
    """The method ``self op other`` (``other op self`` with ``swap``) of a deferred value."""
    return lambda self, other: self._combine(other, op, swap)


class Deferred:
    """A value computed by ``thunk()`` on first use (cached).

    Args:
        thunk: a function of no arguments returning the value (a number, or a mapping that
            is indexed further).
        label: what it is, for error messages.
    """

    __slots__ = ("_thunk", "_value", "label")

    def __init__(self, thunk: Callable[[], Any], label: str = "a deferred prediction"):
        self._thunk = thunk
        self._value = _UNSET
        self.label = label

    def value(self) -> Any:
        """The computed value (evaluated on the first call, then cached)."""
        if self._value is _UNSET:
            self._value = self._thunk()
        return self._value

    def __float__(self) -> float:
        return float(self.value())

    def __getitem__(self, key) -> "Deferred":
        return Deferred(lambda: self.value()[key], f"{self.label}[{key!r}]")

    def __iter__(self):
        # without this, iteration would go through __getitem__(0), (1), … for ever
        raise TypeError(
            f"{self.label} is computed when its check is judged: take entries by key, or "
            f"call .value() to compute it now"
        )

    def _combine(self, other, op, swap=False) -> "Deferred":
        def thunk():
            a, b = resolved(self), resolved(other)
            return op(b, a) if swap else op(a, b)

        return Deferred(thunk, self.label)

    __add__, __radd__ = _operator(operator.add), _operator(operator.add, swap=True)
    __sub__, __rsub__ = _operator(operator.sub), _operator(operator.sub, swap=True)
    __mul__, __rmul__ = _operator(operator.mul), _operator(operator.mul, swap=True)
    __truediv__, __rtruediv__ = _operator(operator.truediv), _operator(operator.truediv, swap=True)
    __pow__ = _operator(operator.pow)

    def __neg__(self):
        return Deferred(lambda: -resolved(self), self.label)

    def __str__(self):
        raise self._unprintable("printed")

    def __format__(self, spec):
        raise self._unprintable("formatted")

    def _unprintable(self, how: str) -> TypeError:
        return TypeError(
            f"{self.label} is computed when its check is judged and cannot be {how} before: "
            f"describe it by its formula (the verdict line prints the number)"
        )

    def __repr__(self) -> str:
        return f"Deferred({self.label})" if self._value is _UNSET else repr(self._value)


def deferred_table(compute: Callable[[], dict], label: str = "prediction") -> Deferred:
    """A deferred mapping: ``compute()`` runs once, when the first entry taken from it is
    needed; ``table[key]`` (and ``table[key][sub]``) are deferred entries."""
    return Deferred(functools.cache(compute), label)


def deferred_entries(
    thunks: dict[str, Callable[[], Any]], label: str = "prediction"
) -> dict[str, Deferred]:
    """One deferred value per key: ``thunks[key]()`` runs once, when a check that holds that
    entry is judged, so a check needing one cheap number does not pay for an expensive other
    (:func:`deferred_table` computes the whole table at its first use)."""
    return {key: Deferred(thunk, f"{label} {key!r}") for key, thunk in thunks.items()}


def resolved(obj):
    """``obj`` with every :class:`Deferred` in it evaluated: a deferred value itself, the
    items of a tuple, list or dict, and the ``init`` fields of a dataclass instance (a copy,
    by ``dataclasses.replace``, when one changed); anything else is returned as it is. A
    deferred value held elsewhere (a field with ``init=False``, a set, an array) is not
    reached: keep predictions in ``init`` fields."""
    if isinstance(obj, Deferred):
        return obj.value()
    if isinstance(obj, (tuple, list)):
        items = [resolved(v) for v in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)
    if isinstance(obj, dict):
        items = {k: resolved(v) for k, v in obj.items()}
        return obj if all(items[k] is v for k, v in obj.items()) else items
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            if not f.init:
                continue
            old = getattr(obj, f.name)
            new = resolved(old)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(obj, **changes) if changes else obj
    return obj
