"""Fault injection: whatever happens to a run or to its folder, the table it ends with is an
uninterrupted run's table, or the command refuses in one line; no row is lost or duplicated.
One small study (16 parts written one after another) is run once as the reference; then,
seeded: runs killed at random moments (SIGKILL, SIGTERM, SIGINT) and re-run; parts and the
manifest garbled, truncated or deleted, then read and re-run; a file-size limit
(``RLIMIT_FSIZE``: every write past it fails as on a full disk); ``--part 1/2``, ``--part 2/2``
and a whole-grid run started into one folder at once. Whatever can be killed runs in a
subprocess with a time limit.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsim.cli import main
from dpsim.engine.storage import store
from laplace_study import study_text

KEY = ["point", "rep", "method"]
REPS = 4
LANES = 2 * 2 * REPS  # n_items × p × reps: one part each
STUDY = study_text("faulty", n_items=8, reps=REPS, region=(0.5, 2.0)).replace(
    '"n_items": [8], "p": [1.0]', '"n_items": [8, 10], "p": [0.5, 1.0]'
)
RUN = ["--no-progress", "--chunk", "1", "--workers", "1", "--micro-batch", "1"]
TIMEOUT = 120


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The study file, the subprocesses' environment (a compilation cache of their own) and
    the reference: one uninterrupted run's table, sorted."""
    root = tmp_path_factory.mktemp("faults")
    (root / "study.py").write_text(textwrap.dedent(STUDY))
    env = {**os.environ, "DPSIM_JAX_CACHE": str(root / "jax-cache"), "PYTHONUNBUFFERED": "1"}
    lab = {"root": root, "env": env}
    done = _dpsim(lab, "run", "--out", str(root / "reference"))
    assert done.returncode == 0, done.stderr[-2000:]
    lab["reference"] = _table(root / "reference")
    assert len(lab["reference"]) == LANES * 2  # two eps values per lane, one method
    return lab


def _command(lab, *args) -> list[str]:
    verb, rest = args[0], args[1:]
    study = [str(lab["root"] / "study.py")] if verb == "run" else []
    return [sys.executable, "-m", "dpsim.cli", verb, *study, *(RUN if verb == "run" else []), *rest]


# sets the file-size limit, ignores SIGXFSZ (a write past the limit then fails with EFBIG) and
# becomes the command: resource.setrlimit in the child, without preexec_fn (a fork of this
# multithreaded process running Python code before exec can deadlock)
LIMITED = (
    "import os, resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
    "resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]),) * 2); os.execv(sys.executable, sys.argv[2:])"
)


def _dpsim(lab, *args, limit: int | None = None) -> subprocess.CompletedProcess:
    """One dpsim command in a subprocess; ``limit``: the largest file it may write (bytes)."""
    command, env = _command(lab, *args), lab["env"]
    if limit is not None:
        command = [sys.executable, "-c", LIMITED, str(limit), *command]
        # the run asks git for its commit (provenance); under the limit `git status` could fail
        # writing the checkout's index and leave its index.lock behind: it is told not to write
        env = {**env, "GIT_OPTIONAL_LOCKS": "0"}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=TIMEOUT, env=env, cwd=lab["root"]
    )


def _table(out: Path) -> pd.DataFrame:
    return store.load_results(out).sort_values(KEY).reset_index(drop=True)


def _assert_reference(lab, out: Path) -> None:
    """``out`` holds exactly the reference's rows: none lost, none twice, the same values."""
    table = _table(out)
    assert not table.duplicated(KEY).any()
    pd.testing.assert_frame_equal(table, lab["reference"], check_exact=True)
    manifest = store.read_manifest(out)
    assert manifest["complete"] and manifest["study"]["rows"] == len(table)
    assert not list(out.rglob(".tmp-*"))


def _one_line_refusal(done: subprocess.CompletedProcess, *phrases) -> None:
    """A command that refused: exit 2 and one error line, naming one of ``phrases``."""
    errors = [line for line in done.stderr.splitlines() if line.startswith("dpsim: error:")]
    assert done.returncode == 2 and len(errors) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and any(p in errors[0] for p in phrases), errors[0]


# --- killed runs ----------------------------------------------------------------------------


def _kill_during_run(
    lab, out: Path, sig: int, parts_first: int, wait: float
) -> subprocess.CompletedProcess:
    """Start a run into ``out``; once it holds the folder and has written ``parts_first`` more
    parts, wait ``wait`` seconds more and send it ``sig``."""
    before = len(store.part_files(out))
    proc = subprocess.Popen(
        _command(lab, "run", "--out", str(out)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=lab["env"],
        cwd=lab["root"],
    )
    deadline = time.monotonic() + TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        lock = out / store.LOCK
        holds = (
            lock.exists() and f"pid {proc.pid} " in lock.read_text()
        )  # read, never locked, by the test
        if holds and len(store.part_files(out)) >= before + parts_first:
            break
        time.sleep(0.002)
    time.sleep(wait)
    if proc.poll() is None:
        proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=TIMEOUT)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def test_runs_killed_at_random_moments_resume_to_the_uninterrupted_table(lab):
    """Three runs into one folder, each killed at a random moment (by SIGKILL, SIGTERM or
    SIGINT, after a random number of parts), then one run to the end: the reference's table.
    SIGINT stops with exit 130 and one line; a run the signal found finished exits 0."""
    rng = np.random.default_rng(39)
    out = lab["root"] / "killed"
    signals = rng.permutation([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
    outcomes = []
    for sig in map(int, signals):
        done = _kill_during_run(
            lab, out, sig, parts_first=int(rng.integers(0, 4)), wait=float(rng.uniform(0, 0.2))
        )
        outcomes.append(done.returncode)
        assert done.returncode in (0, -sig, 130 if sig == signal.SIGINT else -sig), done.stderr[
            -2000:
        ]
        if done.returncode == 130:
            assert (
                done.stderr.strip()
                .splitlines()[-1]
                .startswith("dpsim: interrupted; completed chunks are saved")
            )
            assert "Traceback" not in done.stderr
    assert any(code != 0 for code in outcomes)  # the signals did interrupt runs
    final = _dpsim(lab, "run", "--out", str(out))
    assert final.returncode == 0, final.stderr[-2000:]
    _assert_reference(lab, out)


# --- damaged folders ------------------------------------------------------------------------


def _garble(path: Path, rng) -> None:
    path.write_bytes(b"garbage\n")


def _truncate(path: Path, rng) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(rng.integers(1, len(data)))])


