"""Link functions F for ρ_ij = F(θ_i − θ_j) and their privacy constants.

cai §2.2.1 (assumptions A0–A2): Algorithm 1's privacy proof needs
sup F'/(F(1−F)) ≤ κ1 and sup (−log F)'' ≤ κ2. For the logistic link κ1 = 1, κ2 = 1/4.
The probit (Thurstone) link violates (A1): φ/(Φ(1−Φ)) grows like |x|, so κ1 = ∞ and
Algorithm 1 gives **no DP guarantee** for probit data (docs/cai.md, Errata and modes (E15)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import jax


@dataclass(frozen=True)
class Link:
    """A link F with its (A1)/(A2) constants; ``dp_guarantee`` is False when κ1 = ∞."""

    name: str
    cdf: Callable[[jax.Array], jax.Array]
    kappa1: float
    kappa2: float

    @property
    def dp_guarantee(self) -> bool:
        return math.isfinite(self.kappa1) and math.isfinite(self.kappa2)


LOGISTIC = Link("logistic", jax.nn.sigmoid, kappa1=1.0, kappa2=0.25)
# (−log Φ)'' is bounded by 1, but κ1 = ∞: no DP guarantee (cai §2.2.1; docs/cai.md, Errata and modes (E15)).
PROBIT = Link("probit", jax.scipy.stats.norm.cdf, kappa1=math.inf, kappa2=1.0)

_LINKS = {link.name: link for link in (LOGISTIC, PROBIT)}


def get_link(name: str) -> Link:
    """Look up a link by name; raises ValueError naming the bad value."""
    try:
        return _LINKS[name]
    except KeyError:
        raise ValueError(f"unknown link {name!r}; choose one of {sorted(_LINKS)}") from None
