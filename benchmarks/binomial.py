"""Exact binomial samplers in JAX on CPU: is there one fast enough for xu's targets?

xu's engine is held back by its binomial draws (``benchmarks.xu`` section P): at m = 30 items
a replicate draws 1305 binomials, and ``jax.random.binomial`` (JAX's BTRS / inversion, the
engine's sampler) spends more on them than the vectorised NumPy baseline spends on the whole
replicate. This benchmark asks whether a better exact sampler written in JAX would close
that gap. It times, per draw, side by side in one run:

* ``jax.random.binomial``: every element runs the inversion loop and the BTRS loop (the
  other branch's values masked), and each BTRS round evaluates the full acceptance test
  (four logarithms, four Stirling tails) on every element until the slowest is accepted;
* a **compacted BTRS** written here (:func:`compacted_binomial`, the same algorithm,
  Hörmann 1993, with a cdf-search inversion below n·min(p, 1 − p) = 10): the squeeze test on every
  element, then the full test only on the elements it did not accept, gathered into a
  buffer, and each further round on the still-rejected elements only, gathered again;
* NumPy's ``Generator.binomial`` (BTPE, C, one element at a time);

in the regimes xu draws (section P's raw wins; the RR release's kept and flipped answers),
each vmapped over 200 lanes with a key per lane, as the engine runs them; the compile time of one sampler call;
and a χ² goodness-of-fit test of both JAX samplers against SciPy's exact pmf (section G):
"exact" is a claim this benchmark checks, not assumes.

The prototype is not the engine's sampler: faster per draw than JAX's in these regimes but
slower than NumPy's, and longer to compile (section T; numbers in
``benchmarks/results/binomial.json``). Priced into ``benchmarks/xu.py`` section P's stage
times it would bring xu's warm engine about level with the vectorised baseline, far from the
5× target; but every xu program compiles three sampler calls per mechanism branch, so cold
runs (compile-bound, and not to get slower: issue 25) would compile longer, and every stored
xu draw would change (README, Performance).

Section A (table samplers, :mod:`dpsim.samplers`): where the laws are known on the host (xu's
Scenario III, Binomial(L, σ(Δk)) for k = 1 … m − 1), ns per draw of Walker's alias method and
of a binary-search inverse CDF, both on one 64-bit word per draw and one table per cell,
beside ``jax.random.binomial`` and NumPy on the same laws, and the host time to build the
tables of one cell. The engine draws through the faster table (the alias method).

Run: ``python -m benchmarks.binomial [--quick] [--sections T,G,A]``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

import dpsim  # noqa: F401  (float64 in JAX)
import jax
import jax.numpy as jnp
from scipy import stats

from benchmarks import harness

PAPER = "binomial"

# log k! − [(k + ½) log(k + 1) − (k + 1) + ½ log 2π] for k = 0…9 (Hörmann 1993, Table 1; the
# same values as TensorFlow's and JAX's BTRS); the series below is used above 9.
STIRLING_TAIL = np.array(
    [
        0.0810614667953272,
        0.0413406959554092,
        0.0276779256849983,
        0.02079067210376509,
        0.0166446911898211,
        0.0138761288230707,
        0.0118967099458917,
        0.0104112652619720,
        0.00925546218271273,
        0.00833056343336287,
    ]
)
INVERSION_BELOW = 10.0  # n·min(p, 1 − p) under which the inversion algorithm is used (as JAX)
FIRST_BUFFER = 0.75  # share of elements the full test's buffer holds (the squeeze accepts ≥ 26 %)
LATER_BUFFERS = (
    0.45,
    0.45,
)  # each further round's buffer, as a share of the previous one (the full
# test rejects up to ~37 % of its buffer near n·q = 10)
SMALLEST_BUFFER = 64  # below this, rounds run on the whole buffer until all are accepted


# ----------------------------------------------------------------------------- the prototype


def stirling_tail(k):
    """log k! minus its Stirling approximation, elementwise (table to 9, series above)."""
    t = 1.0 / (k + 1.0)
    t2 = t * t
    series = (1.0 / 12 - (1.0 / 360 - t2 / 1260) * t2) * t
    return jnp.where(
        k <= 9, jnp.asarray(STIRLING_TAIL)[jnp.clip(k, 0, 9).astype(jnp.int32)], series
    )


def _hat(n, q):
    """BTRS's hat constants (sd, a, b) for counts n and success probabilities q ≤ ½."""
    sd = jnp.sqrt(n * q * (1 - q))
    b = 1.15 + 2.53 * sd
    return sd, -0.0873 + 0.0248 * b + 0.01 * q, b


