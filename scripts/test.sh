#!/usr/bin/env bash
# Set up with the test and docs extras, build the documentation site strictly (a broken link
# fails), then run the whole test suite (which runs every example of the documents).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test,docs
bash scripts/docs.sh
# one style for the whole tree (pyproject.toml [tool.ruff]): lint, then the formatter's check
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# tests/engine/test_report_browser.py renders `dpsim report`'s page in headless Chromium: install Debian's
# package when it is missing and apt-get can (as root); without it those tests are skipped.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "scripts/test.sh: chromium could not be installed; the browser tests will be skipped" >&2
fi
# Two pytest-xdist workers (the 2-core machine's cores: much of the suite is single-threaded
# XLA compilation); a test file runs whole on one worker, so its module fixtures are made once,
# except tests/conformance/test_conformance.py, one group per experiment (its smoke run made once,
# on one worker; tests/conftest.py xdist_group). Groups are handed out in collection order, the
# longest files first (tests/conftest.py HEAVY_FIRST).
.venv/bin/python -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder "$@"
