"""toy's mutants: plausible bugs that ``dpsim verify toy --mutants`` must see killed (some
check FAILs under each)."""

from __future__ import annotations

from dpsim.engine.judgement.mutants import Mutant, scaled_derived

from .figures.noise import NOISE

MUTANTS = [
    Mutant(
        "toy-sensitivity-1",
        "the counts released with Laplace(1/ε): sensitivity 1, not 2",
        (NOISE.name,),
        scaled_derived({"scale": 0.5}),
        breaks=("mechanism:laplace-counts",),
    ),
]
