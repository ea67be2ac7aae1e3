"""Hayhooks' own server over a needle index: the pipeline wrapper behind each ``hayhooks/<mode>_search/`` directory.

`needle index` writes, beside each generation's ``<mode>_search.yaml``, ``hayhooks/<mode>_search/pipeline_wrapper.py``
(``needle_retrieval.index.templates.save_hayhooks_wrapper``): a subclass of :class:`SearchPipelineWrapper` naming that
file. So

    hayhooks run --pipelines-dir DIR/gen-NNNNNN/hayhooks

deploys every search pipeline of the generation, from any working directory and with nothing else to set.
Served as plain YAML files, Hayhooks 2.1 would skip them unless ``HAYSTACK_DESERIALIZATION_ALLOWLIST`` were set
(importing this module allowlists ``components``), resolve their paths (relative to DIR) against its own working
directory, make every declared input required (a ``top_k`` input could not be optional), answer every error with
a 500, and write ``.yml`` copies into the index.

Each wrapper reads its generation's YAML file, after checking the generation's own files against the sha256 its
manifest records (an edited file fails the deployment, naming it), resolves the stores' relative paths
against DIR, shares one store object per index part with the other wrappers of the process (the index is opened
once, as `needle serve` does), warms up and answers a probe query at start-up (a broken part fails the deployment,
not the first user's query). ``POST /<mode>_search/run`` takes ``{"query": ..., "top_k"?: ...}`` and answers
Hayhooks' ``{"result": {component: {"documents": [...]}}}``, fed and run as `needle serve` runs its pipelines
(``needle_retrieval.pipelines.feed``, ``needle_retrieval.pipelines.runner``): ``top_k`` (1 to 10,000) goes to the
answering component and the candidate generators before it keep at least their own count, the query embedder keeps the
instruction the index recorded; a blank, empty or invalid-Unicode query or a bad ``top_k`` is a 422 with a message, a
query over 1 MiB characters a 413.
"""

import threading
from pathlib import Path
from typing import Annotated, Any

import yaml
from hayhooks.server.utils.base_pipeline_wrapper import BasePipelineWrapper
from hayhooks.settings import settings
from haystack import Pipeline
from pydantic import Field

from components.checks import MAX_TOP_K
from needle_retrieval.defaults import HAYHOOKS_DIR
from needle_retrieval.index.generations import LAYOUT, verify_own_files
from needle_retrieval.pipelines import files as pf
from needle_retrieval.pipelines.feed import SearchPlan
from needle_retrieval.serve.pipelines import probed_runner
from needle_retrieval.serve.run import check_request_query, run_search

Query = Annotated[str, Field(strict=True)]
TopK = Annotated[int | None, Field(strict=True, ge=1, le=MAX_TOP_K)]
_STORES: dict[str, Any] = {}  # one store per index part for every wrapper of the process (share_stores)
_SETUP = threading.Lock()  # Hayhooks sets pipelines up in a thread pool; the shared stores open one at a time


def served_generation() -> Path:
    """The generation whose ``hayhooks/`` directory Hayhooks was started on (its ``--pipelines-dir``).

    :raises ValueError: If Hayhooks serves another directory; the message says how to start it.
    """
    pipelines_dir = Path(settings.pipelines_dir).resolve()
    generation = pipelines_dir.parent
    if pipelines_dir.name != HAYHOOKS_DIR or not (generation / "manifest.json").is_file():
        raise ValueError(
            f"needle's Hayhooks pipelines are served from an index generation's {HAYHOOKS_DIR}/ directory: "
            f"start `hayhooks run --pipelines-dir DIR/gen-NNNNNN/{HAYHOOKS_DIR}`, not --pipelines-dir "
            f"{settings.pipelines_dir}"
        )
    return generation


class SearchPipelineWrapper(BasePipelineWrapper):  # type: ignore[misc]  # hayhooks ships no type information
    """One search pipeline of an index generation, for Hayhooks; a generated subclass names its file."""

    pipeline_file = ""  # the generation's <mode>_search.yaml this wrapper serves

    def setup(self) -> None:
        """Build the generation's pipeline with its stores under DIR, warm it up and answer a probe query."""
        generation = served_generation()
        verify_own_files(generation, LAYOUT.read_manifest(generation))  # the YAML is data someone may have edited
        path = generation / self.pipeline_file
        data = pf.rebased(yaml.safe_load(path.read_text(encoding="utf-8")), generation.parent)
        self.name = path.stem
        pipeline = pf.build(data)
        with _SETUP:
            self.runner = probed_runner(pipeline, SearchPlan.of(data), _STORES)
        self.pipeline: Pipeline = pipeline

    async def run_api_async(self, query: Query, top_k: TopK = None) -> dict[str, Any]:
        """
        Search the index: the best documents for the query, best first.

        :param query: The query: 1 to 1,048,576 characters, not all blank.
        :param top_k: How many documents to return, 1 to 10,000 (default: the pipeline's own).
        """
        check_request_query(query)
        return await run_search(self.name, self.runner, query, top_k)