def _candidate(n, q, u, v):
    """BTRS's candidate k from uniforms (u, v), ``us`` and whether the squeeze accepts it."""
    _, a, b = _hat(n, q)
    u = u - 0.5
    us = 0.5 - jnp.abs(u)
    k = jnp.floor((2 * a / us + b) * u + n * q + 0.5)
    return k, us, (us >= 0.07) & (v <= 0.92 - 4.2 / b)


def _full_test(n, q, k, us, v):
    """BTRS's exact acceptance test of candidate k (Hörmann 1993, step 3)."""
    sd, a, b = _hat(n, q)
    r = q / (1 - q)
    alpha = (2.83 + 5.1 / b) * sd
    m = jnp.floor((n + 1) * q)
    us2 = us * us
    log_v = jnp.log(v * alpha * us2 / (a + b * us2))
    bound = (
        (m + 0.5) * jnp.log((m + 1) / (r * (n - m + 1)))
        + (n + 1) * jnp.log((n - m + 1) / (n - k + 1))
        + (k + 0.5) * jnp.log(r * (n - k + 1) / (k + 1))
        + stirling_tail(m)
        + stirling_tail(n - m)
        - stirling_tail(k)
        - stirling_tail(n - k)
    )
    return (k >= 0) & (k <= n) & (log_v <= bound)


def _one_round(key, n, q):
    """One BTRS round on every element: (candidate, accepted)."""
    uv = jax.random.uniform(key, (2,) + n.shape, jnp.float64)
    k, us, quick = _candidate(n, q, uv[0], uv[1])
    return k, quick | _full_test(n, q, k, us, uv[1])


def _compact(flags, size: int):
    """Indices of the first ``size`` True entries of ``flags`` (1-D), padded with len(flags):
    ``jnp.nonzero(flags, size=size, fill_value=len)``, with the prefix sum as an associative
    scan (faster than ``jnp.cumsum`` on CPU)."""
    n = flags.shape[0]
    position = jax.lax.associative_scan(jnp.add, flags.astype(jnp.int32)) - 1
    return (
        jnp.full(size, n, jnp.int32)
        .at[jnp.where(flags, position, size)]
        .set(jnp.arange(n, dtype=jnp.int32), mode="drop")
    )


def _until_accepted(key, n, q, k, ok):
    """Fresh BTRS rounds on every element not yet accepted, until all are."""

    def body(carry):
        i, k, ok = carry
        k_new, ok_new = _one_round(jax.random.fold_in(key, i), n, q)
        return i + 1, jnp.where(ok, k, k_new), ok | ok_new

    return jax.lax.while_loop(lambda c: jnp.any(~c[2]), body, (0, k, ok))[1:]


def _later_rounds(key, n, q, k, ok, shares, level: int = 0):
    """The rejected elements' further rounds: gathered into a buffer of ``shares[0]`` × len,
    one round there, recursively, then rounds until every one is accepted. An element that
    does not fit the buffer keeps its rejected candidate and is drawn again by the caller."""
    size = n.shape[0]
    if not shares or size < SMALLEST_BUFFER:
        return _until_accepted(jax.random.fold_in(key, level), n, q, k, ok)
    index = _compact(~ok, int(math.ceil(shares[0] * size)) + 4)
    padding = index >= size
    n_b, q_b = (jnp.take(x, index, mode="clip") for x in (n, q))
    k_b, ok_b = _one_round(jax.random.fold_in(key, level), n_b, q_b)
    k_b, ok_b = _later_rounds(key, n_b, q_b, k_b, ok_b | padding, shares[1:], level + 1)
    return k.at[index].set(k_b, mode="drop"), ok.at[index].set(ok_b, mode="drop")


