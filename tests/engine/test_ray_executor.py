"""Executors (dpsim/engine/execution/executors.py): a run computed by Ray actors (a local Ray
instance, 2 workers) gives the table of a local run to the last bit; a Ray worker that dies
mid-run loses and duplicates no row; a resumed run removes the temporary files a killed run
left; without Ray, ``--executor ray`` is one line saying how to install it, and writes
nothing.

One Ray instance (2 CPUs) is shared by the module and shut down at its end (a start costs
several seconds)."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from dpsim.cli import main
from dpsim.engine.storage import store
from dpsim.engine.execution.executors import (
    CACHE_OPTIONS,
    EXIT_ONCE_VARIABLE,
    INSTALL_RAY,
    ChunkWorker,
    actor_resources,
    apply_driver_settings,
    driver_settings,
    worker_target,
)
from dpsim.engine.registry import experiment as resolve
from dpsim.engine.execution.runner import run_experiment
from laplace_study import study_text

# two shape points (two steps), 8 chunks of 5 lanes each: more chunks than the driver sends ahead
STUDY = study_text("rayx", n_items=10, reps=40, region=(0.5, 2.0)).replace(
    '"n_items": [10]', '"n_items": [8, 10]'
)
CHUNK = 5
ROWS = 2 * 40 * 2  # shape points × reps × ε values (one method)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    path = tmp_path_factory.mktemp("study") / "study.py"
    path.write_text(textwrap.dedent(STUDY))
    return path


@pytest.fixture(scope="module")
def local_table(study, tmp_path_factory):
    """The table of the local run (the reference)."""
    experiment, source = resolve(str(study))
    out = tmp_path_factory.mktemp("local") / "run"
    run_experiment(experiment, out=out, chunk=CHUNK, source=source, progress=False)
    return store.load_results(out)


@pytest.fixture(scope="module")
def ray_instance():
    import ray  # a declared test dependency (pyproject's test extra): missing is an error, not a skip
    import logging
    import warnings

    with warnings.catch_warnings():
        # Ray starts its processes by fork + exec (nothing of JAX runs in the child); Python
        # warns about any fork of a process with threads, and earlier tests started JAX's
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


def _no_duplicates(table) -> bool:
    return not table.duplicated(["point", "rep", "method"]).any()


def test_the_study_has_two_steps_and_many_chunks(local_table):
    assert len(local_table) == ROWS and _no_duplicates(local_table)
    assert local_table["n_items"].nunique() == 2


def test_ray_with_two_workers_equals_the_local_run(
    ray_instance, study, local_table, tmp_path, monkeypatch
):
    """``dpsim run … --executor ray --ray-workers 2`` (the command, on the shared instance)."""
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")
    out = tmp_path / "ray"
    assert (
        main(
            [
                "run",
                str(study),
                "--chunk",
                str(CHUNK),
                "--out",
                str(out),
                "--executor",
                "ray",
                "--ray-workers",
                "2",
                "--no-progress",
            ]
        )
        == 0
    )
    table = store.load_results(out)
    assert table.equals(local_table)  # every float to the last bit
    assert len(store.part_files(out)) == 2 * 40 // CHUNK
    request = json.loads((out / store.MANIFEST).read_text())["history"][0]
    assert request["executor"]["name"] == "ray" and request["executor"]["workers"] == 2


def test_a_ray_worker_killed_mid_run_loses_and_duplicates_no_row(
    ray_instance, study, local_table, tmp_path, monkeypatch
):
    """The first chunk an actor takes kills its process (os._exit): Ray restarts the actor and
    retries its chunks; the table equals the local run."""
    from dpsim.engine.execution.executors import RayExecutor

    marker = tmp_path / "exited"
    monkeypatch.setenv(
        EXIT_ONCE_VARIABLE, str(marker)
    )  # actors copy the driver's DPSIM_* variables
    experiment, source = resolve(str(study))
    out = tmp_path / "ray"
    with RayExecutor(workers=2) as executor:
        pids = {ray_instance.get(a.pid.remote()) for a in executor._actors()}
        summary = run_experiment(
            experiment, out=out, chunk=CHUNK, source=source, progress=False, executor=executor
        )
        after = {ray_instance.get(a.pid.remote()) for a in executor.actors}
    assert marker.exists() and pids != after  # a worker did die, and was restarted
    table = store.load_results(out)
    assert summary.rows_written == ROWS and _no_duplicates(table)
    assert table.equals(local_table)


def test_a_resumed_run_removes_a_killed_runs_temporary_parts(study, local_table, tmp_path):
    """A run killed while writing leaves a truncated ``.tmp-*.parquet``; the next run into the
    folder removes it and completes the table."""
    experiment, source = resolve(str(study))
    out = tmp_path / "run"
    run_experiment(experiment, out=out, chunk=CHUNK, reps=20, source=source, progress=False)
    stale = out / store.PARTS / ".tmp-killed.parquet"
    stale.write_bytes(b"PAR1 truncated")
    run_experiment(experiment, out=out, chunk=CHUNK, source=source, progress=False)
    assert not stale.exists()
    assert store.load_results(out).equals(local_table)


def test_without_ray_the_ray_executor_is_one_line_and_writes_nothing(
    study, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails
    out = tmp_path / "out"
    for extra in ([], ["--dry-run"]):
        assert main(["run", str(study), "--out", str(out), "--executor", "ray", *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"dpsim: error: {INSTALL_RAY}" and "pip install 'dpsim[ray]'" in err
        assert not out.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--executor", "dask"], "--executor 'dask' must be one of local, ray"),
        (["--address", "10.0.0.1:6379"], "--address needs --executor ray"),
        (["--ray-workers", "2"], "--ray-workers needs --executor ray"),
        (["--executor", "ray", "--ray-workers", "0"], "--ray-workers 0 must be an integer ≥ 1"),
    ],
)
def test_bad_executor_options_are_one_line(study, tmp_path, capsys, args, message):
    out = tmp_path / "out"
    assert main(["run", str(study), "--out", str(out), *args]) == 2
    assert capsys.readouterr().err.strip() == f"dpsim: error: {message}"
    assert not out.exists()


def test_actors_are_one_per_gpu_else_one_per_group_of_cores():
    assert actor_resources({"CPU": 32, "GPU": 4}, 16, None) == (4, {"num_gpus": 1.0, "num_cpus": 0})
    assert actor_resources({"CPU": 32, "GPU": 2}, 16, 4) == (4, {"num_gpus": 0.5, "num_cpus": 0})
    assert actor_resources({"CPU": 64}, 32, None) == (16, {"num_cpus": 4})
    assert actor_resources({"CPU": 2}, 2, 2) == (2, {"num_cpus": 1})
    assert actor_resources({"CPU": 2}, 2, None) == (1, {"num_cpus": 2})
    assert actor_resources({"CPU": 64}, 32, 1) == (
        1,
        {"num_cpus": 32},
    )  # never more than a node has


def test_workers_load_a_paper_by_name_and_a_study_by_absolute_path(tmp_path, monkeypatch):
    """The manifest's source of an installed paper is its module; actors load the name."""
    assert worker_target("dpsim.experiments.cai", "cai-fig3") == "cai-fig3"
    monkeypatch.chdir(tmp_path)
    assert worker_target("study.py:rayx", "rayx") == f"{tmp_path / 'study.py'}:rayx"


def test_an_actor_takes_the_drivers_whole_compilation_cache_configuration():
    """A worker (ChunkWorker, what a Ray actor runs) sets every persistent-cache option of the
    driver, not only the folder: with a size limit (the suite's, tests/conftest.py) JAX keeps an
    access-time file beside each entry and reads them all before each write, so a worker writing
    into the folder without the limit would leave entries with no access-time file, and every
    later write of the driver would fail."""
    import jax

    settings = driver_settings()
    assert set(settings["cache"]) == set(CACHE_OPTIONS)
    assert settings["cache"]["jax_compilation_cache_max_size"] > 0  # the suite's limit
    other = {
        "jax_compilation_cache_max_size": 12345,
        "jax_persistent_cache_min_compile_time_secs": 7.5,
        "jax_persistent_cache_min_entry_size_bytes": 6,
    }
    try:
        ChunkWorker({**settings, "cache": {**settings["cache"], **other}})
        assert {name: getattr(jax.config, name) for name in other} == other
        assert (
            jax.config.jax_compilation_cache_dir == settings["cache"]["jax_compilation_cache_dir"]
        )
    finally:
        apply_driver_settings(settings)
