"""Query embedder: Haystack's `SentenceTransformersTextEmbedder` plus the UltraRAG seed's query options.

Added on top of Haystack's component (all its parameters keep their meaning):

* `query_instruction` -- the seed's instruction prefix (e.g. bge's "Represent this sentence for searching
  relevant passages: "), prepended before Haystack's own `prefix`; an init parameter (what an index records) and
  a run input that replaces it for one run (a request's instruction);
* `prompt_name` (seed `q_prompt_name`) -- a named prompt from the model's config, e.g. "query";
* `task` (seed `q_task`) -- the route of a sentence-transformers `Router` model, e.g. "query";
* `gpu_ids` -- GPUs to use; the model loads on the first (batch embedders spread work over all of them);
* the default model is all-MiniLM-L6-v2, which resolves to a bundled copy when the hub is out of reach.
"""

from typing import Any

from haystack import component
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersTextEmbedder as HaystackSentenceTransformersTextEmbedder,
)

from components.checks import check_query
from components.embedders.sentence_transformers_common import SentenceTransformersQueryEmbedderBase


@component
class SentenceTransformersTextEmbedder(SentenceTransformersQueryEmbedderBase, HaystackSentenceTransformersTextEmbedder):
    """Embeds one query string with a sentence-transformers model.

    Init parameters, `to_dict` and `from_dict` come from :class:`SentenceTransformersQueryEmbedderBase` (shared
    with the batch embedder); Haystack's class stays a base so the component is still one of Haystack's text
    embedders, with the same `text` input and `embedding` output.

    ```python
    embedder = SentenceTransformersTextEmbedder(query_instruction="query: ", normalize_embeddings=True)
    embedder.warm_up()
    vector = embedder.run(text="what causes scurvy?")["embedding"]
    ```
    """

    _output_socket = ("embedding", list[float])

    def run(self, text: str, query_instruction: str | None = None) -> dict[str, Any]:
        """Embed one query.

        The dense retriever only sees a vector, so the query rules of every mode are applied here, before the
        model is loaded: a blank query would embed to a vector whose neighbours are arbitrary.

        :param text: The query: not blank, at most 1,048,576 characters, valid Unicode.
        :param query_instruction: The instruction for this run, in place of the init parameter's (never on top of
            it; `""`: none); None: the init parameter's.
        :returns: `{"embedding": list[float]}` (a 1-d numpy array with `as_array`).
        :raises ValueError: `text` breaks the query rules of `components.checks` (same message as BM25 and the
            rankers, naming it `query`; a list is pointed to the batch embedder), or `query_instruction` is not a
            string.
        """
        check_query(text)
        queries = self._query_texts([text], query_instruction)
        embeddings = self._encode(queries, show_progress_bar=self.progress_bar, use_pool=False)
        return {"embedding": embeddings[0] if self.as_array else embeddings[0].tolist()}
