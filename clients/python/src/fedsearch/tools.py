"""Agent tools built from ListSources, independent of any framework.

One tool per source the user may use (`search_<source>`: `Search` with `sources=[<source>]`, its
arguments offering only the filters that source lists in `supported_filters`) plus one federated
`search` tool (every permitted source, or the ones named in its `sources` argument; filters any
permitted source supports — sources that do not support one say so in their status message).

`Toolbox` turns an OpenAI-style tool call (`{"id", "function": {"name", "arguments": "<json>"}}`)
into the Search call and the answer into a `{"role": "tool", ...}` message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fedsearch.client import FILTER_NAMES, Client, filters_from_args, state_name
from fedsearch.errors import FedsearchError
from fedsearch.types.v1 import types_pb2
from fedsearch.v1 import search_pb2

FEDERATED_TOOL = "search"
MAX_TOP_K = 50

_FILTER_SCHEMAS: dict[str, dict[str, Any]] = {
    "time_range": {
        "type": "object",
        "description": "Only documents updated in this window (ISO-8601 date-times; either end may be left out).",
        "properties": {
            "from": {"type": "string", "format": "date-time"},
            "to": {"type": "string", "format": "date-time"},
        },
        "additionalProperties": False,
    },
    "doc_types": {"type": "array", "items": {"type": "string"}, "description": "Only these document types."},
    "tags": {"type": "array", "items": {"type": "string"}, "description": "Only documents with one of these tags."},
    "equals": {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "Exact field values, e.g. {\"status\": \"open\"}.",
    },
}


class ToolArgumentError(ValueError):
    """The arguments of a tool call do not fit the tool's schema."""


def _spec_function(source: search_pb2.SourceInfo) -> dict[str, Any]:
    """The `function` object of the router's `tool_spec_json`, or {} when it has none."""
    try:
        fn = json.loads(source.tool_spec_json)["function"]
    except (ValueError, KeyError, TypeError):
        return {}
    return fn if isinstance(fn, dict) else {}


def tool_name(source: search_pb2.SourceInfo) -> str:
    """The function name the router's `tool_spec_json` gives this source (`search_<name>`)."""
    name = _spec_function(source).get("name")
    return name if isinstance(name, str) and name else "search_" + source.name.replace("-", "_")