def compacted_btrs(key, n, q, first=FIRST_BUFFER, later=LATER_BUFFERS):
    """Exact Binomial(n, q) by BTRS, q ≤ ½ and n·q ≥ 10 (float arrays of one shape): the
    squeeze on every element; the full test on the others' same candidate, gathered into a
    buffer of ``first`` × the elements; then fresh rounds on the rejected ones only, in buffers
    of ``later`` shares. Every candidate the squeeze leaves is judged by the full test on its
    own uniforms before a new one is drawn, also when it did not fit the buffer (re-drawing it
    instead biased a first version: χ² p = 3·10⁻⁸ at n = 25, q = 0.41, 400 000 draws)."""
    shape, n, q = n.shape, n.reshape(-1), q.reshape(-1)
    size = n.shape[0]
    k_first, k_later, k_last = jax.random.split(key, 3)
    uv = jax.random.uniform(k_first, (2, size), jnp.float64)
    k, us, ok = _candidate(n, q, uv[0], uv[1])
    index = _compact(~ok, int(math.ceil(first * size)) + 4)
    padding = index >= size
    gather = lambda x: jnp.take(x, index, mode="clip")  # noqa: E731
    n_b, q_b, k_b = gather(n), gather(q), gather(k)
    ok_b = _full_test(n_b, q_b, k_b, gather(us), gather(uv[1])) | padding
    k_b, ok_b = _later_rounds(k_later, n_b, q_b, k_b, ok_b, tuple(later))
    k, ok = k.at[index].set(k_b, mode="drop"), ok.at[index].set(ok_b, mode="drop")
    judged = ok | jnp.zeros(size, bool).at[index].set(True, mode="drop")

    def judge_rest(carry):  # overflow of the first buffer only (0 rounds otherwise)
        ok, judged = carry
        return ok | (~judged & _full_test(n, q, k, us, uv[1])), jnp.ones_like(judged)

    ok, _ = jax.lax.while_loop(lambda c: jnp.any(~c[1]), judge_rest, (ok, judged))
    return _until_accepted(k_last, n, q, k, ok)[0].reshape(shape)


def inversion(key, n, q):
    """Exact Binomial(n, q) by sequential search of the cdf from 0 (one uniform per element),
    for small n·q; elements with n = 0 give 0 at no cost."""
    u = jax.random.uniform(key, n.shape, jnp.float64)
    ratio = q / (1 - q)
    first = jnp.exp(n * jnp.log1p(-q))

    def active(k, pk, cdf):
        return (u > cdf) & (k < n) & (pk > 0)

    def body(carry):
        k, pk, cdf = carry
        go = active(k, pk, cdf)
        pk_next = pk * (n - k) / (k + 1) * ratio
        return (
            jnp.where(go, k + 1, k),
            jnp.where(go, pk_next, pk),
            jnp.where(go, cdf + pk_next, cdf),
        )

    return jax.lax.while_loop(
        lambda c: jnp.any(active(*c)), body, (jnp.zeros_like(n), first, first)
    )[0]


def compacted_binomial(key, n, p, first=FIRST_BUFFER, later=LATER_BUFFERS):
    """Exact Binomial(n, p) (float arrays, broadcast): inversion where n·min(p, 1 − p) < 10,
    :func:`compacted_btrs` (buffers ``first``, ``later``) elsewhere, reflected for p > ½."""
    n, p = jnp.broadcast_arrays(jnp.asarray(n, jnp.float64), jnp.asarray(p, jnp.float64))
    q = jnp.minimum(p, 1 - p)
    small = n * q < INVERSION_BELOW
    key_inversion, key_btrs = jax.random.split(key)
    x = jnp.where(
        small,
        inversion(key_inversion, jnp.where(small, n, 0.0), q),
        compacted_btrs(key_btrs, jnp.where(small, 1e4, n), jnp.where(small, 0.5, q), first, later),
    )
    return jnp.where(p > 0.5, n - x, x)


