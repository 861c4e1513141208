"""Exact table samplers for discrete laws known on the host (Walker's alias method).

When a law is known before tracing (its probabilities computed on the host in float64) and
is drawn many times (xu's Scenario III: every pair's wins follow one of m − 1 binomial laws,
the same for every replicate of a grid cell), tabulating it once turns each draw into one
64-bit random word and two table reads, whatever the law. Where the law is not known before
tracing (a continuous θ*), ``jax.random.binomial`` stays the sampler.

**Alias tables** (Walker 1977; the construction of Vose 1991 in closed form). A law π on
{0, …, K − 1} is written as K equally likely columns: column j keeps its own outcome j with
probability ``prob[j]`` and otherwise gives ``alias[j]``, so that

    π(x) = (1/K) [prob[x] + Σ_{j : alias[j] = x} (1 − prob[j])].           (*)

:func:`alias_table` builds (prob, alias) from π without a sequential loop: the outcomes with
Kπ < 1 ("small", in index order) take their deficits 1 − Kπ from the outcomes with Kπ ≥ 1
("large", in index order) as one stream: with D_i the cumulative deficit of the first i small
outcomes and E_t the cumulative excess Kπ − 1 of the first t large ones, small outcome i is
aliased to the first large t with E_t ≥ D_{i−1}, and large t, once it has given
D − E_t > 0 more than its excess, keeps 1 − (D − E_t) and is aliased to large t + 1. Every
column then holds at most two outcomes, as (*) requires, and (*) holds exactly in real
arithmetic (:func:`alias_law` recomputes π from a table; the tests check it to 1e-12).

**A draw** (:func:`alias_draw`) takes one uniform 64-bit word r: its high 32 bits choose the
column c = ⌊hi·K / 2³²⌋ (each column with probability ⌊2³²/K⌋/2³² or ⌈2³²/K⌉/2³²), its low 32
bits keep c when lo < t_c, where t_c = round(prob[c]·2³²) is stored as a uint64 (t_c ≤ 2³²).

**Exactness.** The law is computed in float64 (:func:`binomial_pmf`: relative error
≤ 1e-11 per probability for n ≤ 10⁴, from lgamma's rounding), normalised to sum 1, and
tabulated with float64 sums (error ≤ K·2⁻⁵² per entry of prob). Drawn through 32-bit
column and threshold words, each column's probability differs from 1/K by less than 2⁻³²
and each threshold from prob by at most 2⁻³³ + K·2⁻⁵², so by (*) the law drawn is within

    Σ_x |π̂(x) − π(x)| ≤ 2·(K·2⁻³² + 2⁻³³ + K²·2⁻⁵²)

of π in total variation: 2.0e-7 at K = 401, 5e-6 at K = 10⁴ + 1. A goodness-of-fit test
would need ~1/TV² ≫ 10¹¹ draws to see it; the tests' χ² at 10⁶ draws detects an error of
2 % in p (tests/library/test_table_sampler.py).

**Tables of several laws** share one array: (prob, alias) of shape [..., K]; a law with a
smaller support is padded with zero probabilities (columns that its own K, passed to the
draw, never selects when the draw is given its size; or, with the common K, columns whose
own outcome has probability 0 and whose alias is a positive outcome).

Choice of sampler: Walker's alias method against a binary-search inverse CDF on the same
words, measured in ``python -m benchmarks.binomial --sections A``: the alias draw reads two
table entries, the search log₂K.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsim.validate import require, require_int

_WORD = 2.0**32


class AliasTable(NamedTuple):
    """Alias tables of one or several laws on {0, …, K − 1} (module docstring).

    ``threshold``: [..., K] uint64, round(prob·2³²) ∈ [0, 2³²]; ``alias``: [..., K] int32."""

    threshold: np.ndarray
    alias: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.threshold.nbytes + self.alias.nbytes)


def binomial_pmf(n: int, p, size: int | None = None) -> np.ndarray:
    """P(X = k), X ~ Binomial(n, p), k = 0 … size − 1 (default size n + 1; zero beyond n), in
    float64 from lgamma (relative error ≤ 1e-11 per value for n ≤ 10⁴), normalised to sum 1.

    Args: n: trials ≥ 0 (int); p: success probability in [0, 1], a float or an array of
        shape P (one law each); size: ≥ n + 1.
    Returns: (size,) float64, or P + (size,) for an array ``p``."""
    require_int(n, "n", 0)
    require("p", p, lambda v: (v >= 0) & (v <= 1), "must lie in [0, 1]")
    size = n + 1 if size is None else int(size)
    if size < n + 1:
        raise ValueError(f"size={size} must be at least n + 1 = {n + 1}")
    probabilities = np.asarray(p, np.float64)
    q = probabilities.reshape(-1, 1)
    k = np.arange(n + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_pmf = (
            _log_choose(n)
            + np.where(k > 0, k * np.log(q), 0.0)
            + np.where(k < n, (n - k) * np.log1p(-q), 0.0)
        )
    values = np.exp(log_pmf - log_pmf.max(axis=1, keepdims=True))
    pmf = np.zeros((q.shape[0], size))
    pmf[:, : n + 1] = values / values.sum(axis=1, keepdims=True)
    return pmf.reshape(probabilities.shape + (size,))


@functools.lru_cache(maxsize=64)
def _log_choose(n: int) -> np.ndarray:
    """log C(n, k), k = 0 … n, from lgamma (read-only; cached: a cell's laws share n)."""
    lgamma = np.frompyfunc(math.lgamma, 1, 1)
    k = np.arange(n + 1, dtype=np.float64)
    out = (
        math.lgamma(n + 1) - lgamma(k + 1).astype(np.float64) - lgamma(n - k + 1).astype(np.float64)
    )
    out.setflags(write=False)
    return out


def _count_in_row(key_rows, key_values, query_rows, query_values, inclusive: bool) -> np.ndarray:
    """For each query, the number of keys of its row with value < its value (≤ when
    ``inclusive``). Keys and queries are in row order and each row's values nondecreasing
    (cumulative sums), so it is one binary search per row."""
    n_rows = int(max(key_rows.max(initial=-1), query_rows.max(initial=-1))) + 1
    key_start = np.searchsorted(key_rows, np.arange(n_rows + 1))
    query_start = np.searchsorted(query_rows, np.arange(n_rows + 1))
    side = "right" if inclusive else "left"
    counts = np.empty(query_rows.size, np.int64)
    for row in range(n_rows):
        q = slice(query_start[row], query_start[row + 1])
        counts[q] = np.searchsorted(
            key_values[key_start[row] : key_start[row + 1]], query_values[q], side=side
        )
    return counts


def _alias_rows(pmf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(prob, alias) of the laws ``pmf`` [R, K] (module docstring's closed-form construction),
    every row at once."""
    n_rows, k = pmf.shape
    scaled = pmf * (k / pmf.sum(axis=1, keepdims=True))
    prob = np.ones((n_rows, k))
    alias = np.broadcast_to(np.arange(k, dtype=np.int32), (n_rows, k)).copy()
    small = scaled < 1.0
    deficit = np.cumsum(np.where(small, 1.0 - scaled, 0.0), axis=1)  # D_i at small positions
    excess = np.cumsum(np.where(small, 0.0, scaled - 1.0), axis=1)  # E_t at large positions
    s_row, s_col = np.nonzero(small)
    l_row, l_col = np.nonzero(~small)
    if s_row.size == 0:
        return prob, alias
    before = deficit[s_row, s_col] - (1.0 - scaled[s_row, s_col])  # D_{i−1}
    e_t = excess[l_row, l_col]
    l_first = np.searchsorted(l_row, np.arange(n_rows), side="left")  # each row's first large
    l_count = np.bincount(l_row, minlength=n_rows)
    # small i → the first large t of its row with E_t ≥ D_{i−1} (clamped to the row's last)
    t = np.minimum(_count_in_row(l_row, e_t, s_row, before, inclusive=False), l_count[s_row] - 1)
    prob[s_row, s_col] = scaled[s_row, s_col]
    alias[s_row, s_col] = l_col[l_first[s_row] + t]
    # large t: the smalls with D_{i−1} ≤ E_t are served before it falls; it gives D − E_t beyond its excess
    s_first = np.searchsorted(s_row, np.arange(n_rows), side="left")
    served = _count_in_row(s_row, before, l_row, e_t, inclusive=True)
    last = s_first[l_row] + served - 1
    given = (
        np.where(served > 0, deficit[s_row[np.maximum(last, 0)], s_col[np.maximum(last, 0)]], 0.0)
        - e_t
    )
    rank = np.arange(l_row.size) - l_first[l_row]
    falls = (given > 0) & (rank < l_count[l_row] - 1)
    prob[l_row[falls], l_col[falls]] = np.clip(1.0 - given[falls], 0.0, 1.0)
    alias[l_row[falls], l_col[falls]] = l_col[np.flatnonzero(falls) + 1]
    return prob, alias


def alias_table(pmf) -> AliasTable:
    """Walker alias tables of the laws ``pmf`` (module docstring).

    Args: pmf: [..., K] float64, nonnegative, each law summing to 1 (renormalised here).
    Returns: :class:`AliasTable` of shape [..., K]."""
    pmf = np.asarray(pmf, dtype=np.float64)
    if pmf.ndim == 0 or pmf.shape[-1] == 0:
        raise ValueError(f"pmf must have a last axis of outcomes, got shape {pmf.shape}")
    if not np.all(np.isfinite(pmf)) or np.any(pmf < 0) or np.any(pmf.sum(axis=-1) <= 0):
        raise ValueError("pmf must be finite, nonnegative, with a positive sum per law")
    prob, alias = _alias_rows(pmf.reshape(-1, pmf.shape[-1]))
    threshold = np.rint(prob * _WORD).astype(np.uint64)
    return AliasTable(threshold.reshape(pmf.shape), alias.reshape(pmf.shape))


def alias_law(table: AliasTable) -> np.ndarray:
    """The law (*) a table encodes, [..., K] float64 (thresholds read as prob = t/2³²): the
    reference the tests compare with the law tabulated."""
    prob = np.asarray(table.threshold, np.float64) / _WORD
    alias = np.asarray(table.alias)
    flat_p, flat_a = prob.reshape(-1, prob.shape[-1]), alias.reshape(-1, alias.shape[-1])
    law = np.zeros_like(flat_p)
    rows = np.arange(flat_p.shape[0])[:, None]
    law += flat_p
    np.add.at(law, (np.broadcast_to(rows, flat_a.shape), flat_a), 1.0 - flat_p)
    return (law / prob.shape[-1]).reshape(prob.shape)


def alias_draw(bits, threshold, alias, row, size):
    """Outcomes drawn through the laws ``row`` of one table [R, K] from uniform 64-bit words
    (module docstring): two table reads per element, no per-element copy of a row.

    Args:
        bits: uint64 words, shape S (``jax.random.bits(key, S, jnp.uint64)``).
        threshold, alias: [R, K] (an :class:`AliasTable` of R laws, as arrays).
        row: int, broadcastable to S: which law each element draws from.
        size: each law's number of outcomes (≤ K), broadcastable to S: columns ≥ size are
            never chosen, so laws of fewer outcomes may share a padded table.
    Returns:
        int32 outcomes, shape S.
    """
    bits = jnp.asarray(bits, jnp.uint64)
    column = (((bits >> 32) * jnp.asarray(size, jnp.uint64)) >> 32).astype(jnp.int32)
    keep = (bits & jnp.uint64(0xFFFFFFFF)) < threshold[row, column]
    return jnp.where(keep, column, alias[row, column])


def binomial_table(n: int, probabilities, size: int | None = None) -> AliasTable:
    """Alias tables of Binomial(n, p) for each p of ``probabilities`` (shape P), each on
    {0, …, size − 1} (default n + 1). Returns: :class:`AliasTable` of shape P + (size,)."""
    return alias_table(binomial_pmf(n, np.asarray(probabilities, np.float64), size))


def sample_binomial_table(key, table: AliasTable, shape=()) -> jax.Array:
    """``shape`` draws from each law of ``table`` ([..., K]): int32 of shape ``shape`` + the
    table's leading shape (one 64-bit word per draw)."""
    lead, k = table.threshold.shape[:-1], table.threshold.shape[-1]
    rows = int(np.prod(lead, dtype=np.int64))
    bits = jax.random.bits(key, tuple(shape) + (rows,), jnp.uint64)
    draws = alias_draw(
        bits,
        jnp.asarray(table.threshold).reshape(rows, k),
        jnp.asarray(table.alias).reshape(rows, k),
        jnp.arange(rows),
        k,
    )
    return draws.reshape(tuple(shape) + lead)


__all__ = [
    "AliasTable",
    "binomial_pmf",
    "alias_table",
    "alias_law",
    "alias_draw",
    "binomial_table",
    "sample_binomial_table",
]
