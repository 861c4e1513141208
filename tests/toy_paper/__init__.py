"""toy: A toy paper: Laplace-noised win counts (tests only); a fifth paper that exists only for the
tests, written by ``dpsim new-paper toy`` with a second figure added (``figures/size.py``). It is
registered by ONE entry-point line (``toy = toy_paper``, which tests/conformance/test_conformance.py
writes into a ``toy_paper-0.0.dist-info``) and has no test code of its own.

The paper package's contract, and nothing else: what the paper declares, gathered from the
modules of its skeleton (written by ``dpsim new-paper toy``; docs/architecture.md, "A paper's
skeleton"):

* ``model.py``: the model, its θ* design and its generator;
* ``methods.py``: the release (through ``dpsim.mechanisms``) and the estimators as Methods;
* ``figures/``: one module per figure or table, its Experiments and the checks read on them;
* ``checks.py``: every check (the figures' and the paper-wide level checks);
* ``mutants.py``: plausible bugs the checks must catch; ``audits.py``: privacy audits.
"""

from . import audits, checks, figures, mutants

TITLE = "A toy paper: Laplace-noised win counts (tests only)"
PAGE = "docs/toy.md"

EXPERIMENTS = figures.EXPERIMENTS
CHECKS = checks.CHECKS
MUTANTS = mutants.MUTANTS
AUDITS = audits.AUDITS

# What the experiments simulate and score; each check names those it pins (``pins``), each mutant
# those it breaks (``breaks``): ``dpsim list toy --pins``.
COMPONENTS = {
    "mechanism:laplace-counts": "Laplace(2/ε) on every item's win count (methods.privatise)",
}
