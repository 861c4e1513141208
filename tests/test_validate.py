"""dpsim.validate: concrete bad values raise ValueError naming the value; traced values pass."""
import math

import jax
import numpy as np
import pytest

from dpsim.validate import (require_counts_matrix, require_eps, require_int, require_open_unit,
                            require_probability)


@pytest.mark.parametrize("call, message", [
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
])
def test_bad_concrete_values_raise(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_good_and_traced_values_pass():
    require_eps(math.inf)
    require_probability(1.0)
    require_int(3, "k", 1, 5)
    require_counts_matrix(np.zeros((3, 3)))
    assert float(jax.jit(lambda e: (require_eps(e), e)[1])(-1.0)) == -1.0   # traced: unchecked
