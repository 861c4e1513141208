"""Private Rasch spectral estimators: the discrete-Gaussian chain (dense or sparsified), the
discrete-Laplace chain, and randomized response followed by the non-private spectral
estimator (nguyen §4, Algorithm 2, supp. §3–4).

Each is a pure function of (key, data, privacy parameters), jit- and vmap-compatible; the
privacy parameters that need a bisection (ρ under the CKS conversion, ε_RR of the shuffle
bound) are derived on the host by the caller:

- Gaussian: ``rho = dpsim.mechanisms.zcdp.zcdp_rho(eps, delta, conversion)``;
- RR: ``eps_rr = dpsim.mechanisms.shuffle.shuffle_rr_epsilon(eps, delta, n_users)``;
- Laplace: ε itself (pure DP; δ unused).

Faithful options (the authors' code) against defaults (the privacy claim holds): see
:mod:`dpsim.mechanisms.count_noise` (accounting, clip, noise) and
:mod:`dpsim.mechanisms.sparsify` (connectivity).

Validation: concrete inputs are checked and a bad one raises ``ValueError`` naming the value
(dpsim.validate); traced values (inside jit/vmap) pass unchecked.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsim.estimators.fit import Fit
from dpsim.estimators.spectral import differential_counts, spectral_estimate
from dpsim.mechanisms.count_noise import (
    ACCOUNTING_MODES,
    CLIP_MODES,
    MECHANISMS,
    NOISE_MODES,
    count_noise,
    gaussian_count_sigma,
    laplace_count_scale,
    noise_mean_square,
    noised_counts,
    queried_pairs,
)
from dpsim.mechanisms.discrete import DEFAULT_MAX_ROUNDS
from dpsim.mechanisms.shuffle import randomize_responses
from dpsim.mechanisms.sparsify import DEFAULT_MAX_TRIES, dense_item_graph, sparsification_graph
from dpsim.validate import require_choice, require_eps

__all__ = ["private_spectral_estimate", "rr_spectral_estimate"]


def private_spectral_estimate(key, Y, *, mechanism: str = "gaussian", rho=None, eps=None,
                              p0=None, connect: bool = True, max_tries: int = DEFAULT_MAX_TRIES,
                              accounting: str = "tight_joint", clip: str = "one",
                              noise: str = "all", lam=1.0, solver: str = "solve",
                              max_rounds: int = DEFAULT_MAX_ROUNDS) -> Fit:
    """The private spectral estimator (nguyen Algorithm 2 with Eq. (4), Lemma 4.1; docs/nguyen.md, Mechanisms and estimators):
    noise every queried differential count, clip, regularise, and run Algorithm 1.

    Args:
        key: PRNG key (split into the graph's and the noise's).
        Y: (n_items, n_items) exact differential counts (:func:`differential_counts`).
        mechanism: ``"gaussian"`` (discrete Gaussian, ρ-zCDP; needs ``rho``) or
            ``"laplace"`` (discrete Laplace, ε-DP; needs ``eps``).
        rho: ρ > 0 of the whole release (traceable; host: ``zcdp_rho(eps, delta, conversion)``).
        eps: ε > 0 of the whole release for ``"laplace"`` (traceable).
        p0: None (default) for the dense chain (every ordered pair queried), or the
            sparsification edge probability p₀ ∈ (0, 1] (traceable; host:
            ``sparsification_p0``), Algorithm 2's ER(p₀) item graph.
        connect, max_tries: redraw the sparse graph until connected (default) or not (the
            code); static.
        accounting: ``"tight_joint"`` (default), ``"paper"`` or ``"synthetic_code"``
            (:mod:`dpsim.mechanisms.count_noise`).
        clip: ``"one"`` (default, max(1, ·), A15) or ``"zero"``.
        noise: ``"all"`` (default) or ``"nonzero"`` (the code, docs/nguyen.md, Errata and modes (Q2)).
        lam, solver: as :func:`spectral_estimate` (λ = 1; ``"power_lazy"`` is the private
            code's power iteration).
        max_rounds: the discrete Gaussian sampler's cap.
    Returns:
        :class:`Fit`: theta β̂ (n_items,) centred; converged/iterations from the power modes;
        info: ``connected`` (chain irreducible), ``noise_scale`` (σ or t),
        ``sampler_failures``, ``noise_mean_square`` (of the noise drawn, every ordered pair:
        :func:`~dpsim.mechanisms.count_noise.noise_mean_square`), ``queried_pairs``, and for the sparse chain
        ``graph_connected`` and ``graph_rejections``.
    """
    require_choice("mechanism", mechanism, MECHANISMS)
    require_choice("accounting", accounting, ACCOUNTING_MODES)
    require_choice("clip", clip, CLIP_MODES)
    require_choice("noise", noise, NOISE_MODES)
    if mechanism == "gaussian" and rho is None:
        raise ValueError("mechanism='gaussian' needs rho (host: zcdp_rho(eps, delta, conversion))")
    if mechanism == "laplace" and eps is None:
        raise ValueError("mechanism='laplace' needs eps")
    Y = jnp.asarray(Y, jnp.float64)
    n = Y.shape[0]
    if n < 2:
        raise ValueError(f"n_items={n} must be at least 2")
    k_graph, k_noise = jax.random.split(key)
    info = {}
    if p0 is None:
        graph = dense_item_graph(n)
    else:
        draw = sparsification_graph(k_graph, n, p0, connect, max_tries)
        graph = draw.graph
        info.update(graph_connected=draw.connected, graph_rejections=draw.rejections)
    if mechanism == "gaussian":
        scale = gaussian_count_sigma(rho, graph, accounting)
    else:
        scale = laplace_count_scale(eps, graph, accounting)
    z, failed = count_noise(k_noise, n, scale, mechanism, max_rounds)
    noisy, failures = noised_counts(Y, z, failed, graph, clip, noise)
    fit = spectral_estimate(noisy, lam, solver)
    info.update(noise_scale=scale, sampler_failures=failures, noise_mean_square=noise_mean_square(z),
                queried_pairs=queried_pairs(graph))
    return fit._replace(info={**fit.info, **info})


def rr_spectral_estimate(key, x, observed, eps_rr, *, lam=1.0, solver: str = "solve") -> Fit:
    """The randomized-response baseline (nguyen supp. §4): per-response RR at
    ε_RR/k_l, then the non-private spectral estimator on the flipped data, without
    debiasing (as the paper; the flipped data are not Rasch, so β̂ is attenuated towards 0
    and its error has a floor in n, nguyen supp. §4; docs/nguyen.md, Predictions (R10)).

    Args:
        key: PRNG key.
        x, observed: (n_users, n_items) bool responses and mask.
        eps_rr: ε_RR > 0 (traceable; host: ``shuffle_rr_epsilon(eps, delta, n_users)``,
            which includes the shuffle amplification and the max with ε*).
        lam, solver: as :func:`spectral_estimate` (the authors used ``"power_jump"``).
    Returns:
        :class:`Fit` (theta β̂ (n_items,) centred; info ``connected``).
    """
    require_eps(eps_rr, "eps_rr")
    released = randomize_responses(key, x, observed, eps_rr)
    return spectral_estimate(differential_counts(released, observed), lam, solver)
