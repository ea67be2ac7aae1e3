"""Package smoke check: the answer of ``needle search INDEX QUERY --mode MODE --json``, read from standard input.

``--json`` prints one list per query of ``{"id", "score", "content"}``. For the one query the smoke test sends, the
list must be non-empty, every hit complete, and (with ``--expect PREFIX``) some hit's id must start with PREFIX::

    needle search idx "read and write zip archives" --mode bm25 --json | python smoke_search.py --expect zipfile

Prints one line (the hits' ids) and exits 0, or exits 1 with the reason.
"""

import argparse
import json
import sys
from typing import Any


def check(answer: Any, expect: str | None) -> list[str]:
    """The hits' ids of ANSWER, a ``--json`` answer to one query; SystemExit if it is not a good one."""
    if not isinstance(answer, list) or len(answer) != 1 or not isinstance(answer[0], list):
        raise SystemExit(f"expected one list of hits (one query), got: {json.dumps(answer)[:300]}")
    hits = answer[0]
    if not hits:
        raise SystemExit("no hits")
    for hit in hits:
        if not isinstance(hit, dict) or not {"id", "score", "content"} <= set(hit) or not hit["content"]:
            raise SystemExit(f"a hit without id, score or content: {json.dumps(hit)[:300]}")
    ids = [str(hit["id"]) for hit in hits]
    if expect is not None and not any(hit_id.startswith(expect) for hit_id in ids):
        raise SystemExit(f"no hit id starts with {expect!r}: {ids}")
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--expect", help="an id prefix one of the hits must have")
    args = parser.parse_args()
    text = sys.stdin.read()
    try:
        answer = json.loads(text)
    except json.JSONDecodeError as error:
        raise SystemExit(f"not JSON ({error}): {text[:300]!r}") from None
    ids = check(answer, args.expect)
    print(f"{len(ids)} hits: {', '.join(ids)}")


if __name__ == "__main__":
    main()
