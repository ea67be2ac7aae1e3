"""The name that the Hayhooks wrappers of index generations built before needle's folders import.

Their ``hayhooks/<mode>_search/pipeline_wrapper.py`` says ``from needle.hayhooks_wrapper import SearchPipelineWrapper``
(and its bytes are recorded in their manifests, so it cannot be rewritten); new generations import it from
``needle.serve.hayhooks``, where it lives.
"""

from needle.serve.hayhooks import SearchPipelineWrapper

__all__ = ["SearchPipelineWrapper"]
