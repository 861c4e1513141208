#!/usr/bin/env bash
# The committed kill matrices: for each paper named (default: all four), `dpsim verify PAPER
# --mutants` into runs/kill-matrix/PAPER (resumed when run again with the same code), its
# kill-matrix.csv copied to docs/data/kill-matrix-PAPER.csv, then the pages that show them
# (docs/PAPER-pins.md) rewritten by scripts/docs_pages.py.
#
#   bash scripts/kill_matrix.sh              # every paper (long: each re-runs its experiments under every mutant)
#   bash scripts/kill_matrix.sh cai xu       # some papers
#
# verify's exit status (a FAIL, an INCONCLUSIVE check, a surviving mutant) does not stop the
# copy: the matrix records what the checks did, survivors included; a paper whose verify wrote
# no kill-matrix.csv (bad input, an interrupted run) is reported and its file left as it was.
set -uo pipefail
cd "$(dirname "$0")/.."
papers=("$@")
[ ${#papers[@]} -eq 0 ] && papers=(cai xu nguyen chowdhury)
mkdir -p docs/data
missing=()
for paper in "${papers[@]}"; do
  runs="runs/kill-matrix/$paper"
  .venv/bin/dpsim verify "$paper" --mutants --runs "$runs" --no-progress
  echo "kill_matrix: dpsim verify $paper --mutants exited $?"
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
