"""A small typed wrapper over `fedsearch.v1.FederatedSearch`.

Every call sends `authorization: Bearer <token>`, the token taken from the token provider at that
moment (so a provider can refresh it), and failures raise `fedsearch.errors.FedsearchError`.
Responses are the generated protobuf messages (typed by their `.pyi` stubs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

import grpc
from google.protobuf import duration_pb2, timestamp_pb2

from fedsearch.errors import from_rpc_error
from fedsearch.types.v1 import types_pb2
from fedsearch.v1 import search_pb2, search_pb2_grpc

TokenProvider = Callable[[], str]
"""Returns the end user's bearer token (a JWT, without the `Bearer ` prefix); called per request."""

FilterArgs = Mapping[str, Any]
"""JSON-shaped filters: `{"time_range": {"from": ISO-8601, "to": ISO-8601}, "doc_types": [...],
"tags": [...], "equals": {field: value}}`; every key optional."""

FILTER_NAMES: tuple[str, ...] = ("time_range", "doc_types", "tags", "equals")

_T = TypeVar("_T")


def state_name(state: int) -> str:
    """`SOURCE_STATE_DENIED` → `DENIED`."""
    return types_pb2.SourceState.Name(state).removeprefix("SOURCE_STATE_")


def timestamp(value: datetime | str) -> timestamp_pb2.Timestamp:
    """An aware datetime or an ISO-8601 string (`Z` allowed; naive means UTC) as a Timestamp."""
    if isinstance(value, str):
        # Python 3.10's fromisoformat does not take a trailing Z.
        when = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    else:
        when = value
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(when.astimezone(timezone.utc))
    return ts


def filters_from_args(args: FilterArgs | types_pb2.Filters | None) -> types_pb2.Filters | None:
    """Builds `Filters` from its JSON shape; unknown keys raise ValueError."""
    if args is None or isinstance(args, types_pb2.Filters):
        return args
    unknown = set(args) - set(FILTER_NAMES)
    if unknown:
        raise ValueError(f"unknown filter(s) {sorted(unknown)}; known: {list(FILTER_NAMES)}")
    f = types_pb2.Filters()
    tr = args.get("time_range")
    if tr:
        extra = set(tr) - {"from", "to"}
        if extra:
            raise ValueError(f"time_range takes only `from` and `to`, not {sorted(extra)}")
        if tr.get("from"):
            getattr(f.time_range, "from").CopyFrom(timestamp(tr["from"]))
        if tr.get("to"):
            f.time_range.to.CopyFrom(timestamp(tr["to"]))
    f.doc_types.extend(args.get("doc_types") or ())
    f.tags.extend(args.get("tags") or ())
    for k, v in (args.get("equals") or {}).items():
        f.equals[str(k)] = str(v)
    return f


