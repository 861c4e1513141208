"""dpsim benchmarks: one shared harness (:mod:`benchmarks.harness`) and one module per paper
(``python -m benchmarks.<paper> [--quick] [--sections A,B]`` from the repository root).

The NumPy/SciPy/choix baselines run with one OpenBLAS thread: this must be set before NumPy
is first imported, which is why it is done here (every ``benchmarks.*`` module is imported
through this package first). With OpenBLAS's default threads, L-BFGS-B's tiny BLAS calls
were measured 60× slower per fit (n = 40, busy 2-core machine). XLA's CPU backend does not
use OpenBLAS, so the engine is unaffected. A caller's explicit setting wins.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
