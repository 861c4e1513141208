#!/usr/bin/env bash
# Set up, then reproduce cai Figures 1–3 at the paper's size on the local CPU and run the
# edge-DP rate checks. Extra arguments are passed to `dpsim verify` (e.g. check names).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
for fig in cai-fig1 cai-fig2 cai-fig3; do
  dpsim run "$fig"
  dpsim plot "runs/$fig" --to "figures/$fig"
done
dpsim verify "$@"
