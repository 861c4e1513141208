"""Zero-concentrated DP (ρ-zCDP, Bun & Steinke 2016) ↔ (ε, δ)-DP conversions (nguyen §4.1,
supp. Lemma 4.3; nguyen §4.1; docs/nguyen.md, Mechanisms and estimators; Errata and modes (Q4)).

Three conversions, named by ``conversion``:

- ``"paper"``: the paper's approximate inverse ρ = ε²/(4 ln(1/δ)), i.e. ε₀ = ε/√(2 ln(1/δ))
  and ρ = ε₀²/2 (the authors' ``find_effective_epsilon0_zgauss``). It drops ρ from
  ε = ρ + 2√(ρ ln(1/δ)), so the ε it actually certifies is ε + ρ (1.027 at ε = 1,
  δ = 1e-4): **the (ε, δ) claim does not hold** under Bun–Steinke's conversion. Under the
  tighter CKS conversion it holds for small ε only: at δ = 1e-4 CKS certifies 0.80 at
  ε = 1 and 1.74 at ε = 2, but 5.001 at ε = 5 and 8.16 at ε = 7.5 (the claim fails from
  ε ≈ 5). Figure-reproduction mode.
- ``"bun_steinke"``: the exact inverse of Bun–Steinke Prop. 1.3, ε = ρ + 2√(ρ ln(1/δ)):
  ρ = (√(L + ε) − √L)², L = ln(1/δ). Valid; closed form, so it may be traced.
- ``"cks"`` (default): the tight conversion of Canonne, Kamath & Steinke (2020, Cor. 13;
  ``cdp_eps``/``cdp_delta`` in their code; what dp-accounting's RDP accountant computes
  on a grid of orders): ε(ρ, δ) = inf_{α>1} αρ + log(1 − 1/α) − (log δ + log α)/(α − 1).
  Valid and about 18% less noise σ than the paper's at ε = 1, δ = 1e-4 (ρ = 0.0406
  against 0.0271: σ ∝ 1/√ρ, √(0.0271/0.0406) = 0.82). Needs a bisection, so it runs on the host (NumPy/Python floats).

Validation: ε > 0, ρ > 0 and δ ∈ (0, 1) are checked on concrete inputs (traced inputs of
the closed forms pass unchecked).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from dpsim.validate import concrete, require_eps, require_open_unit, require_positive

CONVERSIONS = ("paper", "bun_steinke", "cks")

__all__ = [
    "CONVERSIONS",
    "paper_epsilon0",
    "dp_to_zcdp_paper",
    "zcdp_to_dp_bun_steinke",
    "dp_to_zcdp_bun_steinke",
    "zcdp_to_dp_cks",
    "zcdp_delta_cks",
    "dp_to_zcdp_cks",
    "zcdp_rho",
    "zcdp_to_dp",
    "require_conversion",
]


def require_conversion(conversion: str) -> None:
    """ValueError naming ``conversion`` unless it is one of :data:`CONVERSIONS`."""
    if conversion not in CONVERSIONS:
        raise ValueError(
            f"conversion={conversion!r} is not a zCDP conversion; choose one of {CONVERSIONS}"
        )


def _log_inv_delta(delta):
    require_open_unit(delta, "delta")
    return -jnp.log(jnp.asarray(delta, jnp.float64))


def paper_epsilon0(eps, delta):
    """ε₀ = ε/√(2 ln(1/δ)) (nguyen §4.1, supp. §4 ``find_effective_epsilon0_zgauss``): the
    paper's per-mechanism "ε*" of Lemma 4.1, ½ε₀²-zCDP standing for (ε, δ)-DP.
    Args: eps: ε > 0; delta: δ ∈ (0, 1) (both traceable). Returns: float64 ε₀."""
    require_eps(eps)
    return jnp.asarray(eps, jnp.float64) / jnp.sqrt(2.0 * _log_inv_delta(delta))


def dp_to_zcdp_paper(eps, delta):
    """ρ = ε₀²/2 = ε²/(4 ln(1/δ)), the paper's approximate inverse (module docstring:
    certifies only ε + ρ under Bun–Steinke). Traceable."""
    return 0.5 * paper_epsilon0(eps, delta) ** 2


def zcdp_to_dp_bun_steinke(rho, delta):
    """ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016 Prop. 1.3; nguyen supp. Lemma 4.3).
    Args: rho: ρ ≥ 0; delta: δ ∈ (0, 1) (traceable). Returns: float64 ε."""
    require_positive(rho, "rho")
    rho = jnp.asarray(rho, jnp.float64)
    return rho + 2.0 * jnp.sqrt(rho * _log_inv_delta(delta))


def dp_to_zcdp_bun_steinke(eps, delta):
    """ρ = (√(L + ε) − √L)², L = ln(1/δ): the exact inverse of :func:`zcdp_to_dp_bun_steinke`
    (docs/nguyen.md, Errata and modes (Q4)). Written as ε²/(√(L + ε) + √L)² to avoid cancellation. Traceable."""
    require_eps(eps)
    eps = jnp.asarray(eps, jnp.float64)
    L = _log_inv_delta(delta)
    return (eps / (jnp.sqrt(L + eps) + jnp.sqrt(L))) ** 2


# ---------------------------------------------------------------------------------------
# CKS20 tight conversion (host).
# ---------------------------------------------------------------------------------------
def _bisect_increasing(f, lo: float, hi: float, iterations: int = 200) -> float:
    """The root of an increasing f on [lo, hi] (f(lo) ≤ 0 ≤ f(hi)) by bisection."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _cks_eps_at(alpha: float, rho: float, log_delta: float) -> float:
    return alpha * rho + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)