SAMPLERS = {
    "jax.random.binomial": jax.random.binomial,
    "compacted BTRS (prototype)": compacted_binomial,
}


# ----------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class Config:
    lanes: int = 200  # T: lanes vmapped in one call (the engine's CPU micro-batch for xu)
    m: int = 30  # T: items, so m(m − 1)/2 pairs a lane
    repeats: int = 10  # T: best of
    draws: int = 2_000_000  # G: draws per (n, p)


FULL, QUICK = Config(), Config(lanes=40, repeats=3, draws=200_000)


def regimes(lanes: int, m: int, seed: int = 0) -> dict:
    """(counts, probabilities), each (lanes, m(m − 1)/2): section P's raw wins (L = 400,
    p ~ Unif(0.2, 0.8)), the RR release's kept answers (n₁ ~ Bin(400, ½), 1 − q at ε = 1) and
    flipped ones at ε = 3 (q = 0.047, n·q ≈ 9.5: inversion and BTRS mixed), and p ~ Unif(0, 1)."""
    rng = np.random.default_rng(seed)
    shape = (lanes, m * (m - 1) // 2)
    ones = rng.binomial(400, 0.5, shape).astype(float)
    return {
        "raw wins (L = 400, p ∈ (0.2, 0.8))": (np.full(shape, 400.0), rng.uniform(0.2, 0.8, shape)),
        "RR kept (n₁, 1 − q, ε = 1)": (ones, np.full(shape, 1 - 1 / (1 + math.e))),
        "RR flipped (n₁, q, ε = 3)": (ones, np.full(shape, 1 / (1 + math.e**3))),
        "L = 400, p ∈ (0, 1)": (np.full(shape, 400.0), rng.uniform(0.0, 1.0, shape)),
    }


def per_lane(sampler):
    """The sampler jitted and vmapped over lanes, a key per lane (as the engine draws)."""
    return jax.jit(jax.vmap(sampler))


def compile_seconds(sampler, n, p) -> float:
    """Seconds to compile the sampler vmapped over lanes, at XLA's default level."""
    lowered = per_lane(sampler).lower(jax.random.split(jax.random.key(0), n.shape[0]), n, p)
    start = time.perf_counter()
    lowered.compile()
    return time.perf_counter() - start


def ns_per_draw(samplers, n: np.ndarray, p: np.ndarray, repeats: int, seed: int = 2) -> dict:
    """ns per draw of each JAX sampler of ``samplers`` ({label: (key, n, p) → draws}) on the
    (lanes, draws per lane) arrays ``n``, ``p``: jitted and vmapped over the lanes, a key per
    lane (:func:`per_lane`), compile excluded; and of NumPy's ``Generator.binomial`` in one
    call on the same arrays. Best of ``repeats``. Returns {label: ns}."""
    n_j, p_j = jnp.asarray(n), jnp.asarray(p)
    keys = jax.random.split(jax.random.key(seed), n.shape[0])
    out = {}
    for label, sampler in samplers.items():
        fn = per_lane(sampler)
        jax.block_until_ready(fn(keys, n_j, p_j))
        out[label] = 1e9 * harness.best_of(lambda: fn(keys, n_j, p_j), repeats=repeats) / n.size
    rng, counts = np.random.default_rng(seed), n.astype(np.int64)
    out["NumPy Generator.binomial"] = (
        1e9 * harness.best_of(lambda: rng.binomial(counts, p), repeats=repeats) / n.size
    )
    return out


def section_t(bench: harness.Bench) -> dict:
    cfg = bench.cfg
    cases = regimes(cfg.lanes, cfg.m)
    rows = [
        {
            "regime": name,
            "draws": int(n.size),
            "ns_per_draw": ns_per_draw(SAMPLERS, n, p, cfg.repeats),
        }
        for name, (n, p) in cases.items()
    ]
    n, p = next(iter(cases.values()))
    compile_s = {
        label: compile_seconds(sampler, jnp.asarray(n), jnp.asarray(p))
        for label, sampler in SAMPLERS.items()
    }
    labels = [*SAMPLERS, "NumPy Generator.binomial"]
    harness.print_table(
        harness.format_table(
            f"ns per draw, {cfg.lanes} lanes of {cfg.m * (cfg.m - 1) // 2} pairs vmapped in one jitted call, a key per lane (best of "
            f"{cfg.repeats}); NumPy one call on the same array",
            ("regime", *labels),
            [[r["regime"], *(r["ns_per_draw"][label] for label in labels)] for r in rows],
            (None, *["{:.1f}"] * len(labels)),
        )
    )
    harness.print_table(
        harness.format_table(
            "seconds to compile one sampler call (vmapped over the lanes, XLA's default level)",
            ("sampler", "compile s"),
            [[label, s] for label, s in compile_s.items()],
            (None, "{:.2f}"),
        )
    )
    return {"rows": rows, "compile_s": compile_s}


GOF_CASES = (
    (400, 0.5),
    (400, 0.2),
    (200, 1 - 1 / (1 + math.e)),
    (25, 0.41),
    (40, 0.26),
    (11, 0.95),
    (1000, 0.011),
    (100_000, 0.3),
    (7, 0.5),
    (3000, 0.999),
)


def chi_square_pvalue(draws: np.ndarray, n: int, p: float) -> float:
    """χ² goodness of fit of integer draws to SciPy's Binomial(n, p) pmf, cells with expected
    count < 5 pooled into one."""
    pmf = stats.binom.pmf(np.arange(n + 1), n, p)
    observed = np.bincount(draws.astype(np.int64), minlength=n + 1)[: n + 1]
    expected = pmf * draws.size
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] < 5:  # pool a small remainder into the last cell
        obs, exp = np.append(obs[:-2], obs[-2:].sum()), np.append(exp[:-2], exp[-2:].sum())
    return float(stats.chi2.sf(((obs - exp) ** 2 / exp).sum(), obs.size - 1))


