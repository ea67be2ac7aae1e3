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

Each wrapper checks the generation's manifest and own files against their seal and the sha256 they record (an edited
file is named), builds the pipeline its YAML file holds the way `needle serve` builds it, from the manifest's
checked fields with the stores under DIR (the file is what a user reads or loads; a file's component types and
parameters are whoever wrote it's choice, so it is not what runs), refuses what the index may not choose on its own
(model code, a server, a key variable: allowed only by the ``NEEDLE_*`` variables, ``needle_retrieval.index.trust``),
shares one store object per index part with the other wrappers of the process (the index is opened once, as
`needle serve` does), warms up and answers a probe query at start-up. Any failure ends `hayhooks run` with exit
status 1 and one line naming the pipeline and the cause, rather than a server missing a pipeline.
``POST /<mode>_search/run`` takes ``{"query": ..., "top_k"?: ..., "query_instruction"?: ..., "tenant"?: ...}`` and
answers Hayhooks' ``{"result": {component: {"documents": [...]}}}``, fed and run as `needle serve` runs its pipelines
(``needle_retrieval.pipelines.feed``, ``needle_retrieval.pipelines.runner``): ``top_k`` (1 to 10,000) goes to the
answering component and the candidate generators before it keep at least their own count, and the query embedder
puts ``query_instruction`` in front of the query in place of the index's own (``""``: none; left out: the index's, by
the rule of ``needle_retrieval.pipelines.feed``), and a ``tenant`` keeps the search to that tenant's documents, as
`needle search --tenant` does (``needle_retrieval.serve.run.request_filters``: a value that flag refuses, or an index
that records no tenant field, is a 422); a blank, empty or invalid-Unicode query or instruction, or a bad
``top_k``, is a 422 with a message, a query or instruction over 1 MiB characters a 413.
"""

import os
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, NoReturn

from hayhooks.server.utils.base_pipeline_wrapper import BasePipelineWrapper
from hayhooks.settings import settings
from haystack import Pipeline
from pydantic import Field

from components.checks import MAX_TOP_K
from needle_retrieval.defaults import HAYHOOKS_DIR
from needle_retrieval.errors import one_line
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.search.opening import open_search
from needle_retrieval.serve.pipelines import root_cause
from needle_retrieval.serve.run import check_request_instruction, check_request_query, request_filters, run_search

Query = Annotated[str, Field(strict=True)]
TopK = Annotated[int | None, Field(strict=True, ge=1, le=MAX_TOP_K)]
Instruction = Annotated[str | None, Field(strict=True)]
Tenant = Annotated[str | None, Field(strict=True)]
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
        """Build the generation's pipeline with its stores under DIR, warm it up and answer a probe query; if any of
        that fails, say why in one line and end `hayhooks run` (exit status 1) rather than serve without it."""
        try:
            self._setup()
        except Exception as error:
            stop_hayhooks(f"{self.pipeline_file}: {one_line(root_cause(error))}")

    def _setup(self) -> None:
        """Build the pipeline from the generation's manifest as `needle serve` does, never from the YAML file:
        whoever wrote the index chose the file's component types and parameters, while the manifest's fields are
        checked one by one and what they may make a search use is the user's to allow (``NEEDLE_*`` variables,
        ``needle_retrieval.index.trust``)."""
        generation = served_generation()
        manifest = IndexManifest.of_generation(generation)
        self.name = Path(self.pipeline_file).stem
        mode = self.name.removesuffix("_search")
        with _SETUP:
            opened = open_search(
                generation.parent, mode, batch=False, manifest=manifest, stores=_STORES, wrap_errors=True
            )
        self.runner = opened.runner
        self.pipeline: Pipeline = opened.pipeline
        self.manifest, self.index_dir = manifest, generation.parent

    async def run_api_async(
        self, query: Query, top_k: TopK = None, query_instruction: Instruction = None, tenant: Tenant = None
    ) -> dict[str, Any]:
        """
        Search the index: the best documents for the query, best first.

        :param query: The query: 1 to 1,048,576 characters, not all blank.
        :param top_k: How many documents to return, 1 to 10,000 (default: the pipeline's own).
        :param query_instruction: Put in front of the query by the query embedder, in place of the index's own;
            "" for none (default: the index's own). BM25 ignores it.
        :param tenant: Search only this tenant's documents, on an index built with `needle index --tenant-field`
            (default: every document).
        """
        check_request_query(query)
        check_request_instruction(query_instruction)
        filters = request_filters(tenant, self.manifest, self.index_dir)
        return await run_search(self.name, self.runner, query, top_k, query_instruction, filters)


def stop_hayhooks(reason: str) -> NoReturn:
    """End the `hayhooks run` process with exit status 1 after one line on stderr: Hayhooks would log the failed
    pipeline and go on serving the others, and a server missing a pipeline it was started for looks healthy to
    whoever probes ``/status``. It runs during Hayhooks' start-up deployment, so no request is cut short."""
    print(f"needle: hayhooks cannot serve {reason}", file=sys.stderr, flush=True)
    os._exit(1)
