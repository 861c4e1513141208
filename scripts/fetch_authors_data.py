"""Fetch the result files the papers' authors released, for the ``*-published-*`` checks.

The authors' repositories carry no licence, so dpsim does not ship their files; this script
downloads them, at the commit the checks were written against, into ``$DPSIM_AUTHORS_DATA``
(default ``authors-data/`` under the working directory, ignored by git). Run it from the
repository root, then ``dpsim verify cai-published-fig1-counts …``; without the files those
checks are INCONCLUSIVE.

    python scripts/fetch_authors_data.py            # download
    python scripts/fetch_authors_data.py --list     # print what it would fetch
"""

from __future__ import annotations

import argparse
import sys
import urllib.request

from dpsim.datasets.authors import (
    CAI_CHECKED,
    CAI_COMMIT,
    CAI_EDGE_FILES,
    CAI_EDGE_FOLDERS,
    CAI_REPOSITORY,
    authors_dir,
    cai_edge_path,
)


def wanted() -> list[tuple[str, str, object]]:
    """(repository, path in it, local path) of every file the checks read."""
    return [
        (
            CAI_REPOSITORY,
            f"{CAI_EDGE_FOLDERS[fig]}/{CAI_EDGE_FILES[method]}",
            cai_edge_path(fig, method),
        )
        for fig, method in CAI_CHECKED
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--list", action="store_true", help="print the files and where they go, fetch nothing"
    )
    args = parser.parse_args(argv)
    for repo, path, local in wanted():
        url = f"https://raw.githubusercontent.com/{repo}/{CAI_COMMIT}/{path}"
        print(f"{url} -> {local}")
        if args.list:
            continue
        local.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
        tmp = local.with_suffix(".part")
        tmp.write_bytes(data)
        tmp.replace(local)
    print(f"{'would fetch' if args.list else 'fetched'} {len(wanted())} files into {authors_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
