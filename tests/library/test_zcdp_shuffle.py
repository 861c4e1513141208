"""zCDP ↔ (ε, δ) conversions (nguyen §4.1, docs/nguyen.md, Errata and modes (Q4)) against dp-accounting and the closed
forms; the shuffle-amplified RR budget (supp. Lemma 4.1, nguyen supp. §4) against reference
values; per-user randomized response on a response matrix."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant

import dpsim  # noqa: F401
from dpsim.mechanisms.shuffle import (
    per_response_epsilon,
    randomize_responses,
    shuffle_epsilon,
    shuffle_ldp_cap,
    shuffle_rr_epsilon,
)
from dpsim.mechanisms.zcdp import (
    dp_to_zcdp_bun_steinke,
    dp_to_zcdp_cks,
    dp_to_zcdp_paper,
    paper_epsilon0,
    zcdp_delta_cks,
    zcdp_rho,
    zcdp_to_dp,
    zcdp_to_dp_bun_steinke,
    zcdp_to_dp_cks,
)

EPS_GRID = [0.01, 0.05, 0.075, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 5.0, 7.5]


def test_paper_epsilon0_and_rho_table():
    """δ = 1e-4: ε₀ = ε*/4.2919 and ρ = ε₀²/2 (docs/nguyen.md, Mechanisms and estimators)."""
    eps0 = [
        0.00233,
        0.01165,
        0.01748,
        0.0233,
        0.0466,
        0.0932,
        0.1398,
        0.1864,
        0.2330,
        0.4660,
        1.165,
        1.747,
    ]
    rho = [
        2.7e-6,
        6.8e-5,
        1.5e-4,
        2.7e-4,
        0.00109,
        0.00434,
        0.00977,
        0.0174,
        0.0271,
        0.1086,
        0.6786,
        1.527,
    ]
    for e, want0, want_rho in zip(EPS_GRID, eps0, rho):
        assert float(paper_epsilon0(e, 1e-4)) == pytest.approx(want0, rel=3e-3)
        assert float(dp_to_zcdp_paper(e, 1e-4)) == pytest.approx(want_rho, rel=2e-2)


@pytest.mark.parametrize(
    "eps, delta", [(0.01, 1e-4), (1.0, 1e-4), (7.5, 1e-4), (2.0, 1e-8), (0.3, 0.1)]
)
def test_bun_steinke_closed_form_round_trip(eps, delta):
    rho = float(dp_to_zcdp_bun_steinke(eps, delta))
    L = math.log(1 / delta)
    assert rho == pytest.approx((math.sqrt(L + eps) - math.sqrt(L)) ** 2, rel=1e-12)
    assert float(zcdp_to_dp_bun_steinke(rho, delta)) == pytest.approx(eps, rel=1e-12)
    assert rho + 2 * math.sqrt(rho * L) == pytest.approx(eps, rel=1e-12)


def test_spec_numbers_at_eps_one():
    """docs/nguyen.md, Errata and modes (Q4) at ε* = 1, δ = 1e-4: ρ = 0.0271 (paper), 0.0258 (Bun–Steinke), 0.0406 (CKS,
    ≈ 22% less σ than the paper's); the paper's ρ certifies only ε* + ρ = 1.027."""
    assert float(zcdp_rho(1.0, 1e-4, "paper")) == pytest.approx(0.0271, abs=5e-5)
    assert float(zcdp_rho(1.0, 1e-4, "bun_steinke")) == pytest.approx(0.0258, abs=5e-5)
    rho_cks = zcdp_rho(1.0, 1e-4, "cks")
    assert rho_cks == pytest.approx(0.0406, abs=5e-5)
    assert 1 - math.sqrt(float(zcdp_rho(1.0, 1e-4, "paper")) / rho_cks) == pytest.approx(
        0.18, abs=0.01
    )
    assert float(zcdp_to_dp_bun_steinke(dp_to_zcdp_paper(1.0, 1e-4), 1e-4)) == pytest.approx(
        1.0271, abs=1e-4
    )


@pytest.mark.parametrize("rho", [1e-5, 1e-3, 0.0406, 0.5, 5.0])
@pytest.mark.parametrize("delta", [1e-4, 1e-7])
def test_cks_conversion_matches_dp_accounting(rho, delta):
    """dp-accounting's RDP accountant (the CKS20 / Asoodeh et al. bound, minimised over a
    grid of orders) on a ZCDpEvent(ρ): our continuous minimum is never above the grid's
    and agrees with a dense grid (steps ≤ 0.125) to 1e-5 relative."""
    orders = np.concatenate([np.linspace(1.011, 10, 4000), np.linspace(10, 5000, 40000)])
    acc = RdpAccountant(orders=list(orders))
    acc.compose(dp_accounting.ZCDpEvent(rho))
    theirs = acc.get_epsilon(delta)
    ours = zcdp_to_dp_cks(rho, delta)
    assert ours <= theirs * (1 + 1e-12)
    assert ours == pytest.approx(theirs, rel=1e-5)
    # δ(ε) is the inverse: δ at our ε is δ, and dp-accounting's δ at that ε agrees
    assert zcdp_delta_cks(rho, ours) == pytest.approx(delta, rel=1e-8)
    assert acc.get_delta(ours) == pytest.approx(delta, rel=1e-4)
    # tighter than Bun–Steinke
    assert ours < float(zcdp_to_dp_bun_steinke(rho, delta))


@pytest.mark.parametrize("eps", EPS_GRID)
def test_cks_inverse_round_trip(eps):
    rho = dp_to_zcdp_cks(eps, 1e-4)
    assert zcdp_to_dp_cks(rho, 1e-4) == pytest.approx(eps, rel=1e-10)
    assert rho > float(dp_to_zcdp_bun_steinke(eps, 1e-4))  # less noise than BS
    assert float(zcdp_to_dp(rho, 1e-4, "cks")) == pytest.approx(eps, rel=1e-10)


def test_closed_forms_trace_and_cks_refuses_tracers():
    f = jax.jit(jax.vmap(lambda e: zcdp_rho(e, 1e-4, "bun_steinke")))
    np.testing.assert_allclose(
        f(jnp.asarray([0.5, 1.0])),
        [float(dp_to_zcdp_bun_steinke(0.5, 1e-4)), float(dp_to_zcdp_bun_steinke(1.0, 1e-4))],
        rtol=1e-14,
    )
    with pytest.raises(ValueError, match="host"):
        jax.jit(lambda e: zcdp_rho(e, 1e-4, "cks"))(1.0)
    np.testing.assert_allclose(
        dp_to_zcdp_cks(np.array([1.0, 2.0]), 1e-4),
        [dp_to_zcdp_cks(1.0, 1e-4), dp_to_zcdp_cks(2.0, 1e-4)],
        rtol=1e-14,
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: zcdp_rho(0.0, 1e-4), "eps=0.0"),
        (lambda: zcdp_rho(-1.0, 1e-4, "paper"), "eps=-1.0"),
        (lambda: zcdp_rho(1.0, 0.0, "bun_steinke"), "delta=0.0"),
        (lambda: zcdp_rho(1.0, 1.0), "delta=1.0"),
        (lambda: zcdp_rho(1.0, 1e-4, "exact"), "conversion='exact'"),
        (lambda: zcdp_to_dp_cks(-0.1, 1e-4), "rho=-0.1"),
        (lambda: shuffle_rr_epsilon(0.0, 1e-4, 100), "eps=0.0"),
        (lambda: shuffle_rr_epsilon(1.0, 2.0, 100), "delta=2.0"),
        (lambda: shuffle_rr_epsilon(1.0, 1e-4, 0), "n_users=0"),
    ],
)
def test_bad_input_names_the_value(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# (n, ε_RR for EPS_GRID) from the authors' bisection (nguyen supp. §4; docs/nguyen.md, Mechanisms and
# estimators), δ = 1e-4, rounded to the digits kept here.
RR_TABLE = {
    100: [0.01, 0.05, 0.075, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 5, 7.5],
    131: EPS_GRID,
    200: [0.0106, 0.0531, 0.0795, 0.106, 0.212, 0.4, 0.6, 0.8, 1, 2, 5, 7.5],
    400: [0.0151, 0.0747, 0.1115, 0.1479, 0.2909, 0.5714, 0.8535, 0.926, 1, 2, 5, 7.5],
    610: [0.0187, 0.0918, 0.1364, 0.1803, 0.3508, 0.6781, 1.002, 1.333, 1.348, 2, 5, 7.5],
    649: [0.0192, 0.0946, 0.1405, 0.1856, 0.3604, 0.6951, 1.0255, 1.3628, 1.41, 2, 5, 7.5],
    800: [0.0214, 0.1046, 0.1551, 0.2045, 0.3947, 0.7549, 1.1081, 1.4668, 1.6191, 2, 5, 7.5],
    1000: [0.0239, 0.1164, 0.1722, 0.2266, 0.4343, 0.8235, 1.2021, 1.5846, 1.8423, 2, 5, 7.5],
    1500: [0.0292, 0.1411, 0.2077, 0.2722, 0.515, 0.961, 1.3891, 1.8173, 2.2477, 2.2477, 5, 7.5],
    2000: [0.0337, 0.1616, 0.2369, 0.3094, 0.5796, 1.0696, 1.5355, 1.9974, 2.4602, 2.5354, 5, 7.5],
}


@pytest.mark.parametrize("n", sorted(RR_TABLE))
def test_shuffle_rr_epsilon_reproduces_the_spec_table(n):
    for eps, want in zip(EPS_GRID, RR_TABLE[n]):
        digits = len(repr(float(want)).split(".")[1])
        assert shuffle_rr_epsilon(eps, 1e-4, n) == pytest.approx(
            want, abs=0.51 * 10**-digits + 1e-12
        )


def test_shuffle_bound_inversion_and_cap():
    """Below the cap, ε(ε_RR) = ε* to the bisection tolerance; the cap is log(n/(16 log(2/δ)))
    (1.842 at n = 1000); the bound includes the +8e^{ε₀}/n term."""
    n, delta = 1000, 1e-4
    e_rr = shuffle_rr_epsilon(0.4, delta, n)
    assert float(shuffle_epsilon(e_rr, delta, n)) == pytest.approx(0.4, abs=1e-7)
    assert shuffle_ldp_cap(delta, n) == pytest.approx(
        math.log(1000 / (16 * math.log(2e4))), rel=1e-14
    )
    assert shuffle_rr_epsilon(1.0, delta, n) == pytest.approx(shuffle_ldp_cap(delta, n), abs=1e-7)
    e0 = 0.5
    printed = math.log1p(
        (math.exp(e0) - 1)
        / (math.exp(e0) + 1)
        * 8
        * math.sqrt(math.exp(e0) * math.log(4 / delta))
        / math.sqrt(n)
    )
    with_term = math.log1p(
        (math.exp(e0) - 1)
        / (math.exp(e0) + 1)
        * (8 * math.sqrt(math.exp(e0) * math.log(4 / delta)) / math.sqrt(n) + 8 * math.exp(e0) / n)
    )
    assert float(shuffle_epsilon(e0, delta, n)) == pytest.approx(with_term, rel=1e-14)
    assert with_term > printed


def test_randomize_responses_flip_rates_per_user():
    """Users with k = 2 and k = 6 observed responses flip each at 1/(1 + e^{ε/k}) (5 SE);
    missing entries are untouched; ε′ = ∞ for a user with no responses."""
    n_users, m, eps = 20_000, 6, 1.5
    observed = np.ones((n_users, m), bool)
    observed[: n_users // 2, 2:] = False
    observed[-1] = False
    x = np.random.default_rng(0).uniform(size=(n_users, m)) < 0.5
    out = np.asarray(
        randomize_responses(jax.random.key(1), jnp.asarray(x), jnp.asarray(observed), eps)
    )
    flipped = out != x
    assert not flipped[~observed].any()
    for rows, k in ((slice(0, n_users // 2), 2), (slice(n_users // 2, n_users - 1), 6)):
        q = 1 / (1 + math.exp(eps / k))
        rate = flipped[rows][observed[rows]].mean()
        count = observed[rows].sum()
        assert abs(rate - q) <= 5 * math.sqrt(q * (1 - q) / count)
    per = np.asarray(per_response_epsilon(jnp.asarray(observed), eps))
    assert (
        per[0] == pytest.approx(eps / 2)
        and per[n_users // 2] == pytest.approx(eps / 6)
        and per[-1] == math.inf
    )
