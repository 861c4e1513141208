#!/usr/bin/env bash
# Build the documentation site into site/ with `mkdocs build --strict`: a broken link,
# reference or cross-reference fails the build. Installs the docs extra into .venv first
# when MkDocs is missing (scripts/setup.sh creates .venv if there is none).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! .venv/bin/python -c "import mkdocs, material, mkdocstrings_handlers.python" 2>/dev/null; then
  bash scripts/setup.sh docs
fi
.venv/bin/python scripts/docs_pages.py --check
# MkDocs' INFO lines are dropped; its warnings (each of which fails the build) are shown. Not
# --quiet: it silences the warnings, and strict mode then counts none.
NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --site-dir site "$@" 2>&1 | { grep -v '^INFO' || true; }
echo "docs: site/index.html"