def goodness_of_fit(sampler, draws: int, cases=GOF_CASES, seed: int = 0) -> list[dict]:
    """For each (n, p): ``draws`` draws (key ``seed`` + case index), the χ² p-value against
    SciPy's pmf and the variance's z-score (var/np(1 − p) − 1)/√(2/draws)."""
    fn = jax.jit(sampler)
    out = []
    for i, (n, p) in enumerate(cases):
        x = np.asarray(fn(jax.random.key(seed + i), jnp.full(draws, float(n)), jnp.full(draws, p)))
        out.append(
            {
                "n": n,
                "p": p,
                "chi2_p": chi_square_pvalue(x, n, p),
                "var_z": float((x.var() / (n * p * (1 - p)) - 1) / math.sqrt(2 / draws)),
            }
        )
    return out


def section_g(bench: harness.Bench) -> dict:
    results = {
        label: goodness_of_fit(sampler, bench.cfg.draws) for label, sampler in SAMPLERS.items()
    }
    labels = list(results)
    harness.print_table(
        harness.format_table(
            f"χ² goodness of fit against SciPy's pmf, {bench.cfg.draws} draws per (n, p): p-value (variance z-score)",
            ("n", "p", *labels),
            [
                [
                    c["n"],
                    c["p"],
                    *(
                        f"{results[label][i]['chi2_p']:.3f} ({results[label][i]['var_z']:+.1f})"
                        for label in labels
                    ),
                ]
                for i, c in enumerate(results[labels[0]])
            ],
            ("{}", "{:.3f}", *[None] * len(labels)),
        )
    )
    return {"draws": bench.cfg.draws, "cases": results}


