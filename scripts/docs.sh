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
.venv/bin/python -m mkdocs build --strict --quiet --site-dir site "$@"
echo "docs: site/index.html"
