"""The search pipelines `needle serve` deploys: built in memory from an index's manifest, fixed at start-up.

Each servable mode becomes one Hayhooks ``YAMLPipelineWrapper`` in an ``ImmutablePipelineRegistry`` (Hayhooks'
registry of durable mode, which has no deploy or undeploy path). Each is opened by
``needle_retrieval.search.opening.open_search``, the opening of every entry point, from the manifest read once at
start-up (its checks: parts, document counts, dimension, and a probe query before the server starts, because the
stores load lazily: a broken index part must stop the start-up, not the first user's query), on document stores
shared by every pipeline of the server; the YAML is its in-memory dict, never a file in the index directory, and
nothing is saved anywhere. Every pipeline carries one fusion setting (``needle_retrieval.pipelines.fusion``), chosen
once at start-up: the index's own, or the one `needle serve --fusion` names. Each runs through its ``SearchRunner``
(``needle_retrieval.pipelines.runner``), the engine of every entry point. A server started with `needle serve
--tenant T` builds every pipeline with T's filter (``SearchKnobs.tenant``), so each searches T's documents only.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hayhooks.server.pipelines.models import create_pipeline_metadata
from hayhooks.server.pipelines.registry import (
    ImmutablePipelineRegistry,
    PipelineRegistration,
)
from hayhooks.server.utils.yaml_pipeline_wrapper import YAMLPipelineWrapper

import components  # noqa: F401  (allowlists our component modules for Pipeline.loads)
from needle_retrieval.defaults import MODES
from needle_retrieval.errors import NeedleError, one_line
from needle_retrieval.index.manifest import IndexManifest
from needle_retrieval.index.trust import Trust
from needle_retrieval.pipelines.feed import SearchPlan
from needle_retrieval.pipelines.fusion import FusionSetting, index_fusion
from needle_retrieval.pipelines.runner import SearchRunner
from needle_retrieval.search.inputs import tenant_field_of, tenant_filters
from needle_retrieval.search.opening import PROBE_QUERY as PROBE_QUERY  # kept where it was
from needle_retrieval.search.opening import SearchKnobs, open_search
from needle_retrieval.search.opening import share_stores as share_stores  # kept where it was

FUSED_MODES = ("hybrid", "rrf")  # modes that fuse the dense part with another (learned sparse, else BM25)


@dataclass(frozen=True)
class ServedPipelines:
    """The registry Hayhooks' status route reads, the runner of each pipeline in it, and the index they search."""

    registry: ImmutablePipelineRegistry
    runners: dict[str, SearchRunner]  # by pipeline name, e.g. hybrid_search
    index_dir: Path
    manifest: IndexManifest
    stores: dict[str, Any]  # one document store per configuration, shared by every pipeline (share_stores)
    fusion: FusionSetting  # the fusion parameters every pipeline was built with
    trust: Trust | None = None  # what the user allows the index to use (None: the NEEDLE_* variables)
    # the mode UltraRAG's /search and retriever_search answer in (needle serve --ultrarag-mode); None: dense first
    ultrarag_mode: str | None = None
    tenant: str | None = None  # the one tenant every pipeline searches (needle serve --tenant); None: every document

    @property
    def plans(self) -> dict[str, SearchPlan]:
        """How each pipeline is fed, by pipeline name."""
        return {name: runner.plan for name, runner in self.runners.items()}

    @property
    def takes_tenant(self) -> bool:
        """Whether a request may name a tenant: the server serves one, or the index records a tenant field."""
        return self.tenant is not None or tenant_field_of(self.manifest) is not None


def servable_modes(manifest: IndexManifest) -> list[str]:
    """The search modes this index has every part for, in MODES order (a fused mode needs ``fused_side``)."""
    parts = set(manifest.modes)
    return [mode for mode in MODES if (manifest.fused_side is not None if mode in FUSED_MODES else mode in parts)]


def root_cause(error: BaseException) -> BaseException:
    """The innermost error of a wrapped chain (Hayhooks' ValueError, Haystack's PipelineRuntimeError, ...)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def deploy(
    index_dir: Path,
    manifest: IndexManifest,
    name: str,
    stores: dict[str, Any],
    fusion: FusionSetting,
    trust: Trust | None = None,
    tenant: str | None = None,
) -> tuple[PipelineRegistration, SearchRunner]:
    """Build, warm up and probe the pipeline ``<name>_search``, using only what TRUST allows (None: the NEEDLE_*
    variables, ``needle_retrieval.index.trust``), searching TENANT's documents only (None: all); any failure is a
    NeedleError naming it."""
    pipeline_name = f"{name}_search"
    try:
        knobs = SearchKnobs(fusion, trust, tenant=tenant)
        opened = open_search(
            index_dir, name, batch=False, knobs=knobs, manifest=manifest, stores=stores, wrap_errors=True
        )
        wrapper = YAMLPipelineWrapper.from_yaml(yaml.safe_dump(opened.data, sort_keys=False), description=pipeline_name)
        wrapper.pipeline = opened.pipeline  # what the status routes describe is what runs (setup builds no other)
    except Exception as error:
        cause = root_cause(error)
        raise NeedleError(f"pipeline {pipeline_name} failed to deploy from {index_dir}: {one_line(cause)}") from error
    metadata = {**create_pipeline_metadata(pipeline_name, wrapper), "description": pipeline_name}
    return PipelineRegistration(pipeline_name, wrapper, metadata), opened.runner


def deploy_all(
    index_dir: Path,
    fusion: FusionSetting | None = None,
    trust: Trust | None = None,
    ultrarag_mode: str | None = None,
    tenant: str | None = None,
) -> ServedPipelines:
    """Every servable search pipeline of INDEX_DIR, or a NeedleError: never a server with no pipeline.

    ``fusion``: the fusion parameters of every pipeline; None: the index's own (DIR/fusion.json or the defaults),
    read once here, so that every pipeline of the server has the same. ``trust``: what the index may use
    (``needle_retrieval.index.trust``; None: what the NEEDLE_* variables allow). ``ultrarag_mode``: the mode
    UltraRAG's ``/search`` and ``retriever_search`` answer in (``needle serve --ultrarag-mode``), one this index
    serves, checked before anything loads; None: its dense part (``needle_retrieval.serve.ultrarag``). ``tenant``:
    the one tenant every pipeline searches (`needle serve --tenant`; an index that records no tenant field is refused
    before anything loads); None: every document.
    """
    manifest = IndexManifest.load(index_dir)
    modes = servable_modes(manifest)
    if not modes:
        raise NeedleError(f"index {index_dir} has no searchable part (modes: {manifest.modes or 'none'})")
    if ultrarag_mode is not None and ultrarag_mode not in modes:
        raise NeedleError(f"--ultrarag-mode {ultrarag_mode}: index {index_dir} serves {', '.join(modes)}")
    if tenant is not None:
        tenant_filters(manifest, tenant, Path(index_dir))  # no tenant field: say how to build one, before loading
    setting = index_fusion(Path(index_dir)) if fusion is None else fusion
    stores: dict[str, Any] = {}
    deployed = [deploy(index_dir, manifest, mode, stores, setting, trust, tenant) for mode in modes]
    registry = ImmutablePipelineRegistry(registration for registration, _ in deployed)
    runners = {registration.name: runner for registration, runner in deployed}
    return ServedPipelines(
        registry, runners, Path(index_dir), manifest, stores, setting, trust, ultrarag_mode, tenant
    )  # fmt: skip