def _flip(path: Path, rng) -> None:
    """One byte inverted inside the file's data pages (between the magic bytes and the footer)."""
    data = bytearray(path.read_bytes())
    data[int(rng.integers(4, len(data) // 2))] ^= 0xFF
    path.write_bytes(bytes(data))


def _delete(path: Path, rng) -> None:
    path.unlink()


DAMAGE = {
    "garbled part": ("part", _garble),
    "truncated part": ("part", _truncate),
    "flipped part": ("part", _flip),
    "deleted part": ("part", _delete),
    "truncated manifest": ("manifest", _truncate),
    "garbled manifest": ("manifest", _garble),
    "deleted manifest": ("manifest", _delete),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_folder_is_read_with_a_warning_and_a_run_repairs_it(
    lab, case, tmp_path, monkeypatch, capsys
):
    """A copy of the reference folder damaged one way: `dpsim summary` still reads it (a damaged
    part left out with one warning line; a lost manifest read back from the parts), and a run
    into it ends with the reference's table, the damaged file kept aside as *.corrupt."""
    monkeypatch.setenv("DPSIM_JAX_CACHE", "off")  # keep the test session's compilation cache
    rng = np.random.default_rng(list(DAMAGE).index(case))
    out = tmp_path / case.replace(" ", "-")
    shutil.copytree(lab["root"] / "reference", out)
    what, damage = DAMAGE[case]
    target = (
        out / store.MANIFEST
        if what == "manifest"
        else store.part_files(out)[int(rng.integers(0, LANES))]
    )
    before = target.read_bytes()
    damage(target, rng)
    unreadable = what == "part" and damage is not _delete and not _reads(target)
    capsys.readouterr()
    assert main(["summary", str(out)]) == 0
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if line.startswith("dpsim: warning:")]
    if unreadable:
        assert len(warned) == 1 and target.name in warned[0] and "incomplete" in warned[0]
        assert "dpsim repair" in warned[0] and "dpsim run" in warned[0]
    assert "Traceback" not in err
    assert main(["run", str(lab["root"] / "study.py"), "--out", str(out), *RUN]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("dpsim: ")]
    if unreadable:  # one line says what was set aside
        assert len(said) == 1 and "moved aside" in said[0] and target.name in said[0], said
    elif what == "manifest":  # one line says the manifest was read back from the parts
        assert len(said) == 1 and "manifest.json is" in said[0] and "parts" in said[0], said
    _assert_reference(lab, out)
    kept = target.with_name(target.name + store.CORRUPT)
    if unreadable or what == "manifest" and damage is not _delete:
        assert (
            kept.exists() and kept.read_bytes() != before
        )  # set aside as it was found, never deleted
    else:
        assert (
            not kept.exists()
        )  # deleted, or a flipped bit no reader sees (a page header's statistics)


def _reads(part: Path) -> bool:
    """Whether every part of ``part``'s folder reads (checksums verified)."""
    return not store.read_parts(part.parent.parent, say=False)[1]


# --- a full disk ----------------------------------------------------------------------------


def test_a_run_that_hits_a_file_size_limit_refuses_in_one_line_and_resumes(lab):
    """A run whose writes fail past a random size limit (EFBIG, as on a full disk) stops with one
    line and keeps what it wrote whole; a run without the limit then ends with the reference's
    table."""
    rng = np.random.default_rng(7)
    out = lab["root"] / "full"
    written = [
        p.stat().st_size
        for p in [
            *store.part_files(lab["root"] / "reference"),
            lab["root"] / "reference" / store.MANIFEST,
        ]
    ]
    limit = int(rng.integers(500, max(written)))  # bytes: some write of the run goes past it
    done = _dpsim(lab, "run", "--out", str(out), limit=limit)
    _one_line_refusal(done, "cannot write")
    assert not list(out.rglob(".tmp-*"))  # a failed write leaves no temporary behind
    final = _dpsim(lab, "run", "--out", str(out))
    assert final.returncode == 0, final.stderr[-2000:]
    _assert_reference(lab, out)


# --- runs at the same time ------------------------------------------------------------------


def test_parts_and_a_whole_grid_run_started_at_once_make_one_table(lab):
    """`--part 1/2`, `--part 2/2` and a whole-grid run started into one folder at the same time:
    each finishes or is refused in one line (a whole-grid run never writes while parts do, nor
    the reverse); one run after them ends with the reference's table."""
    out = lab["root"] / "together"
    procs = [
        subprocess.Popen(
            _command(lab, "run", "--out", str(out), *extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=lab["env"],
            cwd=lab["root"],
        )
        for extra in (["--part", "1/2"], ["--part", "2/2"], [])
    ]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
        results.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    for done in results:
        if done.returncode != 0:
            _one_line_refusal(done, "another dpsim run", "another split")
    assert any(done.returncode == 0 for done in results)
    final = _dpsim(lab, "run", "--out", str(out))
    assert final.returncode == 0, final.stderr[-2000:]
    _assert_reference(lab, out)
