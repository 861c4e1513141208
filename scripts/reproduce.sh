#!/usr/bin/env bash
# Set up, then a quick reproduction on the local CPU: one headline figure per paper at the
# paper's size (cai Figures 1-3, xu Figure 3 and Table 1, nguyen Figure 2, chowdhury
# Figure 1) and the checks that judge them. Results, figures (PNG, PDF and the plotted points
# as CSV) and manifests go to runs/reproduce-CODE/NAME, CODE a hash of the six experiments'
# code fingerprints (dpsim.engine.storage.provenance.fingerprint: the syntax trees of the modules
# each experiment's code imports, which is what a folder checks; comments, docstrings and
# checks do not count): a second run with the same code resumes (and computes nothing when
# the first finished); after a code change it starts a new folder (a study folder never mixes
# rows of different code, and `dpsim run` and `verify --runs` refuse, never rewrite, a folder
# of other code) and the old one stays. Nothing tracked is rewritten. Every check of a paper
# is `dpsim verify PAPER` (see the README).
set -euo pipefail
cd "$(dirname "$0")/.."
experiments=(cai-fig1 cai-fig2 cai-fig3 xu-fig3 nguyen-fig2 chowdhury-fig1)
echo "reproduce: set-up, then ${experiments[*]} and their checks; expect about 3 minutes on a 2-core CPU (more on a first set-up)"
start=$(date +%s)
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
runs="runs/reproduce-$(python -c '
import hashlib, sys
from dpsim.engine import registry
from dpsim.engine.storage.provenance import fingerprint
codes = " ".join(fingerprint(registry.experiment(name)[0])["hash"] for name in sys.argv[1:])
print(hashlib.sha256(codes.encode()).hexdigest()[:16])' "${experiments[@]}")"
for name in "${experiments[@]}"; do
  dpsim run "$name" --out "$runs/$name"
done
status=0
dpsim verify "${experiments[@]}" --runs "$runs" || status=$?
dpsim report "$runs"      # one page: figures, summaries, verdicts, provenance
echo "reproduce: done in $(( $(date +%s) - start )) s; the figures written:"
for name in "${experiments[@]}"; do   # the names each figure has (nguyen-fig2 draws one per mode)
  for figure in "$runs/$name"/figure*.png; do
    if [ -e "$figure" ]; then echo "  $figure"; fi
  done
done
echo "  the page: $runs/report.html"
# verify's exit status: 0 every check passed, 1 a FAIL or REFUSED, 4 an ERROR (a check that cannot be evaluated), 3 some INCONCLUSIVE
exit $status