class Client:
    """A connection to the router's public API, acting for one end user.

    `target` is `host:port` (an `http://` prefix is accepted). `token` is a fixed bearer token or
    a `TokenProvider`. `timeout` (seconds) is the default gRPC deadline of each call.
    `credentials` switches to TLS; `channel` lets you pass a channel you built yourself.
    """

    def __init__(
        self,
        target: str,
        token: str | TokenProvider,
        *,
        timeout: float | None = 30.0,
        credentials: grpc.ChannelCredentials | None = None,
        channel: grpc.Channel | None = None,
    ) -> None:
        target = target.removeprefix("http://").removeprefix("https://")
        if isinstance(token, str):
            fixed = token
            self._token: TokenProvider = lambda: fixed
        else:
            self._token = token
        self._timeout = timeout
        if channel is None:
            channel = grpc.secure_channel(target, credentials) if credentials else grpc.insecure_channel(target)
        self._channel = channel
        # The generated gRPC stub is untyped; the methods below give it types.
        make_stub: Any = search_pb2_grpc.FederatedSearchStub
        self._stub = make_stub(channel)

    # ---- plumbing ----------------------------------------------------------------------------
    def _metadata(self) -> list[tuple[str, str]]:
        token = self._token()
        return [("authorization", f"Bearer {token}")]

    def _call(self, method: Callable[..., _T], request: Any, timeout: float | None) -> _T:
        try:
            return method(request, metadata=self._metadata(), timeout=timeout if timeout is not None else self._timeout)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the API -----------------------------------------------------------------------------
    @staticmethod
    def search_request(
        query: str,
        *,
        sources: Sequence[str] = (),
        top_k: int = 0,
        filters: FilterArgs | types_pb2.Filters | None = None,
        context_tokens: int = 0,
        time_zone: str = "",
        as_of: datetime | str | None = None,
        fusion: types_pb2.FusionOptions | None = None,
        source_params: Mapping[str, search_pb2.SourceParams] | None = None,
        source_credentials: Mapping[str, str] | None = None,
        search_timeout: float | None = None,
    ) -> search_pb2.SearchRequest:
        """The `SearchRequest` that `search` and `search_stream` send."""
        req = search_pb2.SearchRequest(query=query, top_k=top_k, sources=list(sources), time_zone=time_zone)
        f = filters_from_args(filters)
        if f is not None:
            req.filters.CopyFrom(f)
        if context_tokens:
            req.context.token_budget = context_tokens
        if as_of is not None:
            req.as_of.CopyFrom(timestamp(as_of))
        if fusion is not None:
            req.fusion.CopyFrom(fusion)
        for name, params in (source_params or {}).items():
            req.source_params[name].CopyFrom(params)
        for name, secret in (source_credentials or {}).items():
            req.source_credentials[name].value = secret
        if search_timeout is not None:
            d = duration_pb2.Duration()
            d.FromMilliseconds(int(search_timeout * 1000))
            req.timeout.CopyFrom(d)
        return req

    def search(self, query: str, *, timeout: float | None = None, **options: Any) -> search_pb2.SearchResponse:
        """Fused, cited hits with a status per source. Options are those of `search_request`:
        `sources` (empty = the router chooses), `top_k`, `filters`, `context_tokens` (pack an
        agent context of that many tokens), `time_zone`, `as_of`, `fusion`, `source_params`,
        `source_credentials`, `search_timeout` (seconds, the router's own limit)."""
        response: search_pb2.SearchResponse = self._call(self._stub.Search, self.search_request(query, **options), timeout)
        return response

    def search_stream(self, query: str, *, timeout: float | None = None, **options: Any) -> Iterator[search_pb2.SearchEvent]:
        """The routing decision, each source's status as it happens, fused snapshots, then the
        final `SearchResponse` (`event.WhichOneof("event") == "result"`)."""
        request = self.search_request(query, **options)
        try:
            stream = self._stub.SearchStream(
                request, metadata=self._metadata(), timeout=timeout if timeout is not None else self._timeout
            )
            yield from stream
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None

    def get_document(
        self, full_text_ref: str, *, source_credentials: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> search_pb2.Document:
        """The full text of a hit by its `full_text_ref`; the source re-checks permission now."""
        req = search_pb2.GetDocumentRequest(full_text_ref=full_text_ref)
        for name, secret in (source_credentials or {}).items():
            req.source_credentials[name].value = secret
        doc: search_pb2.Document = self._call(self._stub.GetDocument, req, timeout)
        return doc

    def list_sources(self, *, timeout: float | None = None) -> list[search_pb2.SourceInfo]:
        """The sources this user may use (and only those)."""
        return list(self._call(self._stub.ListSources, search_pb2.ListSourcesRequest(), timeout).sources)

    def feedback(
        self,
        trace_id: str,
        query: str,
        used: Sequence[str] = (),
        *,
        rejected: Sequence[str] = (),
        shown: Sequence[str] = (),
        timeout: float | None = None,
    ) -> int:
        """Reports which hit ids (`<source>:<local id>`) of the search `trace_id` were used or
        rejected; returns how many were recorded."""
        req = search_pb2.FeedbackRequest(
            trace_id=trace_id, query=query, used=list(used), rejected=list(rejected), shown=list(shown)
        )
        return int(self._call(self._stub.Feedback, req, timeout).recorded)
