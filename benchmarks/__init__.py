"""dpsim benchmarks: one shared harness (:mod:`benchmarks.harness`) and one module per paper
(``python -m benchmarks.<paper> [--quick] [--sections A,B]`` from the repository root).

The NumPy/SciPy/choix baselines run with one OpenBLAS thread: this must be set before NumPy
is first imported, which is why it is done here (every ``benchmarks.*`` module is imported
through this package first). With OpenBLAS's default threads, L-BFGS-B's tiny BLAS calls
run far slower per fit than on one thread, and the baselines would be timed at their worst.
XLA's CPU backend does not use OpenBLAS, so the engine is unaffected. A caller's explicit
setting wins.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# On a GPU, a benchmark's fresh processes (cold runs: harness.cold_call) share the device with
# the benchmark's own process. JAX's default preallocation (75 % of the device's memory per
# process) leaves the child too little to load its kernels (CUDA_ERROR_OUT_OF_MEMORY in a
# cold run's first chunk), so memory is allocated as needed instead (a caller's explicit
# setting wins).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# The engine's batching choices (calibrated micro-batches, chunk layouts compiled before:
# dpsim.engine.execution.calibration) are cached on disk across runs. A benchmark starts from an
# empty cache of its own, so its numbers do not depend on what ran on the machine before
# (a caller's explicit $DPSIM_CALIBRATION_CACHE wins); its fresh processes inherit it.
if "DPSIM_CALIBRATION_CACHE" not in os.environ:  # made here: removed when this process ends
    import atexit
    import shutil
    import tempfile

    _calibration_dir = tempfile.mkdtemp(prefix="dpsim-bench-calibration-")
    atexit.register(shutil.rmtree, _calibration_dir, ignore_errors=True)
    os.environ["DPSIM_CALIBRATION_CACHE"] = os.path.join(_calibration_dir, "batching.json")
