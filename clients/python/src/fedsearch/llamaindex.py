"""LlamaIndex integration (extra `llamaindex`, needs llama-index-core).

`FedsearchRetriever(client).retrieve(question)` runs one federated Search and returns one
`NodeWithScore` per fused hit: a `TextNode` (id = hit id, text = title + snippet, metadata as in
`fedsearch.tools.hit_metadata`) scored by the fused score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from fedsearch.client import Client, FilterArgs
from fedsearch.tools import hit_metadata
from fedsearch.v1 import search_pb2

__all__ = ["FedsearchRetriever", "nodes_from_response"]

# Kept out of what an embedding or an LLM sees of a node: bookkeeping, not content.
_EXCLUDED_KEYS = [
    "id",
    "fused_score",
    "rank",
    "rank_in_source",
    "duplicates",
    "source_statuses",
    "source_messages",
    "trace_id",
    "full_text_ref",
]


def nodes_from_response(response: search_pb2.SearchResponse) -> list[NodeWithScore]:
    """One scored node per fused hit, in rank order."""
    nodes = []
    for n, hit in enumerate(response.hits, 1):
        node = TextNode(
            id_=hit.id,
            text=f"{hit.title}\n{hit.snippet}".strip(),
            metadata=hit_metadata(n, hit, response),
            excluded_embed_metadata_keys=list(_EXCLUDED_KEYS),
            excluded_llm_metadata_keys=list(_EXCLUDED_KEYS),
        )
        nodes.append(NodeWithScore(node=node, score=hit.fused_score))
    return nodes


class FedsearchRetriever(BaseRetriever):
    """Federated search as a LlamaIndex retriever, as the client's user."""

    def __init__(
        self,
        client: Client,
        *,
        top_k: int = 10,
        sources: Sequence[str] = (),
        filters: FilterArgs | None = None,
        time_zone: str = "",
        callback_manager: CallbackManager | None = None,
        **kwargs: Any,
    ) -> None:
        self._client = client
        self._top_k = top_k
        self._sources = list(sources)
        self._filters = filters
        self._time_zone = time_zone
        super().__init__(callback_manager=callback_manager, **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        response = self._client.search(
            query_bundle.query_str,
            top_k=self._top_k,
            sources=self._sources,
            filters=self._filters,
            time_zone=self._time_zone,
        )
        return nodes_from_response(response)
