"""dpsim.validate: concrete bad values raise ValueError naming the value; traced values pass."""

import math

import jax
import numpy as np
import pytest

from dpsim.validate import (
    require_counts_matrix,
    require_eps,
    require_int,
    require_open_unit,
    require_probability,
)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: require_eps(-1.0), "eps=-1.0 must be > 0"),
        (lambda: require_eps(np.array([1.0, 0.0])), "eps=0.0"),
        (lambda: require_eps(math.nan), "eps=nan"),
        (lambda: require_probability(1.5), "p=1.5"),
        (lambda: require_open_unit(1.0, "delta"), "delta=1.0"),
        (lambda: require_int(2.5, "k", 1), "k=2.5"),
        (lambda: require_int(7, "k", 1, 5), r"k=7 must be an integer in \[1, 5\]"),
        (lambda: require_counts_matrix(np.ones((2, 3))), r"shape \(2, 3\)"),
        (lambda: require_counts_matrix(-np.ones((2, 2))), "W entry=-1.0"),
        (lambda: require_eps("one"), "is not a number"),
    ],
)
def test_bad_concrete_values_raise(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_good_and_traced_values_pass():
    require_eps(math.inf)
    require_probability(1.0)
    require_int(3, "k", 1, 5)
    require_counts_matrix(np.zeros((3, 3)))
    assert float(jax.jit(lambda e: (require_eps(e), e)[1])(-1.0)) == -1.0  # traced: unchecked


def test_public_cai_functions_validate_concrete_inputs():
    """Bad concrete inputs are refused in one line naming the value (e.g. ε = −1 is not a
    converged fit with a finite θ)."""
    import jax.numpy as jnp

    from dpsim.estimators import perturbed_mle, top_k_mask
    from dpsim.mechanisms import (
        noisy_counts_edge,
        noisy_counts_individual,
        objective_perturbation_edge,
    )
    from dpsim.models import sample_er_comparisons, theta_cai_design, theta_two_block

    key = jax.random.key(0)
    W = jnp.ones((4, 4)) - jnp.eye(4)
    release = objective_perturbation_edge(key, 1.0, 0.5, 4)
    cases = [
        (lambda: objective_perturbation_edge(key, -1.0, 0.5, 4), "eps=-1.0"),
        (lambda: objective_perturbation_edge(key, 1.0, 1.5, 4), "p=1.5"),
        (lambda: objective_perturbation_edge(key, 1.0, 0.5, 4, c0=-1.0), "c0=-1.0"),
        (lambda: perturbed_mle(jnp.ones((4, 3)), release), r"shape \(4, 3\)"),
        (lambda: perturbed_mle(-W, release), "W entry=-1.0"),
        (lambda: noisy_counts_edge(key, W, 0.0), "eps=0.0"),
        (lambda: noisy_counts_individual(key, W, 1.0, 0), "per_user=0"),
        (lambda: top_k_mask(key, jnp.ones(4), 5), r"k=5 must be an integer in \[0, 4\]"),
        (lambda: sample_er_comparisons(key, jnp.zeros(4), 0.0), "p=0.0"),
        (lambda: theta_cai_design(key, 4, k=4), r"k=4 must be an integer in \[1, 3\]"),
        (lambda: theta_two_block(10, 2, 0.6), "gap=0.6"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
