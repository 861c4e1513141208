"""nguyen's one-line claims beyond the engine's (:mod:`dpsim.engine.judgement.checks`), each a
:class:`~dpsim.engine.judgement.checks.Claim` (docs/nguyen.md, Predictions):

* :func:`metric_ratio_slope_check`: for one method, the slope in log x of log(mean a/mean b)
  for two metrics of the same fits (R3: ‖·‖∞/‖·‖₂ shrinks like √(log m/m));
* :func:`rms_slope_check`: for one method, the slope in log x of the log root mean square of
  a metric (R9: the Laplace chain's privacy shift);
* :func:`relative_level_check`: a metric's mean relative to a known level (R11: "very
  inaccurate" means an error at least that of the estimate 0, ‖β*‖₂).

The private/non-private ratios (R7, R9) are the engine's
:func:`~dpsim.engine.judgement.checks.method_ratio_check` and
:func:`~dpsim.engine.judgement.checks.method_ratio_slope_check`.
"""

from __future__ import annotations

from dpsim.engine.judgement.checks import Along, Claim, ColumnRatio, Mean, level_check


def metric_ratio_slope_check(
    name: str,
    experiment: str,
    method: str,
    numerator: str,
    denominator: str,
    x: str,
    low: float,
    high: float,
    **check,
) -> Claim:
    """The slope in log ``x`` of log(mean ``numerator``/mean ``denominator``), two metrics of
    the same fits of ``method`` paired per fit (:class:`ColumnRatio` :class:`Along` ``x``),
    lies in [``low``, ``high``]."""
    return Claim(
        name,
        experiment,
        ColumnRatio(numerator, denominator, method),
        (low, high),
        over=Along(x),
        **check,
    )


def rms_slope_check(
    name: str, experiment: str, metric: str, method: str, x: str, low: float, high: float, **check
) -> Claim:
    """The slope in log ``x`` of log √mean(metric²) of ``method`` lies in [``low``, ``high``].
    The root mean square is what a linearised prediction E‖J z‖² = σ²‖J‖_F² gives exactly,
    whereas the mean of log ‖J z‖ also depends on the shape of the distribution, which changes
    with the dimension."""
    return Claim(
        name,
        experiment,
        Mean(metric, method, root=True, square=True),
        (low, high),
        over=Along(x),
        **check,
    )


def relative_level_check(
    name: str,
    experiment: str,
    metric: str,
    method: str,
    reference: float,
    lo: float,
    hi: float,
    *,
    reference_name: str = "reference",
    **check,
) -> Claim:
    """mean(``metric``)/``reference`` lies in [``lo``, ``hi``] (``reference`` a known level,
    e.g. the error of the estimate 0, printed as ``reference_name``)."""
    return level_check(
        name,
        experiment,
        metric,
        method,
        lambda point: reference,
        lo,
        hi,
        formula=reference_name,
        **check,
    )