def _tool_description(source: search_pb2.SourceInfo) -> str:
    text = _spec_function(source).get("description")
    if isinstance(text, str) and text:
        return text
    parts = [source.description]
    if source.when_to_use:
        parts.append(f"Use when: {source.when_to_use}")
    if source.when_not_to_use:
        parts.append(f"Do not use when: {source.when_not_to_use}")
    return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class SearchTool:
    """One search tool: `source` set = that source only; `source` None = federated."""

    name: str
    description: str
    source: str | None
    filters: tuple[str, ...]
    sources: tuple[str, ...] = field(default=())
    """For the federated tool: the source names its `sources` argument may take."""

    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments."""
        props: dict[str, Any] = {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "description": "The question or keywords, in the user's language.",
            },
            "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "description": "How many hits (default 10)."},
        }
        if self.filters:
            props["filters"] = {
                "type": "object",
                "properties": {f: _FILTER_SCHEMAS[f] for f in self.filters},
                "additionalProperties": False,
            }
        if self.source is None and self.sources:
            props["sources"] = {
                "type": "array",
                "items": {"type": "string", "enum": list(self.sources)},
                "description": "Only these sources (default: the router picks among all you may use).",
            }
        return {"type": "object", "properties": props, "required": ["query"], "additionalProperties": False}

    def openai_spec(self) -> dict[str, Any]:
        """`{"type": "function", "function": {...}}` for OpenAI-style function calling."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters()},
        }

    def search_options(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments of one call as `Client.search` keyword arguments (query included).

        `search_orders({"query": q, "filters": {...}})` becomes
        `{"query": q, "sources": ["orders"], "filters": {...}}`, i.e. `Search{sources:[orders]}`.
        """
        allowed = set(self.parameters()["properties"])
        unknown = set(arguments) - allowed
        if unknown:
            raise ToolArgumentError(f"{self.name} takes {sorted(allowed)}, not {sorted(unknown)}")
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolArgumentError(f"{self.name} needs a non-empty string `query`")
        options: dict[str, Any] = {"query": query}
        top_k = arguments.get("top_k")
        if top_k is not None:
            if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
                raise ToolArgumentError(f"top_k must be an integer from 1 to {MAX_TOP_K}")
            options["top_k"] = top_k
        filters = arguments.get("filters")
        if filters:
            if not isinstance(filters, Mapping):
                raise ToolArgumentError("filters must be an object")
            offered = set(self.filters)
            not_offered = set(filters) - offered
            if not_offered:
                raise ToolArgumentError(
                    f"{self.name} supports the filters {sorted(offered) or 'none'}, not {sorted(not_offered)}"
                )
            try:
                filters_from_args(filters)
            except (ValueError, TypeError) as e:
                raise ToolArgumentError(f"filters: {e}") from None
            options["filters"] = dict(filters)
        if self.source is not None:
            options["sources"] = [self.source]
        elif arguments.get("sources"):
            names = arguments["sources"]
            if not isinstance(names, list) or any(n not in self.sources for n in names):
                raise ToolArgumentError(f"sources must be a list drawn from {list(self.sources)}")
            options["sources"] = list(names)
        return options


def tools_from_sources(sources: Sequence[search_pb2.SourceInfo]) -> list[SearchTool]:
    """One tool per source, then the federated `search` tool."""
    tools = [
        SearchTool(
            name=tool_name(s),
            description=_tool_description(s),
            source=s.name,
            filters=tuple(f for f in FILTER_NAMES if f in s.supported_filters),
        )
        for s in sources
    ]
    union = {f for s in sources for f in s.supported_filters}
    names = ", ".join(s.name for s in sources)
    tools.append(
        SearchTool(
            name=FEDERATED_TOOL,
            description=(
                "Federated search: one question, asked of every relevant source you may use at once "
                f"({names}); returns fused, deduplicated, cited hits and a status per source. A filter is "
                "applied only by the sources that support it."
            ),
            source=None,
            filters=tuple(f for f in FILTER_NAMES if f in union),
            sources=tuple(s.name for s in sources),
        )
    )
    return tools


def hit_citation(n: int, hit: types_pb2.Hit) -> str:
    """`[n] <title> (<hit id>, <date>) <url>` — what an answer cites."""
    date = hit.updated_at.ToDatetime().date().isoformat() if hit.HasField("updated_at") else ""
    inner = ", ".join(p for p in (hit.id, date) if p)
    return " ".join(p for p in (f"[{n}]", hit.title, f"({inner})", hit.url) if p)


def hit_metadata(n: int, hit: types_pb2.Hit, response: search_pb2.SearchResponse) -> dict[str, Any]:
    """What a framework document carries besides its text: the citation, the source and its
    status in this search, the hit's own fields, the statuses of every source asked and the
    trace id."""
    statuses = {s.source: state_name(s.state) for s in response.sources}
    messages = {s.source: s.message for s in response.sources if s.message}
    meta: dict[str, Any] = {
        "id": hit.id,
        "citation": hit_citation(n, hit),
        "source": hit.source,
        "source_status": statuses.get(hit.source, "UNSPECIFIED"),
        "title": hit.title,
        "url": hit.url,
        "updated_at": hit.updated_at.ToJsonString() if hit.HasField("updated_at") else None,
        "doc_type": hit.doc_type,
        "full_text_ref": hit.full_text_ref,
        "fused_score": hit.fused_score,
        "rank": n,
        "rank_in_source": hit.rank_in_source,
        "version_status": hit.version.status or None,
        "superseded_by": hit.version.superseded_by or None,
        "duplicates": [d.source + ":" + d.id for d in hit.duplicates],
        "metadata": dict(hit.metadata),
        "source_statuses": statuses,
        "source_messages": messages,
        "trace_id": response.trace_id,
    }
    return meta


def result_json(response: search_pb2.SearchResponse) -> dict[str, Any]:
    """A compact JSON-able view of a response for a model: cited hits and per-source status."""
    hits = []
    for n, h in enumerate(response.hits, 1):
        item: dict[str, Any] = {
            "citation": f"[{n}]",
            "id": h.id,
            "source": h.source,
            "title": h.title,
            "snippet": h.snippet,
        }
        if h.url:
            item["url"] = h.url
        if h.HasField("updated_at"):
            item["updated_at"] = h.updated_at.ToJsonString()
        if h.full_text_ref:
            item["full_text_ref"] = h.full_text_ref
        if h.version.superseded_by:
            item["superseded_by"] = h.version.superseded_by
        hits.append(item)
    sources = [
        {"source": s.source, "state": state_name(s.state), "hits": s.hit_count, **({"message": s.message} if s.message else {})}
        for s in response.sources
    ]
    out: dict[str, Any] = {"hits": hits, "sources": sources, "trace_id": response.trace_id}
    if response.context.text:
        out["context"] = response.context.text
    return out


class Toolbox:
    """The tools a user may call, and their dispatch.

    `Toolbox(client)` asks ListSources as the client's user; `specs()` are the OpenAI-style
    function specs to send with a chat request; `call(name, arguments)` runs one tool;
    `tool_message(tool_call)` answers one tool call of an assistant message.
    """

    def __init__(self, client: Client, tools: Sequence[SearchTool] | None = None, *, context_tokens: int = 0) -> None:
        self.client = client
        self.tools: dict[str, SearchTool] = {t.name: t for t in (tools or tools_from_sources(client.list_sources()))}
        self.context_tokens = context_tokens

    def specs(self) -> list[dict[str, Any]]:
        return [t.openai_spec() for t in self.tools.values()]

    def call(self, name: str, arguments: str | Mapping[str, Any]) -> search_pb2.SearchResponse:
        """Runs tool `name`; raises ToolArgumentError or FedsearchError."""
        tool = self.tools.get(name)
        if tool is None:
            raise ToolArgumentError(f"no tool {name!r}; tools: {sorted(self.tools)}")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except ValueError as e:
                raise ToolArgumentError(f"arguments are not JSON: {e}") from None
        if not isinstance(arguments, Mapping):
            raise ToolArgumentError("arguments must be a JSON object")
        options = tool.search_options(arguments)
        if self.context_tokens:
            options["context_tokens"] = self.context_tokens
        return self.client.search(**options)

    def tool_message(self, tool_call: Mapping[str, Any]) -> dict[str, Any]:
        """`{"role": "tool", "tool_call_id": ..., "content": "<json>"}` for one tool call; a bad
        call or a refused request becomes an `error` the model can read and correct."""
        fn = tool_call.get("function") or {}
        try:
            content: dict[str, Any] = result_json(self.call(str(fn.get("name", "")), fn.get("arguments") or "{}"))
        except ToolArgumentError as e:
            content = {"error": str(e)}
        except FedsearchError as e:
            content = {"error": e.message, "code": e.code.name, **({"reason": e.reason} if e.reason else {})}
        return {"role": "tool", "tool_call_id": tool_call.get("id", ""), "content": json.dumps(content, ensure_ascii=False)}