def inverse_cdf_draw(bits, cdf, row, size):
    """Outcomes by binary search of a word's top 53 bits as a uniform u in the rows ``row`` of
    ``cdf`` ([R, K], cumulative, last column 1): the first k < size with u < cdf[row, k]."""
    u = (bits >> 11).astype(jnp.float64) * 2.0**-53
    steps = int(math.ceil(math.log2(cdf.shape[-1]))) + 1
    lo, hi = jnp.zeros_like(row), jnp.broadcast_to(jnp.asarray(size, row.dtype) - 1, row.shape)

    def step(_, bounds):
        lo, hi = bounds
        mid = (lo + hi) // 2
        right = u >= cdf[row, mid]
        return jnp.where(right, mid + 1, lo), jnp.where(right, hi, mid)

    return jax.lax.fori_loop(0, steps, step, (lo, hi))[0]


def section_a(bench: harness.Bench) -> dict:
    from dpsim.samplers import alias_draw, binomial_pmf, binomial_table

    cfg = bench.cfg
    users, gap = 400, 0.1
    laws = 1 / (1 + np.exp(-gap * np.arange(1, cfg.m)))
    start = time.perf_counter()
    table = binomial_table(users, laws)
    build_s = time.perf_counter() - start
    cdf = np.cumsum(np.stack([binomial_pmf(users, float(p)) for p in laws]), axis=1)
    cdf[:, -1] = 1.0
    rng = np.random.default_rng(3)
    pairs = cfg.m * (cfg.m - 1) // 2
    row = jnp.asarray(rng.integers(0, cfg.m - 1, (cfg.lanes, pairs)), jnp.int32)
    keys = jax.random.split(jax.random.key(4), cfg.lanes)
    threshold, alias, cdf_j = (
        jnp.asarray(table.threshold),
        jnp.asarray(table.alias),
        jnp.asarray(cdf),
    )
    p_pair = jnp.asarray(laws)[row]

    def words(key):
        return jax.random.bits(key, (pairs,), jnp.uint64)

    samplers = {
        "alias table": jax.jit(
            jax.vmap(lambda k, r: alias_draw(words(k), threshold, alias, r, users + 1))
        ),
        "inverse CDF (binary search)": jax.jit(
            jax.vmap(lambda k, r: inverse_cdf_draw(words(k), cdf_j, r, users + 1))
        ),
        "jax.random.binomial": jax.jit(
            jax.vmap(
                lambda k, r: jax.random.binomial(
                    k, jnp.full((pairs,), float(users)), jnp.asarray(laws)[r]
                )
            )
        ),
    }
    out = {}
    for label, fn in samplers.items():
        jax.block_until_ready(fn(keys, row))
        out[label] = 1e9 * harness.best_of(lambda: fn(keys, row), repeats=cfg.repeats) / row.size
    gen, p_np = np.random.default_rng(5), np.asarray(p_pair)
    out["NumPy Generator.binomial"] = (
        1e9 * harness.best_of(lambda: gen.binomial(users, p_np), repeats=cfg.repeats) / row.size
    )
    harness.print_table(
        harness.format_table(
            f"ns per draw, Binomial({users}, σ({gap:g}k)), k = 1 … {cfg.m - 1} (a random law per pair), {cfg.lanes} lanes "
            f"of {pairs} pairs vmapped in one jitted call (best of {cfg.repeats}); tables of one cell built in "
            f"{1e3 * build_s:.1f} ms ({table.nbytes / 1024:.0f} KiB)",
            ("sampler", "ns per draw"),
            [[label, ns] for label, ns in out.items()],
            (None, "{:.1f}"),
        )
    )
    return {
        "ns_per_draw": out,
        "build_ms": 1e3 * build_s,
        "table_bytes": table.nbytes,
        "n": users,
        "laws": cfg.m - 1,
    }


SECTIONS = (
    harness.Section("T", "ns per draw and compile time of exact binomial samplers", section_t),
    harness.Section("G", "goodness of fit against SciPy's pmf", section_g),
    harness.Section(
        "A", "table samplers for laws known on the host (alias, inverse CDF)", section_a
    ),
)


def main(argv=None) -> dict:
    return harness.main(
        PAPER, SECTIONS, full=FULL, quick=QUICK, argv=argv, description=__doc__.splitlines()[0]
    )


if __name__ == "__main__":
    main()
