"""dpsim: a JAX simulator for minimax-rate experiments in differentially private
learning from pairwise comparisons and human response data.

Importing dpsim enables float64 in JAX (DESIGN.md: estimators run in float64).
"""
import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
