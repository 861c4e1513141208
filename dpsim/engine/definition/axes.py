"""Grid axes: the shared vocabulary and the types an experiment uses
to declare axes of its own.

Every axis has an :class:`AxisType`: a validator that normalises one value or raises
:class:`~dpsim.errors.UsageError` with a one-line message naming it (the library's own
checks, :mod:`dpsim.validate`, so the grid and the library say the same), a description, and,
for string axes, the allowed names. The vocabulary (``n_items``, ``n_users``, ``per_user``,
``n_samples``, ``dim``, ``n_actions``, ``p``, ``eps``, ``delta``, ``k``, ``gap``, ``link``)
is shared by every experiment, so results tables, the CLI and checks speak one language; an
experiment adds its own axes (``c0``, ``mode``, ``mechanism``, ``scheme``, ``dataset``, …) in
``Experiment.axis_types`` and may not redefine a shared one.

Rules every paper follows:

* ``k`` is the top-k size and nothing else. It may be declared ``auto`` (the paper's rule),
  but the stored ``k`` column is always the resolved integer (the experiment's
  ``resolve_shape`` fills it in; there is no second column such as ``top_k``); the declared
  value stays in the manifest's history. A number of alternatives (chowdhury's K) is
  ``n_actions``.
* ``mode`` is the one name of a paper-versus-correct reading, its values the paper's named
  readings (``paper`` / ``strict``; chowdhury's SGD step sizes ``literal`` / ``theory`` /
  ``averaged``). Axes that override one ingredient of a mode's reading alone keep their own
  names (nguyen's ``accounting`` and ``conversion``, ``auto`` = the mode's). xu's ridge
  λ rule is ``mode`` too (``g_over_l`` / ``paper``; keyed under its former name
  ``lambda_rule``).
* A file the user supplies is ``<what>_file`` (``ratings_file``, ``uci_file``, …), with
  ``stand-in`` for the synthetic stand-in.
* An axis renamed after its results were published keeps its random streams through
  ``Experiment.stream_names`` and ``stream_point`` (docs/concepts.md, "Lanes, chunks and
  keys"); ``--set OLD=…`` is then answered with the new name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from dpsim import validate as v
from dpsim.errors import UsageError


@dataclass(frozen=True)
class AxisType:
    """How values of one axis are validated and described.

    Attributes:
        validate: ``(axis name, value) -> normalised value``; raises UsageError.
        doc: what the axis is (shown by ``dpsim show``).
        choices: the allowed names of a string axis (None for numeric axes).
    """

    validate: Callable[[str, Any], Any]
    doc: str = ""
    choices: tuple[str, ...] | None = None

    def __call__(self, axis: str, value):
        return self.validate(axis, value)

    def invalid_examples(self) -> list:
        """One bad value of each kind this type refuses: of the values :data:`PROBES`, the
        first refused (a ValueError, UsageError included) with each message, e.g.
        ["nosuch", 0] for ε (not a number; not > 0), ["nosuch"] for a choice axis (every value
        outside its names is refused alike), [0] for a name. Found by asking the validator
        itself, so that tests can try them on every experiment's axes
        (tests/conformance/test_conformance.py).

        Returns:
            values as ``--set AXIS=VALUE`` parses them (str(value) is the text to pass)."""
        kinds: dict[str, object] = {}
        for value in PROBES:
            try:
                self.validate("axis", value)
            except ValueError as exc:  # a UsageError, or a ValueError of dpsim.validate
                kinds.setdefault(
                    str(exc).replace(f"={value!r}", "=…").replace(f"={value}", "=…"), value
                )
        return list(kinds.values())


# The values :meth:`AxisType.invalid_examples` tries, each as ``--set AXIS=VALUE`` parses it:
# a name that no choice axis offers, zero, negative, a fraction, one, and above one.
PROBES = ("nosuch", 0, -1, 0.5, 1, 1.5)


def _checked(requirement: v.Requirement, cast=float):
    """The validator of a numeric axis: one number meeting ``requirement``, cast."""

    def validate(axis, value):
        v.require_number(axis, value)
        v.check(axis, value, requirement)
        return cast(value)

    return validate


def positive_eps(doc: str = "privacy budget ε (inf: non-private)") -> AxisType:
    """ε > 0; ε = inf is the non-private case."""
    return AxisType(_checked(v.EPS), doc)


def probability(doc: str) -> AxisType:
    """A probability in (0, 1]."""
    return AxisType(_checked(v.PROBABILITY), doc)


def open_unit(doc: str) -> AxisType:
    """A number in (0, 1)."""
    return AxisType(_checked(v.OPEN_UNIT), doc)


def positive(doc: str) -> AxisType:
    """A finite number > 0."""
    return AxisType(_checked(v.POSITIVE), doc)


def nonnegative(doc: str) -> AxisType:
    """A finite number ≥ 0."""
    return AxisType(_checked(v.NONNEGATIVE), doc)


def integer(minimum: int, doc: str, maximum: int | None = None) -> AxisType:
    """An integer in [minimum, maximum]."""
    return AxisType(_checked(v.integer_in(minimum, maximum), int), doc)


def choice(*names: str, doc: str = "") -> AxisType:
    """A string axis whose values are one of ``names``."""
    allowed = tuple(names)

    def validate(axis, value):
        v.require_choice(axis, value, allowed)
        return value

    return AxisType(validate, doc, allowed)


def name(doc: str) -> AxisType:
    """Any non-empty string (e.g. a file path or a dataset name checked elsewhere)."""

    def validate(axis, value):
        if not isinstance(value, str) or not value:
            raise UsageError(f"{axis}={value!r} must be a name")
        return value

    return AxisType(validate, doc)


def integer_or(names: tuple[str, ...], minimum: int, doc: str) -> AxisType:
    """An integer ≥ ``minimum``, or one of ``names`` (e.g. k = "auto")."""
    as_int = integer(minimum, doc)

    def validate(axis, value):
        return value if value in names else as_int(axis, value)

    return AxisType(validate, doc, None)


VOCABULARY: dict[str, AxisType] = {
    "n_items": integer(2, "number of items (cai n; xu, nguyen m)"),
    "n_users": integer(1, "number of users / individuals (cai m; xu L; nguyen n)"),
    "per_user": integer(1, "comparisons per user (cai L)"),
    "n_samples": integer(1, "number of samples of the feature model (chowdhury n)"),
    "dim": integer(1, "feature dimension (chowdhury d)"),
    "p": probability("edge / observation probability"),
    "eps": positive_eps(),
    "delta": open_unit("approximate-DP slack δ"),
    "k": integer_or(
        ("auto",), 1, "top-k size K (auto: the paper's rule); stored as the resolved integer"
    ),
    "n_actions": integer(
        2, "number of actions K compared in one Plackett–Luce choice (chowdhury K)"
    ),
    "gap": positive("gap Δ between consecutive or top-k parameters"),
    "link": choice("logistic", "probit", doc="link of the comparison model (probit: Thurstone)"),
}


def axis_type(axis: str, own: Mapping[str, AxisType] | None = None) -> AxisType:
    """The type of ``axis``: the shared vocabulary's, else the experiment's own (``own``)."""
    if axis in VOCABULARY:
        return VOCABULARY[axis]
    if own and axis in own:
        return own[axis]
    raise UsageError(f"unknown axis {axis!r}")


def validate_value(axis: str, value, own: Mapping[str, AxisType] | None = None):
    """Validate (and normalise) one grid value of ``axis``."""
    return axis_type(axis, own)(axis, value)


def parse_value(text: str):
    """Parse one value of ``--set axis=v1,v2``: int, float, inf, or a bare name."""
    text = text.strip()
    if not text:
        raise UsageError("empty value in --set")
    lowered = text.lower()
    if lowered in ("inf", "+inf", "infinity"):
        return math.inf
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    if math.isnan(value):
        raise UsageError(f"value {text!r} is not a number")
    if math.isinf(value):
        raise UsageError(f"value {text!r} overflows a float; write inf for the non-private case")
    return value


def parse_set_option(option: str) -> tuple[str, list]:
    """Parse ``axis=v1,v2,...`` into (axis, [values]); malformed text → UsageError."""
    if "=" not in option:
        raise UsageError(f"malformed --set {option!r}: expected axis=v1,v2,...")
    axis, _, values = option.partition("=")
    axis = axis.strip()
    if not axis or not values.strip():
        raise UsageError(f"malformed --set {option!r}: expected axis=v1,v2,...")
    return axis, [parse_value(v) for v in values.split(",")]