def _scalar_cks_eps(rho: float, delta: float) -> float:
    log_delta = math.log(delta)
    # d/dα of the bound is ρ + log(αδ)/(α − 1)²: its root solves g(α) = ρ(α − 1)² + log α +
    # log δ = 0, g increasing, g(1) = log δ < 0, g(1/δ) > 0. Bisect in u = log(α − 1).
    g = lambda u: rho * math.exp(2.0 * u) + math.log1p(math.exp(u)) + log_delta
    u = _bisect_increasing(g, -40.0, math.log(1.0 / delta))
    alpha = 1.0 + math.exp(u)
    return max(0.0, _cks_eps_at(alpha, rho, log_delta))


def _scalar_cks_delta(rho: float, eps: float) -> float:
    # log δ(α) = (α − 1)(αρ − ε) + α log(1 − 1/α) − log(α − 1); its α-derivative
    # (2α − 1)ρ − ε + log(1 − 1/α) is increasing in α (CKS20 reference code ``cdp_delta``).
    h = lambda u: (
        (2.0 * (1.0 + math.exp(u)) - 1.0) * rho - eps + math.log1p(-1.0 / (1.0 + math.exp(u)))
    )
    hi = math.log(max(2.0, (eps + 1.0) / (2.0 * rho) + 1.0))
    while h(hi) < 0:
        hi += 1.0
    alpha = 1.0 + math.exp(_bisect_increasing(h, -40.0, hi))
    log_delta = (
        (alpha - 1.0) * (alpha * rho - eps)
        + alpha * math.log1p(-1.0 / alpha)
        - math.log(alpha - 1.0)
    )
    return min(1.0, math.exp(log_delta))


def _host_scalars(name: str, value):
    array = concrete(value)
    if array is None:
        raise ValueError(
            f"{name} must be concrete (the CKS conversion runs on the host, "
            f"by bisection); derive it before tracing"
        )
    return array.astype(np.float64)


