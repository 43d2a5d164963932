"""LangChain integration (extra `langchain`, needs langchain-core).

- `FedsearchRetriever`: a `BaseRetriever` whose `invoke(question)` runs one federated Search and
  returns one `Document` per fused hit (`page_content` = title + snippet; `metadata` = citation,
  source, that source's status, the hit's fields, every source's status, trace id).
- `search_tools(client)`: one `StructuredTool` per source the user may use plus the federated
  `search` tool (see `fedsearch.tools`); each returns the JSON result for the model as content and
  the `Document`s as the tool message's artifact.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, Optional

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field, create_model

from fedsearch.client import Client
from fedsearch.tools import MAX_TOP_K, SearchTool, hit_metadata, result_json, tools_from_sources
from fedsearch.v1 import search_pb2

__all__ = ["FedsearchRetriever", "documents_from_response", "search_tools", "langchain_tool"]


def documents_from_response(response: search_pb2.SearchResponse) -> list[Document]:
    """One Document per fused hit, in rank order."""
    return [
        Document(
            id=hit.id,
            page_content=f"{hit.title}\n{hit.snippet}".strip(),
            metadata=hit_metadata(n, hit, response),
        )
        for n, hit in enumerate(response.hits, 1)
    ]


class FedsearchRetriever(BaseRetriever):
    """Federated search as a LangChain retriever, as the client's user.

    `sources` limits the search to those sources (empty = the router chooses); `filters` are
    JSON-shaped `Filters` (see `fedsearch.client.FilterArgs`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Client
    top_k: int = Field(default=10, ge=1, le=MAX_TOP_K)
    sources: list[str] = Field(default_factory=list)
    filters: Optional[dict[str, Any]] = None
    time_zone: str = ""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        response = self.client.search(
            query, top_k=self.top_k, sources=self.sources, filters=self.filters, time_zone=self.time_zone
        )
        return documents_from_response(response)


class _TimeRange(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    from_: Optional[str] = Field(default=None, alias="from", description="ISO-8601 date-time")
    to: Optional[str] = Field(default=None, description="ISO-8601 date-time")


_FILTER_FIELDS: dict[str, tuple[Any, Any]] = {
    "time_range": (Optional[_TimeRange], Field(default=None, description="Only documents updated in this window.")),
    "doc_types": (Optional[list[str]], Field(default=None, description="Only these document types.")),
    "tags": (Optional[list[str]], Field(default=None, description="Only documents with one of these tags.")),
    "equals": (Optional[dict[str, str]], Field(default=None, description="Exact field values.")),
}


def args_schema(tool: SearchTool) -> type[BaseModel]:
    """The pydantic model of a tool's arguments: only the filters the tool offers."""
    fields: dict[str, Any] = {
        "query": (str, Field(min_length=1, max_length=1024, description="The question or keywords, in the user's language.")),
        "top_k": (Optional[int], Field(default=None, ge=1, le=MAX_TOP_K, description="How many hits (default 10).")),
    }
    base = "".join(p.title() for p in tool.name.split("_"))
    if tool.filters:
        filters_model = create_model(  # type: ignore[call-overload]
            f"{base}Filters",
            __config__=ConfigDict(extra="forbid"),
            **{f: _FILTER_FIELDS[f] for f in tool.filters},
        )
        fields["filters"] = (Optional[filters_model], Field(default=None, description="Optional filters."))
    if tool.source is None and tool.sources:
        names: Any = Literal[tuple(tool.sources)]
        fields["sources"] = (
            Optional[list[names]],
            Field(default=None, description="Only these sources (default: the router picks)."),
        )
    model: type[BaseModel] = create_model(
        f"{base}Args", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def _plain(value: Any) -> Any:
    """Validated pydantic values back to their JSON shape (`from_` → `from`), Nones dropped."""
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True)
    return value


def langchain_tool(client: Client, tool: SearchTool, *, context_tokens: int = 0) -> BaseTool:
    """A StructuredTool that runs `tool` (`search_<source>` → `Search{sources:[<source>]}`)."""

    def run(**kwargs: Any) -> tuple[str, list[Document]]:
        arguments = {k: _plain(v) for k, v in kwargs.items() if v is not None}
        options = tool.search_options(arguments)
        if context_tokens:
            options["context_tokens"] = context_tokens
        response = client.search(**options)
        return json.dumps(result_json(response), ensure_ascii=False), documents_from_response(response)

    return StructuredTool.from_function(
        func=run,
        name=tool.name,
        description=tool.description,
        args_schema=args_schema(tool),
        response_format="content_and_artifact",
    )


def search_tools(
    client: Client, *, tools: Sequence[SearchTool] | None = None, context_tokens: int = 0
) -> list[BaseTool]:
    """The tools the client's user may call: one per permitted source (from ListSources) plus
    the federated `search`."""
    return [
        langchain_tool(client, t, context_tokens=context_tokens)
        for t in (tools or tools_from_sources(client.list_sources()))
    ]
