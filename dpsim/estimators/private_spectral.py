"""Private Rasch spectral estimators: the spectral estimate of a release of noised differential
counts (the discrete-Gaussian chain, dense or sparsified, and the discrete-Laplace chain), and of
randomized responses (nguyen §4, Algorithm 2, supp. §3–4).

The releases are drawn in :mod:`dpsim.mechanisms`:
:func:`dpsim.mechanisms.count_noise.private_differential_counts` (accounting, graph, noise, clip;
the faithful options against the defaults there and in :mod:`dpsim.mechanisms.sparsify`) and
:func:`dpsim.mechanisms.shuffle.randomize_responses`. The privacy parameters that need a bisection
are derived on the host by the caller:

- Gaussian: ``rho = dpsim.mechanisms.zcdp.zcdp_rho(eps, delta, conversion)``;
- RR: ``eps_rr = dpsim.mechanisms.shuffle.shuffle_rr_epsilon(eps, delta, n_users)``;
- Laplace: ε itself (pure DP; δ unused).

Both estimators are pure functions of the release, jit- and vmap-compatible.
"""

from __future__ import annotations

from dpsim.estimators.fit import Fit
from dpsim.estimators.spectral import differential_counts, spectral_estimate
from dpsim.mechanisms.count_noise import PrivateCounts

__all__ = ["private_spectral_estimate", "rr_spectral_estimate"]


def private_spectral_estimate(release: PrivateCounts, *, lam=1.0, solver: str = "solve") -> Fit:
    """The private spectral estimator (nguyen Algorithm 2 with Eq. (4), Lemma 4.1; docs/nguyen.md,
    Mechanisms and estimators): Algorithm 1 on the noised, clipped counts of a release, regularised.

    Args:
        release: :class:`~dpsim.mechanisms.count_noise.PrivateCounts` of
            :func:`~dpsim.mechanisms.count_noise.private_differential_counts`.
        lam, solver: as :func:`spectral_estimate` (λ = 1; ``"power_lazy"`` is the private
            code's power iteration).
    Returns:
        :class:`Fit`: theta β̂ (n_items,) centred; converged/iterations from the power modes;
        info: ``connected`` (chain irreducible) and the release's info (``noise_scale``,
        ``sampler_failures``, ``noise_mean_square``, ``queried_pairs``, and for the sparse chain
        ``graph_connected`` and ``graph_rejections``).
    """
    fit = spectral_estimate(release.counts, lam, solver)
    return fit._replace(info={**fit.info, **release.info})


def rr_spectral_estimate(released, observed, *, lam=1.0, solver: str = "solve") -> Fit:
    """The randomized-response baseline (nguyen supp. §4): the non-private spectral estimator on
    the responses released by per-response RR at ε_RR/k_l
    (:func:`dpsim.mechanisms.shuffle.randomize_responses`), without debiasing (as the paper; the
    flipped data are not Rasch, so β̂ is attenuated towards 0 and its error has a floor in n,
    nguyen supp. §4; docs/nguyen.md, Predictions (R10)).

    Args:
        released, observed: (n_users, n_items) bool released responses and mask.
        lam, solver: as :func:`spectral_estimate` (the authors used ``"power_jump"``).
    Returns:
        :class:`Fit` (theta β̂ (n_items,) centred; info ``connected``).
    """
    return spectral_estimate(differential_counts(released, observed), lam, solver)
