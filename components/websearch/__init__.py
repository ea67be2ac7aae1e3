"""Web search components: Exa, Tavily and ZhipuAI, one query or a batch, and ``WebSearch`` choosing among them.

Submodules import on first use (Haystack's LazyImporter pattern), so importing one provider's component never
loads the other providers' SDKs.
"""

import sys
from typing import TYPE_CHECKING

from lazy_imports import LazyImporter

_import_structure = {
    "exa_web_search": ["ExaWebSearch"],
    "exa_batch_web_search": ["ExaBatchWebSearch"],
    "tavily_web_search": ["TavilyWebSearch"],
    "tavily_batch_web_search": ["TavilyBatchWebSearch"],
    "zhipuai_web_search": ["ZhipuAIWebSearch"],
    "zhipuai_batch_web_search": ["ZhipuAIBatchWebSearch"],
    "web_search": ["WebSearch"],
    "web_batch_search": ["WebBatchSearch"],
    "websearch_errors": ["WebSearchError"],
}

if TYPE_CHECKING:
    from .exa_batch_web_search import ExaBatchWebSearch as ExaBatchWebSearch
    from .exa_web_search import ExaWebSearch as ExaWebSearch
    from .tavily_batch_web_search import TavilyBatchWebSearch as TavilyBatchWebSearch
    from .tavily_web_search import TavilyWebSearch as TavilyWebSearch
    from .web_batch_search import WebBatchSearch as WebBatchSearch
    from .web_search import WebSearch as WebSearch
    from .websearch_errors import WebSearchError as WebSearchError
    from .zhipuai_batch_web_search import ZhipuAIBatchWebSearch as ZhipuAIBatchWebSearch
    from .zhipuai_web_search import ZhipuAIWebSearch as ZhipuAIWebSearch
else:
    sys.modules[__name__] = LazyImporter(name=__name__, module_file=__file__, import_structure=_import_structure)
