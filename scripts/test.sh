#!/usr/bin/env bash
# Set up with the test extra, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
.venv/bin/python -m pytest -q "$@"
