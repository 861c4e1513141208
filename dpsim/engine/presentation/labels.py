"""How a figure writes values, axes and curves: the text of tick labels, titles, subtitles,
legends and file names, and the order values are drawn in.

A value is written as the papers write it (:func:`format_value`: ∞, integers without ".0",
3 significant digits); values are ordered numerically with ∞ last (:func:`sort_key`), names
with a declared label in the order the figure declares them (:func:`value_order`); an axis
is its paper's symbol (:func:`symbol`), and a value the figure declares words or a formula
for is written with them (:func:`value_label`, :func:`phrase`, :func:`curve_name`).

Separate from the rows and panels a figure draws (:mod:`dpsim.engine.presentation.panels`)
and from the drawing itself (:mod:`dpsim.engine.presentation.plots`), which both use it; it
needs neither pandas nor matplotlib.
"""

from __future__ import annotations

import math

import numpy as np

from dpsim.engine.definition.figure import FigureSpec


def format_value(value) -> str:
    """A grid value as a figure writes it: ∞, integers without ".0", 3 significant digits.

    Args:
        value: a number or a name.
    Returns:
        The text.
    """
    if isinstance(value, (float, np.floating)) and math.isinf(value):
        return "∞"
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}"
    return str(value)


def sort_key(value):
    """Numeric order with ∞ last, names after numbers.

    Args:
        value: a number or a name.
    Returns:
        A key for ``sorted``.
    """
    if isinstance(value, str):
        return (2, 0.0, value)
    value = float(value)
    return (1, 0.0, "") if math.isinf(value) else (0, value, "")


def value_order(spec: FigureSpec, axis: str):
    """The sort key of ``axis``'s values in a figure: :func:`sort_key`, except that names with
    a declared label come after the other names, in the order the labels are declared (e.g.
    xu's schemes as the paper numbers them; nguyen's p₀ = 0.2, …, 0.5, then "proposed").

    Args:
        spec: the figure (its ``value_labels``).
        axis: a grid axis.
    Returns:
        A key function for ``sorted``.
    """
    declared = [v for v in spec.value_labels.get(axis, {}) if isinstance(v, str)]

    def key(value):
        if isinstance(value, str):
            return (2, 1 + declared.index(value), "") if value in declared else (2, 0, value)
        return sort_key(value)

    return key


def symbol(spec: FigureSpec, axis: str) -> str:
    """The paper's symbol of an axis.

    Args:
        spec: the figure (its ``symbols``).
        axis: a grid axis.
    Returns:
        ``spec.symbols[axis]``, else the axis name.
    """
    return spec.symbols.get(axis, axis)


def value_label(spec: FigureSpec, axis: str, value) -> str | None:
    """The figure's words or formula for one value of an axis.

    Args:
        spec: the figure (its ``value_labels``).
        axis: a grid axis.
        value: one of its values.
    Returns:
        The declared label, or None when there is none.
    """
    labels = spec.value_labels.get(axis, {})
    try:
        return labels.get(value)
    except TypeError:  # an unhashable value has no label
        return None


def phrase(spec: FigureSpec, axis: str, value) -> str:
    """How a figure writes ``axis = value`` in titles and the subtitle.

    Args:
        spec: the figure (its ``symbols`` and ``value_labels``).
        axis: a grid axis.
        value: one of its values.
    Returns:
        The value's label when the figure declares one (e.g. "debiased RR"), else
        "symbol = value" (e.g. "$m$ = 20").
    """
    label = value_label(spec, axis, value)
    return label if label is not None else f"{symbol(spec, axis)} = {format_value(value)}"


def curve_name(spec: FigureSpec, curve) -> str:
    """The legend label of one curve.

    Args:
        spec: the figure.
        curve: a method name (``spec.curve == "method"``) or a value of the curve axis.
    Returns:
        The method's label, the value's label, or "curve_label = value".
    """
    if spec.curve == "method":
        return spec.curve_labels.get(curve, curve)
    label = value_label(spec, spec.curve, curve)
    return label if label is not None else f"{spec.curve_label} = {format_value(curve)}"
