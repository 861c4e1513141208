"""Shared fixtures for the dpsim test suite.

Importing dpsim turns on float64 in JAX (DESIGN: estimators run in float64); it must happen
before any array is created, so it is the first thing this file does.

The runner compiles one jitted function per (shape point, chunk layout) and every
``run_experiment`` call builds a fresh jit wrapper, so identical programs would be compiled
again and again. A persistent XLA compilation cache in a per-session temporary directory
makes the second compile of an identical program a disk read; it changes no result.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import dpsim  # noqa: F401  (enables jax_enable_x64)

import jax
import jax.numpy as jnp
import pytest

from dpsim.models import sample_er_comparisons, theta_cai_design

_CACHE_DIR = tempfile.mkdtemp(prefix="dpsim-test-jax-cache-")
# Batching from measurement (dpsim.experiment.calibration) is off in the suite, so that no test's
# chunk layout depends on what earlier tests cached; tests/test_batching.py turns it on where
# it tests it, with its own cache file. The cache file is never the user's.
os.environ.setdefault("DPSIM_CALIBRATION", "off")
os.environ.setdefault("DPSIM_CALIBRATION_CACHE", os.path.join(_CACHE_DIR, "batching.json"))
jax.config.update("jax_compilation_cache_dir", _CACHE_DIR)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def small_theta():
    """θ* of the cai design for n = 20 (k = 5, top items last), centred."""
    return theta_cai_design(jax.random.key(11), 20)


@pytest.fixture(scope="session")
def small_W(small_theta):
    """One ER(20, 0.5) BTL win matrix drawn from ``small_theta`` (seeded)."""
    return sample_er_comparisons(jax.random.key(12), small_theta, 0.5)


@pytest.fixture(scope="session")
def spread_theta():
    """A θ* with a wide spread (−3 … 3, n = 20), to exercise the likelihood away from 0."""
    return jnp.linspace(-3.0, 3.0, 20)


@pytest.fixture(scope="session")
def spread_W(spread_theta):
    return sample_er_comparisons(jax.random.key(13), spread_theta, 0.7)