def zcdp_to_dp_cks(rho, delta):
    """ε(ρ, δ) = inf_{α>1} αρ + log(1 − 1/α) − (log δ + log α)/(α − 1), floored at 0: the
    tight ρ-zCDP → (ε, δ)-DP conversion (CKS20 Cor. 13; docs/nguyen.md, Errata and modes (Q4)). Host.

    Args: rho: ρ > 0; delta: δ ∈ (0, 1) (floats or arrays, concrete).
    Returns: float (or float64 array of the broadcast shape)."""
    require_positive(rho, "rho")
    require_open_unit(delta, "delta")
    r, d = np.broadcast_arrays(_host_scalars("rho", rho), _host_scalars("delta", delta))
    out = np.vectorize(_scalar_cks_eps, otypes=[np.float64])(r, d)
    return float(out) if out.ndim == 0 else out


def zcdp_delta_cks(rho, eps):
    """δ(ε) = inf_{α>1} e^{(α−1)(αρ−ε)}(1 − 1/α)^α/(α − 1) of a ρ-zCDP mechanism (CKS20
    Cor. 13; their ``cdp_delta``). Host. Args: rho > 0; eps ≥ 0. Returns: float in (0, 1]."""
    require_positive(rho, "rho")
    r, e = np.broadcast_arrays(_host_scalars("rho", rho), _host_scalars("eps", eps))
    out = np.vectorize(_scalar_cks_delta, otypes=[np.float64])(r, e)
    return float(out) if out.ndim == 0 else out


def dp_to_zcdp_cks(eps, delta):
    """The largest ρ with :func:`zcdp_to_dp_cks`(ρ, δ) ≤ ε (bisection on log ρ, relative
    precision ~1e-15; docs/nguyen.md, Errata and modes (Q4)). Host. Args: eps > 0; delta ∈ (0, 1).
    Returns: float (or array)."""
    require_eps(eps)
    require_open_unit(delta, "delta")
    e, d = np.broadcast_arrays(_host_scalars("eps", eps), _host_scalars("delta", delta))

    def one(eps_: float, delta_: float) -> float:
        if math.isinf(eps_):
            return math.inf
        lo = float(dp_to_zcdp_bun_steinke(eps_, delta_))  # BS is looser: ε_CKS(lo) ≤ ε
        hi = 2.0 * lo
        while _scalar_cks_eps(hi, delta_) < eps_:
            hi *= 2.0
        return math.exp(
            _bisect_increasing(
                lambda v: _scalar_cks_eps(math.exp(v), delta_) - eps_, math.log(lo), math.log(hi)
            )
        )

    out = np.vectorize(one, otypes=[np.float64])(e, d)
    return float(out) if out.ndim == 0 else out


def zcdp_rho(eps, delta, conversion: str = "cks"):
    """ρ such that ρ-zCDP gives (ε, δ)-DP under ``conversion`` (module docstring).

    Args:
        eps: target ε > 0; delta: δ ∈ (0, 1). Traceable for "paper" and "bun_steinke";
            concrete (host) for "cks".
        conversion: "paper", "bun_steinke" or "cks" (default, tight and valid).
    Returns:
        ρ (float64; a Python float for "cks" with scalar inputs).
    """
    require_conversion(conversion)
    if conversion == "paper":
        return dp_to_zcdp_paper(eps, delta)
    if conversion == "bun_steinke":
        return dp_to_zcdp_bun_steinke(eps, delta)
    return dp_to_zcdp_cks(eps, delta)


def zcdp_to_dp(rho, delta, conversion: str = "cks"):
    """ε certified for a ρ-zCDP mechanism at δ: Bun–Steinke (``"bun_steinke"``, traceable)
    or CKS (``"cks"``, host). ``"paper"`` (ρ = ε²/(4L) read backwards, ε = 2√(ρL)) is what
    the paper believes it certifies."""
    require_conversion(conversion)
    if conversion == "paper":
        require_positive(rho, "rho")
        return 2.0 * jnp.sqrt(jnp.asarray(rho, jnp.float64) * _log_inv_delta(delta))
    if conversion == "bun_steinke":
        return zcdp_to_dp_bun_steinke(rho, delta)
    return zcdp_to_dp_cks(rho, delta)
