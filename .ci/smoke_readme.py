"""Package smoke check: the README's Python and YAML examples, run with the installed wheel as a reader would.

Run by ``.ci/package_smoke.sh`` from a directory outside the repository holding the reader's copy of the sample
corpus at ``samples/python_docs.jsonl``: every ```python block of README.md is executed (each must print), and every
```yaml pipeline is loaded with ``Pipeline.loads`` after ``import components`` alone. Prints one line per block; any
failure is an exception (exit 1).
"""

import contextlib
import io
import re
import sys
from pathlib import Path

import yaml
from haystack import Pipeline

import components  # noqa: F401  (allowlists our component types, as the README says)


def blocks(readme: str, lang: str) -> list[str]:
    """The bodies of README's fenced blocks of one language."""
    return re.findall(rf"^```{lang}\n(.*?)^```", readme, flags=re.S | re.M)


def main(readme_path: str) -> None:
    readme = Path(readme_path).read_text(encoding="utf-8")
    python, pipelines = blocks(readme, "python"), blocks(readme, "yaml")
    assert python, "README.md has no python block"
    assert pipelines, "README.md has no yaml block"
    for number, body in enumerate(python, start=1):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(body, f"README.md python block {number}", "exec"), {"__name__": "__readme__"})
        assert "zipfile-0" in out.getvalue(), f"python block {number} printed {out.getvalue()!r}"
        print(f"README python block {number} ran: {out.getvalue().strip()[:100]}")
    for number, body in enumerate(pipelines, start=1):
        assert "components" in yaml.safe_load(body), f"yaml block {number} is no pipeline"
        pipeline = Pipeline.loads(body)
        print(f"README yaml block {number} loads: {len(pipeline.to_dict()['components'])} components")


if __name__ == "__main__":
    main(sys.argv[1])
