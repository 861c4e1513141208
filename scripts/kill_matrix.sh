#!/usr/bin/env bash
# The committed kill matrices: for each paper named (default: all four), `dpsim verify PAPER
# --mutants` into runs/kill-matrix/PAPER (resumed when run again with the same code), its
# kill-matrix.csv copied to docs/data/kill-matrix-PAPER.csv, then the pages that show them
# (docs/PAPER-pins.md) rewritten by scripts/docs_pages.py.
#
#   bash scripts/kill_matrix.sh                      # every paper (long: every mutant re-runs its experiments)
#   bash scripts/kill_matrix.sh cai xu               # some papers
#   bash scripts/kill_matrix.sh --mutated-only cai   # only the experiments the paper's mutants change
#
# --mutated-only verifies `dpsim verify EXPERIMENT… --mutants` with the experiments the paper's
# mutants change instead of the whole paper: the same mutants and the same checks can kill
# them (a mutant changes only its own experiments), without the paper's other experiments and
# solves; its FAIL level is Bonferroni over those checks only, so slightly less strict.
#
# verify's exit status (a FAIL, an INCONCLUSIVE check, a surviving mutant) does not stop the
# copy: the matrix records what the checks did, survivors included; a paper whose verify wrote
# no kill-matrix.csv (bad input, an interrupted run) is reported and its file left as it was.
set -uo pipefail
cd "$(dirname "$0")/.."
mutated_only=0
if [ "${1:-}" = "--mutated-only" ]; then mutated_only=1; shift; fi
papers=("$@")
[ ${#papers[@]} -eq 0 ] && papers=(cai xu nguyen chowdhury)
mkdir -p docs/data
missing=()
for paper in "${papers[@]}"; do
  runs="runs/kill-matrix/$paper"
  targets=("$paper")
  if [ $mutated_only = 1 ]; then
    read -r -a targets <<< "$(.venv/bin/python -c '
import sys
from dpsim.engine.registry import paper
found = paper(sys.argv[1])
print(" ".join(sorted({e for m in found.mutants.values() for e in m.experiments})))' "$paper")"
  fi
  rm -f "$runs/kill-matrix.csv"
  .venv/bin/dpsim verify "${targets[@]}" --mutants --runs "$runs" --no-progress
  echo "kill_matrix: dpsim verify ${targets[*]} --mutants exited $?"
  if [ -f "$runs/kill-matrix.csv" ]; then
    cp "$runs/kill-matrix.csv" "docs/data/kill-matrix-$paper.csv"
  else
    missing+=("$paper")
  fi
done
.venv/bin/python scripts/docs_pages.py
if [ ${#missing[@]} -gt 0 ]; then
  echo "kill_matrix: no kill matrix written for ${missing[*]}" >&2
  exit 1
fi
