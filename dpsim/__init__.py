"""dpsim: a JAX simulator for minimax-rate experiments in differentially private
learning from pairwise comparisons and human response data.

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
