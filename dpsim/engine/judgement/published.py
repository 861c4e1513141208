"""Checks against published numbers: a paper's printed values or its authors' released results
(:class:`Published`), compared with the reproduction within both Monte-Carlo errors
(:class:`PublishedCheck`; :func:`published_check` for one printed value)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import KW_ONLY, dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from dpsim.errors import UsageError
from dpsim.engine.judgement.checks import format_value, ratio_region
from dpsim.engine.presentation.summary import Z95, require_unpooled
from dpsim.engine.judgement.verdicts import Check, Estimate, _reps


# Published numbers: the reproduction against a paper's table or its authors' data
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Published:
    """Numbers a paper or its authors publish: one row per grid point, keyed by grid axes.

    Attributes:
        source: where the numbers are printed or released (a table and page, or the authors'
            file and commit), quoted on the check's line.
        table: a DataFrame, or a function of no argument returning one (``None`` when the
            numbers are not on this machine, e.g. authors' data a script fetches), with the
            key columns, ``value`` (the published mean) and either ``se`` (the standard error
            of the publisher's own Monte-Carlo mean) or ``reps`` (its replicates, when only
            those are stated: the se is then taken as sd/√reps with the reproduction's sd).
        missing: what to run to get the numbers, printed when ``table`` gives ``None``.
    """

    source: str
    table: object
    missing: str = ""

    def load(self) -> pd.DataFrame | None:
        table = self.table() if callable(self.table) else self.table
        if table is None:
            return None
        if "value" not in table or not ({"se", "reps"} & set(table.columns)):
            raise UsageError(
                f"published numbers from {self.source}: need columns 'value' and 'se' or 'reps', "
                f"got {', '.join(map(str, table.columns))}"
            )
        return table


def _key_values(frame: pd.DataFrame, keys: Sequence[str]) -> list[tuple]:
    """Rounded key tuples (12 significant digits) so that 1/3 typed twice meets itself."""
    return [
        tuple(
            float(f"{float(v):.12g}") if isinstance(v, (int, float, np.number)) else v for v in row
        )
        for row in frame[list(keys)].itertuples(index=False, name=None)
    ]


def published_points(
    rows: pd.DataFrame, published: pd.DataFrame, keys: Sequence[str], metric: str
) -> pd.DataFrame:
    """The reproduction's mean of ``metric`` at every key point of ``published`` it holds, beside
    the published value, and their log ratio with its standard error.

    Args:
        rows: replicate rows of one method (one row per grid point × replicate).
        published: :class:`Published` table (key columns, ``value``, ``se`` or ``reps``).
        keys: the grid axes the table is keyed on.
        metric: the column compared.
    Returns:
        One row per point held by both: keys, ``mean``, ``se_mean`` (sd/√obs), ``obs``, ``value``,
        ``se_value``, ``rel_se_value`` = se_value/value, ``log_ratio`` = log(mean/value) and ``se``
        (delta method, both Monte-Carlo errors: √((se_mean/mean)² + rel_se_value²)); points where either mean
        is not positive are left out (a log ratio needs both).
    """
    grouped = rows.groupby(list(keys), sort=True)[metric]
    mine = pd.DataFrame(
        {"mean": grouped.mean(), "sd": grouped.std(ddof=1), "obs": grouped.count()}
    ).reset_index()
    mine["key"] = _key_values(mine, keys)
    theirs = published.copy()
    theirs["key"] = _key_values(theirs, keys)
    joined = mine.merge(theirs.drop(columns=list(keys)), on="key", how="inner")
    joined["se_mean"] = joined["sd"] / np.sqrt(joined["obs"])
    if "se" in joined and joined["se"].notna().all():
        joined["se_value"] = joined["se"].astype(float)
    else:
        joined["se_value"] = joined["sd"] / np.sqrt(joined["reps"].astype(float))
    joined = joined[(joined["mean"] > 0) & (joined["value"] > 0)].reset_index(drop=True)
    joined["log_ratio"] = np.log(joined["mean"] / joined["value"])
    joined["rel_se_value"] = joined["se_value"] / joined["value"]
    joined["se"] = np.sqrt((joined["se_mean"] / joined["mean"]) ** 2 + joined["rel_se_value"] ** 2)
    return joined.drop(columns=["key"])


def relative_points(
    points: pd.DataFrame, keys: Sequence[str], axis: str, reference
) -> pd.DataFrame:
    """:func:`published_points` taken relative to the point at ``axis`` = ``reference`` with the
    same other keys: ``log_ratio`` − its ``log_ratio`` (the reproduction's ratio mean(x)/mean(ref)
    over the published one), the standard errors combined as independent (conservative where
    both sides reuse one sample across ``axis``, which correlates them positively), and
    ``rel_se_value`` likewise. The reference points themselves are dropped.

    Args:
        points: :func:`published_points`' output.  keys: its key axes.
        axis, reference: the axis and the value every other value is compared with.
    Returns:
        The non-reference points with their relative ``log_ratio``, ``se``, ``rel_se_value``.
    """
    others = [k for k in keys if k != axis]
    at_ref = np.isclose(points[axis].astype(float), float(reference))
    ref = points.loc[at_ref, [*others, "log_ratio", "se", "rel_se_value"]]
    rest = (
        points.loc[~at_ref].merge(ref, on=others, suffixes=("", "_ref"), how="inner")
        if others
        else points.loc[~at_ref].assign(
            **{f"{c}_ref": ref[c].iloc[0] for c in ("log_ratio", "se", "rel_se_value")}
        )
    )
    return rest.assign(
        log_ratio=rest["log_ratio"] - rest["log_ratio_ref"],
        se=np.hypot(rest["se"], rest["se_ref"]),
        rel_se_value=np.hypot(rest["rel_se_value"], rest["rel_se_value_ref"]),
    )


def pooled_clusters(points: pd.DataFrame, cluster: Sequence[str]) -> pd.DataFrame:
    """The precision-weighted mean ``log_ratio`` and its ``se`` of each cluster of
    :func:`published_points` (one per value of the axes ``cluster``; one per point when empty)."""
    if not cluster:
        return points[["log_ratio", "se"]]
    w = 1.0 / points["se"] ** 2
    frame = (
        points.assign(w=w, wr=w * points["log_ratio"])
        .groupby(list(cluster), sort=True)[["w", "wr"]]
        .sum()
    )
    return pd.DataFrame(
        {"log_ratio": frame["wr"] / frame["w"], "se": 1.0 / np.sqrt(frame["w"])}
    ).reset_index()


@dataclass(frozen=True)
class PublishedCheck(Check):
    """The reproduction agrees with published numbers within Monte-Carlo error.

    At every key point both hold, r = log(mean of ``metric`` / published value), with the
    standard error of both means (:func:`published_points`). Points are pooled by
    precision weights first within each cluster (the points of one value of the axes
    ``cluster``: those sharing one random draw of the publisher's design, e.g. one θ* per n),
    then across clusters; the judged number is the pooled ratio e^r̄. Its interval is widened by
    √(χ²/dof) of the clusters about r̄ when they disagree beyond Monte-Carlo error (the
    publisher's design draw is then part of its error); without ``cluster`` every point is its
    own cluster. With ``relative_to`` = (axis, value) each point is first taken relative to the
    point at that value of the axis with the same other keys (:func:`relative_points`): the
    reproduction's profile along the axis against the published one, in which an offset
    common to a cluster (its design draw) cancels. The region is e^{±widths·s}, s the relative
    standard error of the published values alone pooled over the points
    (1/√Σ(value/se_value)², or of their relative values): fixed by what was published,
    before the reproduction is looked at. When the numbers are not on this machine
    (``published.table`` gives None) the check is INCONCLUSIVE and says what to run.
    """

    metric: str
    method: str
    published: Published
    keys: tuple[str, ...]
    _: KW_ONLY
    widths: float = 6.0
    cluster: tuple[str, ...] = ()
    relative_to: tuple = ()

    def __post_init__(self):
        if not set(self.cluster) <= set(self.keys):
            raise UsageError(
                f"check {self.name!r}: cluster axes {list(self.cluster)} must be among the keys "
                f"{list(self.keys)}"
            )
        if self.relative_to and (
            len(self.relative_to) != 2 or self.relative_to[0] not in self.keys
        ):
            raise UsageError(
                f"check {self.name!r}: relative_to must be (axis, value) with the axis among the keys "
                f"{list(self.keys)}, got {self.relative_to!r}"
            )

    @property
    def methods(self):
        return (self.method,)

    def names_read(self):
        return {
            "columns": (self.metric,),
            "axes": (*self.where, *self.pool, *self.keys, *self.cluster),
            "methods": self.methods,
        }

    def mapped(self):
        return (*self.where, *self.pool, *self.keys, "method")

    def estimate(self, rows):
        what = f"mean {self.metric} of {self.method} ÷ {self.published.source}"
        table = self.published.load()
        if table is None:
            return Estimate(
                math.nan,
                math.nan,
                math.nan,
                math.nan,
                math.nan,
                "ratio ≈ 1",
                "-",
                f"the published numbers are not here: {self.published.missing or 'no table'}",
                _reps(rows),
                verdict="INCONCLUSIVE",
            )
        require_unpooled(rows, self.mapped(), f"check {self.name!r}")
        points = published_points(rows, table, self.keys, self.metric)
        if points.empty:
            raise UsageError(
                f"check {self.name!r}: no grid point of {', '.join(self.keys)} is in "
                f"{self.published.source}"
            )
        if self.relative_to:
            points = relative_points(points, self.keys, *self.relative_to)
            if points.empty:
                raise UsageError(
                    f"check {self.name!r}: no point has a partner at {self.relative_to[0]}="
                    f"{self.relative_to[1]!r}"
                )
            what = (
                f"{self.metric} of {self.method} relative to {self.relative_to[0]}={format_value(self.relative_to[1])} "
                f"÷ the same in {self.published.source}"
            )
        clusters = pooled_clusters(points, self.cluster)
        w = 1.0 / clusters["se"].to_numpy(float) ** 2
        r = clusters["log_ratio"].to_numpy(float)
        mean_r = float(np.sum(w * r) / np.sum(w))
        se = 1.0 / math.sqrt(float(np.sum(w)))
        dof = len(clusters) - 1
        chi2 = float(np.sum(w * (r - mean_r) ** 2))
        inflation = max(1.0, math.sqrt(chi2 / dof)) if dof > 0 else 1.0
        rel_published = 1.0 / math.sqrt(float(np.sum(1.0 / points["rel_se_value"] ** 2)))
        lo, hi = ratio_region(rel_published, self.widths)
        low, high = math.exp(mean_r - Z95 * se * inflation), math.exp(mean_r + Z95 * se * inflation)
        z = points["log_ratio"].to_numpy(float) / points["se"].to_numpy(float)
        worst = int(np.argmax(np.abs(z)))
        at = ", ".join(f"{k}={format_value(points[k].iloc[worst])}" for k in self.keys)
        grouped = (
            f" in {len(clusters)} clusters of {', '.join(self.cluster)}" if self.cluster else ""
        )
        evidence = (
            f"{what}, {len(points)} points{grouped}, {int(points['obs'].sum())} obs; χ²/dof {chi2:.1f}/{dof}"
            + (f", interval × {inflation:.2g}" if inflation > 1 else "")
            + f"; largest |z| {abs(z[worst]):.1f} at {at} (log ratio {points['log_ratio'].iloc[worst]:+.3f}); "
            f"region e^(±{self.widths:g}·{rel_published:.2g})"
        )
        predicted = f"ratio in [{lo:.4f}, {hi:.4f}] ({self.published.source})"
        fitted = f"{math.exp(mean_r):.4f} [{low:.4f}, {high:.4f}]"
        return Estimate(
            math.exp(mean_r),
            low,
            high,
            lo,
            hi,
            predicted,
            fitted,
            evidence,
            _reps(rows),
            detail=points,
        )

    def result(self, est, family=1, stage=1, stages=1, needed=True):
        """:meth:`Check.result` without a replicate count to suggest: the published numbers'
        own error does not shrink with the reproduction's replicates (an INCONCLUSIVE line says so)."""
        result = super().result(est, family, stage, stages, needed=False)
        if result.verdict != "INCONCLUSIVE":
            return result
        why = (
            "  the published numbers decide it once they are here"
            if math.isnan(est.value)
            else "  the published numbers' own error keeps it open: more replicates here alone do not decide it"
        )
        return dataclasses.replace(result, note=why)


def published_check(
    name: str,
    experiment: str,
    metric: str,
    method: str,
    value: float,
    *,
    at: Mapping,
    source: str,
    se: float | None = None,
    reps: int | None = None,
    widths: float = 6.0,
    **check,
) -> PublishedCheck:
    """One number printed in a paper (a table's cell, a value stated in its text) against the
    reproduction's mean of ``metric`` of ``method`` at the grid point ``at``
    (:class:`PublishedCheck` on a one-row table).

    Args:
        value: the published mean.  se: its Monte-Carlo standard error when the paper states
            one; else ``reps``, the replicates it states (se = sd/√reps with the reproduction's
            sd).  source: the table or page, quoted on the check's line.
        at: axis → value of the published point (also the check's ``where``).
        widths: the region's half-width in the published value's standard errors.
    Returns:
        The :class:`PublishedCheck`.
    """
    if (se is None) == (reps is None):
        raise UsageError(
            f"check {name!r}: give the published value's se or its replicates (reps), one of them"
        )
    row = {**at, "value": value, **({"se": se} if se is not None else {"reps": reps})}
    where = {**{k: [v] for k, v in at.items()}, **check.pop("where", {})}
    return PublishedCheck(
        name,
        experiment,
        metric,
        method,
        Published(source, pd.DataFrame([row])),
        tuple(at),
        widths=widths,
        where=where,
        **check,
    )


# ---------------------------------------------------------------------------------------
