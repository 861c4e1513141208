"""dpsim: a JAX simulator for minimax-rate experiments in differentially private
learning from pairwise comparisons and human response data.

``import dpsim`` gives the Python API of :mod:`dpsim.api` (imported on first use):
``dpsim.run``, ``dpsim.load`` (:class:`~dpsim.api.Results`), ``dpsim.verify``, ``dpsim.solve``,
``dpsim.show``, ``dpsim.catalog``, ``dpsim.pins``, ``dpsim.experiment_named``, ``dpsim.checks_for``,
``dpsim.report``, ``dpsim.info``, ``dpsim.repair``, ``dpsim.merge``, ``dpsim.audit``, ``dpsim.plan``.

Importing dpsim enables float64 in JAX for the whole process (``jax_enable_x64``): the
estimators are solved to ‖∇‖∞ ≤ 1e-10, far below float32 resolution, so estimators run in
float64. A program that must stay in float32 should not import dpsim.

Citations in docstrings: "cai §2.2.1", "xu eq. (3)" are the papers' own sections and
equations; "docs/cai.md, Errata and modes (E3)" is a section of the project's page on that
paper (docs/<paper>.md: the model, the mechanisms and estimators as implemented, the
predictions checked, and each erratum with the mode chosen for it).
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.3.0"

# The Python API (dpsim.api), imported on first use so that ``import dpsim`` stays light.
API = (
    "run",
    "load",
    "Results",
    "experiment_named",
    "show",
    "catalog",
    "pins",
    "verify",
    "Verification",
    "solve",
    "checks_for",
    "Method",
    "Experiment",
    "report",
    "info",
    "repair",
    "merge",
    "audit",
    "plan",
)


def __getattr__(name):
    if name in API:
        import importlib

        return getattr(importlib.import_module("dpsim.api"), name)
    raise AttributeError(f"module 'dpsim' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *API])
