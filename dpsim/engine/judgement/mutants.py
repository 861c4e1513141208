"""Mutants: plausible bugs in a paper's mechanisms and estimators, declared beside its checks,
so that ``dpsim verify PAPER --mutants`` can show that the checks would catch them (a check
that cannot fail is not a check).

A :class:`Mutant` is a function from an :class:`~dpsim.engine.definition.grid.Experiment` to a
mutated one, applied to the experiments it names; nothing in the library knows about it (no
test hook enters library code). The transformations below build the usual ones from the
seams every experiment already has:

* :func:`scaled_analysis`: a method (or the ``privatise`` stage) sees an analysis value
  scaled, e.g. ε·2 (a release at 2ε) or ε/2 (noise × 2 where the scale is ∝ 1/ε);
* :func:`scaled_derived`: a host-derived value scaled, e.g. σ × ½ of a discrete Gaussian,
  or :func:`overridden_derived`: computed otherwise (ρ from a wrong conversion);
* :func:`replaced_method`: one method's function replaced, e.g. the debiased estimator by
  the classic one (debiasing removed);
* :func:`chain`: several transformations in turn.

A paper module lists its mutants in ``MUTANTS``; a study file may too. A mutant must change
the *data a check judges*, never the prediction: the checks' predictions are evaluated from
the grid's values at verify time (:func:`~dpsim.engine.judgement.checks.level_check`), so a
mutant's wrong calibration shows as a discrepancy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from dpsim.engine.definition.experiment import Context, Derived, Experiment, Method

Transform = Callable[[Experiment], Experiment]


@dataclass(frozen=True)
class Mutant:
    """One plausible bug.

    Attributes:
        name: begins with the paper's name (``xu-debias-removed``).
        description: the bug, one line (e.g. "RR released at 2ε, debiased at ε").
        experiments: the experiments it changes; every other experiment keeps its table, and
            only the checks judged on these are re-evaluated.
        apply: ``Experiment -> Experiment`` (the transformations of this module).
        breaks: the components of its paper it breaks (names of the paper's ``COMPONENTS``,
            e.g. ``"mechanism:cai-edge-counts"``), so ``dpsim list PAPER --pins`` shows beside
            each component the checks that pin it and the mutants that break it.
    """

    name: str
    description: str
    experiments: tuple[str, ...]
    apply: Transform
    breaks: tuple[str, ...] = ()

    def __post_init__(self):
        if isinstance(self.experiments, str):
            object.__setattr__(self, "experiments", (self.experiments,))
        if isinstance(self.breaks, str):
            object.__setattr__(self, "breaks", (self.breaks,))
        if not self.experiments:
            raise ValueError(f"mutant {self.name!r} names no experiment")

    def mutate(self, experiment: Experiment) -> Experiment:
        """The mutated experiment (same name and grid; its runs live apart, see verify)."""
        mutated = self.apply(experiment)
        if not isinstance(mutated, Experiment):
            raise TypeError(
                f"mutant {self.name!r} returned {type(mutated).__name__}, not an Experiment"
            )
        return mutated


def _with_analysis(ctx: Context, change: Callable[[dict], dict]) -> Context:
    return ctx._replace(analysis=change(dict(ctx.analysis)))


def _scaler(values: Mapping[str, float]) -> Callable[[dict], dict]:
    def change(analysis: dict) -> dict:
        missing = [k for k in values if k not in analysis]
        if missing:
            raise KeyError(f"mutant scales {missing[0]!r}, which is not an analysis value here")
        return {**analysis, **{k: analysis[k] * f for k, f in values.items()}}

    return change


def scaled_analysis(
    values: Mapping[str, float], *, methods: Sequence[str] | None = None, privatise: bool = False
) -> Transform:
    """Methods see analysis values multiplied by factors.

    Args:
        values: analysis value → factor, e.g. ``{"eps": 2.0}`` (a release at 2ε).
        methods: the methods that see it (default: every method).
        privatise: the shared ``privatise`` stage sees it too (a release at 2ε that the
            estimators then debias at ε: ``methods=()``, ``privatise=True``).
    Returns:
        The transformation.
    """
    change = _scaler(values)

    def wrap(fn):
        return lambda key, ctx: fn(key, _with_analysis(ctx, change))

    def apply(experiment: Experiment) -> Experiment:
        chosen = list(experiment.methods) if methods is None else list(methods)
        unknown = [m for m in chosen if m not in experiment.methods]
        if unknown:
            raise ValueError(f"experiment {experiment.name!r} has no method {unknown[0]!r}")
        new_methods = {
            name: dataclasses.replace(m, fn=wrap(m.fn)) if name in chosen else m
            for name, m in experiment.methods.items()
        }
        new_privatise = experiment.privatise
        if privatise:
            if experiment.privatise is None:
                raise ValueError(f"experiment {experiment.name!r} has no privatise stage")
            new_privatise = wrap(experiment.privatise)
        return dataclasses.replace(experiment, methods=new_methods, privatise=new_privatise)

    return apply


def overridden_derived(name: str, value: Callable[[dict, dict], Any]) -> Transform:
    """The host-derived value ``name`` replaced by ``value(point, derived)``, where ``derived``
    holds what the experiment derived at that point (e.g. ρ from a wrong (ε, δ) conversion)."""

    def apply(experiment: Experiment) -> Experiment:
        if name not in experiment.derived_names():
            raise ValueError(f"experiment {experiment.name!r} derives no value {name!r}")

        def wrap(derived: Derived) -> Derived:
            if name not in derived.names:
                return derived

            def fn(point, inner=derived.fn):
                out = dict(inner(point))
                out[name] = value(point, out)
                return out

            return dataclasses.replace(derived, fn=fn)

        return dataclasses.replace(experiment, derived=tuple(wrap(d) for d in experiment.derived))

    return apply


def scaled_derived(values: Mapping[str, float]) -> Transform:
    """Host-derived values multiplied by factors, e.g. ``{"sigma": 0.5}`` (a discrete
    Gaussian with half the σ its budget needs)."""
    return chain(
        *(
            overridden_derived(
                name, lambda point, derived, name=name, factor=factor: derived[name] * factor
            )
            for name, factor in values.items()
        )
    )


def replaced_method(
    name: str,
    fn: Callable[[Any, Context], Mapping[str, Any]] | None = None,
    *,
    like: str | None = None,
) -> Transform:
    """One method's function replaced: by ``fn``, or by the function of the method ``like``
    (e.g. the debiased estimator computed as the classic one: debiasing removed). The method
    keeps its name, metrics and diagnostics, so its key and its rows stay where they were."""
    if (fn is None) == (like is None):
        raise ValueError("give exactly one of fn and like")

    def apply(experiment: Experiment) -> Experiment:
        for wanted in (name, like):
            if wanted is not None and wanted not in experiment.methods:
                raise ValueError(f"experiment {experiment.name!r} has no method {wanted!r}")
        new_fn = fn if fn is not None else experiment.methods[like].fn
        methods = {
            **experiment.methods,
            name: dataclasses.replace(experiment.methods[name], fn=new_fn),
        }
        return dataclasses.replace(experiment, methods=methods)

    return apply


def wrapped_method(name: str, wrapper: Callable[[Callable], Callable]) -> Transform:
    """One method's function wrapped: ``wrapper(fn)`` returns the new ``(key, ctx) -> dict``."""

    def apply(experiment: Experiment) -> Experiment:
        if name not in experiment.methods:
            raise ValueError(f"experiment {experiment.name!r} has no method {name!r}")
        method: Method = experiment.methods[name]
        return dataclasses.replace(
            experiment,
            methods={
                **experiment.methods,
                name: dataclasses.replace(method, fn=wrapper(method.fn)),
            },
        )

    return apply


def changed_truth(change: Callable[[Any, dict], Any], *, field: str | None = None) -> Transform:
    """The experiment's truth changed by ``change(value, shape)``: the whole truth, or only its
    entry ``field`` (e.g. ``"theta"``, the rest kept), for the generator and the checks alike
    (e.g. a design drawn at twice its scale)."""

    def apply(experiment: Experiment) -> Experiment:
        def truth(key, shape, inner=experiment.truth):
            drawn = inner(key, shape)
            if field is None:
                return change(drawn, shape)
            return {**drawn, field: change(drawn[field], shape)}

        return dataclasses.replace(experiment, truth=truth)

    return apply


def chain(*transforms: Transform) -> Transform:
    """The transformations applied in turn."""

    def apply(experiment: Experiment) -> Experiment:
        for transform in transforms:
            experiment = transform(experiment)
        return experiment

    return apply


def mutants_of(items: Iterable[Mutant], experiments: Iterable[str]) -> list[Mutant]:
    """The mutants that change at least one of ``experiments``."""
    wanted = set(experiments)
    return [m for m in items if wanted & set(m.experiments)]
