#!/usr/bin/env bash
# Set up, then reproduce cai Figures 1–3 at the paper's size on the local CPU and judge their
# own checks (the paper's observations on Figures 1–3, spec §8.3). Results, figures (PNG, PDF
# and the plotted points as CSV) and manifests go to runs/cai-fig1 … runs/cai-fig3; nothing
# tracked is rewritten. The full set of checks is `dpsim verify` (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "reproduce: set-up, then cai Figures 1-3 and their checks; expect about 3 minutes on a 2-core CPU"
start=$(date +%s)
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
for fig in cai-fig1 cai-fig2 cai-fig3; do
  dpsim run "$fig"
done
dpsim verify cai-fig1 cai-fig2 cai-fig3 --runs runs
echo "reproduce: done in $(( $(date +%s) - start )) s; figures in runs/cai-fig1 … runs/cai-fig3"
