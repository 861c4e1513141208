"""Shared fixtures for the dpsim test suite.

The XLA:CPU level every program compiles at is set first (:func:`suite_opt_level`: JAX reads
``$XLA_FLAGS`` when it makes its CPU client); importing dpsim, which turns on float64 in JAX
(DESIGN: estimators run in float64) and must happen before any array is created, comes next.

The runner compiles one jitted function per (shape point, chunk layout) and every
``run_experiment`` call builds a fresh jit wrapper, so identical programs would be compiled
again and again. A persistent XLA compilation cache in a per-session temporary directory
makes the second compile of an identical program a disk read; it changes no result.

Under pytest-xdist (``scripts/test.sh`` runs ``pytest -n 2``) the cache is one folder for the
whole run, shared by the workers: the controlling process makes it and exports it as
``$DPSIM_TEST_JAX_CACHE`` before it starts them, so a program compiled by one worker is a disk
read for the other. A size limit (far above what the suite writes) turns on JAX's file lock
around each read and write of the cache, so one worker never reads an entry the other is
still writing.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

# the suite's shared helpers (toy.py, cli_cases.py, …) sit here, beside the test folders of each area
sys.path.insert(0, str(Path(__file__).resolve().parent))

OPT_LEVEL_FLAG = "--xla_backend_optimization_level"
# XLA:CPU's MLIR fusion emitters build an MLIR context and pattern set for each of a program's
# kernels; at LLVM level 0 the older emitters compile the same program in about half the
# backend time, with results equal to float rounding. (At XLA's default level they are slower
# to compile, so the library keeps XLA's default; this is the suite's setting only.)
FUSION_EMITTERS_FLAG = "--xla_cpu_use_fusion_emitters"


def suite_opt_level() -> str:
    """The XLA:CPU LLVM level the suite compiles at: ``$DPSIM_XLA_CPU_OPT_LEVEL`` (0 unless set),
    for the engine's chunk programs (dpsim.engine.execution.program.compiler_options) and, through
    ``$XLA_FLAGS``, for every other program of this process and of the processes it starts (a
    library function jitted in a test, a benchmark's or CLI test's fresh interpreter), unless
    ``$XLA_FLAGS`` already names a level; at level 0 also the older fusion emitters
    (:data:`FUSION_EMITTERS_FLAG`), unless ``$XLA_FLAGS`` names them. JAX reads it when it makes
    its CPU client, so it is set before any array exists. Returns: the level, as text."""
    os.environ.setdefault("DPSIM_XLA_CPU_OPT_LEVEL", "0")
    # the engine's own reading of the variable (a bad value: its one-line UsageError, before XLA
    # would abort on it); importing dpsim loads JAX but does not start its backend
    from dpsim.engine.execution.program import cpu_opt_level

    level = str(cpu_opt_level())
    flags = os.environ.get("XLA_FLAGS", "")
    if OPT_LEVEL_FLAG not in flags:
        flags = f"{flags} {OPT_LEVEL_FLAG}={level}"
    if level == "0" and FUSION_EMITTERS_FLAG not in flags:
        flags = f"{flags} {FUSION_EMITTERS_FLAG}=false"
    os.environ["XLA_FLAGS"] = flags.strip()
    return level


SUITE_OPT_LEVEL = suite_opt_level()

import dpsim  # noqa: E402,F401  (enables jax_enable_x64)

import jax
import jax.numpy as jnp
import pytest

from dpsim.models import sample_er_comparisons, theta_cai_design

CACHE_VARIABLE = "DPSIM_TEST_JAX_CACHE"
CACHE_LOCKED_SIZE = 1 << 40  # bytes: any limit turns on JAX's cache lock; this one never evicts


def session_cache() -> tuple[str, bool]:
    """The run's compilation-cache folder: the one ``$DPSIM_TEST_JAX_CACHE`` names (an xdist
    worker inherits its controller's), else a new temporary folder, exported for the workers.

    Returns: (the folder, whether this process made it and so removes it at the end)."""
    inherited = os.environ.get(CACHE_VARIABLE)
    if inherited:
        return inherited, False
    made = tempfile.mkdtemp(prefix="dpsim-test-jax-cache-")
    os.environ[CACHE_VARIABLE] = made
    return made, True


_CACHE_DIR, _OWN_CACHE = session_cache()
# Batching from measurement (dpsim.engine.execution.calibration) is off in the suite, so that no test's
# chunk layout depends on what earlier tests cached; tests/engine/test_batching.py turns it on where
# it tests it, with its own cache file. The cache file is never the user's.
os.environ.setdefault("DPSIM_CALIBRATION", "off")
# Written files are not flushed to disk (fsync) in the suite: its folders are temporary, and an
# fsync per Parquet part costs milliseconds each (tests/engine/test_repair.py tests the flush itself).
os.environ.setdefault("DPSIM_FSYNC", "off")
# Every program is compiled at XLA:CPU's LLVM level 0 in the suite (suite_opt_level above;
# it compiles much faster, and most of the suite is compilation of small programs).
# Results agree with XLA's default level (3) to float rounding;
# tests/engine/test_runner.py::test_cpu_opt_level_is_a_speed_setting runs level 3 against this one.
# Set $DPSIM_XLA_CPU_OPT_LEVEL to run the suite at another level.
os.environ.setdefault("DPSIM_CALIBRATION_CACHE", os.path.join(_CACHE_DIR, "batching.json"))
os.environ.setdefault(
    "DPSIM_CODE_CACHE", os.path.join(_CACHE_DIR, "code")
)  # modules' digests (provenance)
jax.config.update("jax_compilation_cache_dir", _CACHE_DIR)
jax.config.update("jax_compilation_cache_max_size", CACHE_LOCKED_SIZE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


# A scheduling hint for the two xdist workers (scripts/test.sh: --dist loadgroup
# --no-loadscope-reorder, so groups are handed out in the order of their first test): the files
# that took longest in a measured whole-suite run start first, so that what a worker picks up
# last is short and neither waits long for the other at the end (xdist's own order, by test
# count, handed out the two-test, half-minute tests/engine/test_no_hang.py last). Order only:
# every test runs.
HEAVY_FIRST = (
    "test_conformance.py",
    "test_runner.py",
    "test_xu_mechanisms.py",
    "test_benchmarks.py",
    "test_nguyen_experiments.py",
    "test_padding.py",
    "test_xu_estimator.py",
    "test_private_spectral.py",
    "test_ray_executor.py",
    "test_xu_theory.py",
    "test_no_hang.py",
    "test_xu_experiments.py",
    "test_cai_individual.py",
    "test_specialised_groups.py",
    "test_chowdhury_sgd.py",
    "test_api.py",
    "test_docs_examples.py",
    "test_faults.py",
    "test_report_browser.py",
    "test_folder_safety.py",
)


# The one file whose tests are spread over both workers: each of its experiments is a group
# of its own (its bad-input test, its smoke run and the tests sharing that run), so that the
# module-scoped smoke run of an experiment is made once, on one worker. Its experiments whose
# smoke run and checks took longest in a measured run start first, in this order.
PER_EXPERIMENT = "test_conformance.py"
HEAVY_EXPERIMENTS_FIRST = (
    "nguyen-fig1",
    "nguyen-fig2",
    "chowdhury-rates-k",
    "nguyen-fig3",
    "nguyen-p0",
    "xu-oracle",
    "cai-edge-vs-individual",
    "xu-fig2",
    "xu-fig7",
    "chowdhury-fig1",
    "xu-fig6",
)


def xdist_group(nodeid: str) -> str:
    """The xdist group of a test, from its node id (``--dist loadgroup``): its file, except that
    a parametrized :data:`PER_EXPERIMENT` test is in the group of its parameter's id (an
    experiment's name; the skeleton test's, a paper's). A ``@group`` suffix that xdist adds
    to the id of a test marked ``xdist_group`` is ignored (it names the same group)."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        nodeid = nodeid[: nodeid.rfind("@")]
    file, _, test = nodeid.partition("::")
    if file.rpartition("/")[2] == PER_EXPERIMENT and test.endswith("]") and "[" in test:
        return f"{file}::{test[test.index('[') + 1 : -1]}"
    return file


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the markers in its own hook
def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    heavy = {f"{PER_EXPERIMENT}::{name}": i for i, name in enumerate(HEAVY_EXPERIMENTS_FIRST)}

    def order(item):
        group = xdist_group(item.nodeid).rpartition("/")[2]
        return rank.get(item.path.name, len(rank)), heavy.get(group, len(heavy))

    items.sort(key=order)  # stable: files, and the other experiments, keep their order
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group(item.nodeid)))


def pytest_xdist_make_scheduler(config, log):
    """Under ``--dist loadgroup``: xdist's scheduling by scope, each scope a :func:`xdist_group`
    computed from the node id. (xdist's own loadgroup reads the group from a suffix its worker
    writes into the node id, which pytest 9.2's structured node ids no longer take: without this,
    every test would be a group of its own and a module fixture made on both workers;
    pytest-dev/pytest-xdist#1386.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    return GroupScheduling(config, log)


def pytest_unconfigure(config):
    if _OWN_CACHE:
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
