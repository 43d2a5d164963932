"""The typed wrapper against the live router: search, search_stream, get_document, list_sources,
feedback, the token provider, and errors as exceptions."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import grpc
import pytest
from conftest import PERMITTED, mint
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from fedsearch import (
    Client,
    FedsearchError,
    InvalidArgumentError,
    UnauthenticatedError,
    state_name,
)
from fedsearch.errors import error_from_status

ORDER_QUESTION = "SO20261007 拒收手续费"


def test_search_returns_fused_cited_hits_and_a_status_per_source(client_for):
    r = client_for("alice").search(ORDER_QUESTION, top_k=8)
    assert r.trace_id
    assert 0 < len(r.hits) <= 8
    assert all(h.id.startswith(h.source + ":") for h in r.hits)
    assert any(h.source == "orders" and "SO20261007" in (h.id + h.title + h.snippet) for h in r.hits)
    # Exactly one status per selected source, each a known state.
    selected = [s.source for s in r.routing.selected]
    assert sorted(s.source for s in r.sources) == sorted(selected)
    assert {state_name(s.state) for s in r.sources} <= {"OK", "TIMEOUT", "ERROR", "UNAVAILABLE", "DENIED", "CIRCUIT_OPEN", "SKIPPED"}
    assert set(selected) <= PERMITTED["alice"]


def test_explicit_sources_query_only_those(client_for):
    r = client_for("alice").search(ORDER_QUESTION, sources=["orders"])
    assert r.routing.strategy == "explicit"
    assert [s.source for s in r.sources] == ["orders"]
    assert state_name(r.sources[0].state) == "OK"
    assert r.hits and {h.source for h in r.hits} == {"orders"}


def test_context_tokens_pack_a_cited_context_within_budget(client_for):
    r = client_for("alice").search(ORDER_QUESTION, context_tokens=400)
    assert r.context.token_budget == 400
    assert 0 < r.context.tokens_used <= 400
    assert r.context.items and r.context.items[0].citation == "[1]"


def test_time_range_filter_is_applied_by_a_source_that_supports_it(client_for):
    now = datetime.now(timezone.utc)
    window = {"from": (now - timedelta(days=7)).isoformat(), "to": now.isoformat()}
    wide = client_for("dave").search("支付超时", sources=["incidents"], top_k=50)
    narrow = client_for("dave").search("支付超时", sources=["incidents"], top_k=50, filters={"time_range": window})
    assert state_name(narrow.sources[0].state) == "OK"
    assert narrow.hits, "the sample data has payment-timeout incidents in the last 7 days"
    start = now - timedelta(days=7)
    assert all(h.updated_at.ToDatetime(tzinfo=timezone.utc) >= start for h in narrow.hits)
    older = {h.id for h in wide.hits if h.updated_at.ToDatetime(tzinfo=timezone.utc) < start}
    assert older, "the sample data has a payment-timeout incident older than a week (INC-2038)"
    assert not older & {h.id for h in narrow.hits}


def test_search_stream_reports_routing_statuses_then_the_result(client_for):
    events = list(client_for("alice").search_stream(ORDER_QUESTION))
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[0] == "routing"
    assert kinds[-1] == "result"
    streamed = {e.source_status.source for e in events if e.WhichOneof("event") == "source_status"}
    final = events[-1].result
    assert streamed == {s.source for s in final.sources}
    assert final.hits


def test_get_document_fetches_the_full_text_of_a_hit(client_for):
    c = client_for("alice")
    hit = next(h for h in c.search("return policy rejection fee", sources=["wiki"]).hits if h.full_text_ref)
    doc = c.get_document(hit.full_text_ref)
    assert doc.source == "wiki"
    assert doc.content and len(doc.content) >= len(hit.snippet) / 2


def test_list_sources_differs_per_user(client_for):
    for user, expected in PERMITTED.items():
        assert {s.name for s in client_for(user).list_sources()} == expected, user


def test_feedback_records_used_and_rejected_ids(client_for):
    c = client_for("alice")
    r = c.search(ORDER_QUESTION)
    ids = [h.id for h in r.hits]
    try:
        recorded = c.feedback(r.trace_id, ORDER_QUESTION, used=ids[:1], rejected=ids[1:2], shown=ids)
    except FedsearchError as e:  # a router without `feedback.path` does not store any
        if e.code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNIMPLEMENTED):
            pytest.skip(f"feedback is off on this router: {e}")
        raise
    assert recorded == len(ids[:1]) + len(ids[1:2])
    stored = os.environ.get("FEDSEARCH_TEST_FEEDBACK_FILE")
    if stored:  # the stack this suite started: the router's feedback file
        records = [json.loads(line) for line in Path(stored).read_text().splitlines()]
        mine = [rec for rec in records if rec["trace_id"] == r.trace_id]
        assert len(mine) == 1
        assert (mine[0]["user"], mine[0]["used"], mine[0]["rejected"]) == ("alice", ids[:1], ids[1:2])


def test_feedback_naming_a_source_the_user_may_not_use_is_invalid(client_for):
    with pytest.raises(InvalidArgumentError) as e:
        client_for("carol").feedback("0" * 32, "q", used=["orders:SO20261007"])
    assert "orders:SO20261007" in e.value.message


def test_token_provider_is_called_per_request(router, token):
    calls = []

    def provider() -> str:
        calls.append(1)
        # A refreshed token after the first call: the client must ask again each time.
        return "expired-or-garbage" if len(calls) == 1 else token("alice")

    with Client(router, provider) as c:
        with pytest.raises(UnauthenticatedError):
            c.list_sources()
        assert {s.name for s in c.list_sources()} == PERMITTED["alice"]
        c.search(ORDER_QUESTION, sources=["orders"])
    assert len(calls) == 3


def _assert_reason_matches_details(err: FedsearchError) -> None:
    infos = [d for d in err.details if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR)]
    if infos:
        assert isinstance(err.reason, str) and err.reason
    else:
        assert err.reason is None


@pytest.mark.parametrize("kind", ["garbage", "wrong-secret", "missing"])
def test_a_bad_token_raises_unauthenticated(router, kind):
    bad = {
        "garbage": "not-a-jwt",
        "wrong-secret": mint("alice", "another-secret-of-at-least-32-bytes-000000"),
        "missing": "",
    }[kind]
    with Client(router, bad) as c:
        with pytest.raises(UnauthenticatedError) as e:
            c.search(ORDER_QUESTION)
    assert e.value.code == grpc.StatusCode.UNAUTHENTICATED
    assert isinstance(e.value, FedsearchError)
    _assert_reason_matches_details(e.value)
    # The router sends google.rpc.ErrorInfo: a program can tell why without parsing text.
    expected = {"garbage": {"TOKEN_INVALID"}, "wrong-secret": {"TOKEN_INVALID"}, "missing": {"TOKEN_MISSING", "TOKEN_INVALID"}}
    assert e.value.reason in expected[kind], e.value.reason


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda c: c.search(""), "query"),
        (lambda c: c.search("x", top_k=51), "top_k"),
        (lambda c: c.search("x", context_tokens=100000), "token_budget"),
        (lambda c: c.search("x", filters={"time_range": {"from": "2026-02-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}}), "time_range"),
        (lambda c: c.get_document("no-colon-here"), "full_text_ref"),
    ],
)
def test_invalid_arguments_raise_invalid_argument_naming_the_field(client_for, call, field):
    with pytest.raises(InvalidArgumentError) as e:
        call(client_for("alice"))
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert field in e.value.message
    _assert_reason_matches_details(e.value)
    assert e.value.reason is not None, "the router names a reason for every invalid argument"


def test_a_source_the_user_may_not_use_is_refused_like_an_unknown_one(client_for):
    with pytest.raises(FedsearchError) as forbidden:
        client_for("carol").search(ORDER_QUESTION, sources=["orders"])
    with pytest.raises(FedsearchError) as unknown:
        client_for("carol").search(ORDER_QUESTION, sources=["no-such-source"])
    assert forbidden.value.code == unknown.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert forbidden.value.message.replace("orders", "X") == unknown.value.message.replace("no-such-source", "X")
    assert forbidden.value.reason == unknown.value.reason == "UNKNOWN_SOURCE"


def test_error_info_in_status_details_becomes_the_reason():
    # The trailer a server sends with google.rpc.Status details (grpc-status-details-bin).
    info = error_details_pb2.ErrorInfo(reason="TOKEN_EXPIRED", domain="fedsearch", metadata={"claim": "exp"})
    packed = any_pb2.Any()
    packed.Pack(info)
    status = status_pb2.Status(code=16, message="token expired", details=[packed])
    trailers = [("grpc-status-details-bin", status.SerializeToString())]
    err = error_from_status(grpc.StatusCode.UNAUTHENTICATED, "token expired", trailers)
    assert isinstance(err, UnauthenticatedError)
    assert (err.reason, err.domain, err.metadata) == ("TOKEN_EXPIRED", "fedsearch", {"claim": "exp"})
    assert "TOKEN_EXPIRED" in str(err)
    plain = error_from_status(grpc.StatusCode.UNAUTHENTICATED, "token expired", [("other", "x")])
    assert plain.reason is None and plain.details == []


def test_a_stream_with_a_bad_token_raises_unauthenticated_when_iterated(router):
    with Client(router, "not-a-jwt") as c:
        events = c.search_stream(ORDER_QUESTION)
        with pytest.raises(UnauthenticatedError):
            next(iter(events))


def test_errors_carry_a_stable_reason_the_bad_field_and_the_trace_id(client_for, router):
    with pytest.raises(InvalidArgumentError) as e:
        client_for("alice").search("   ")
    assert (e.value.reason, e.value.domain) == ("INVALID_ARGUMENT", "fedsearch")
    assert len(e.value.metadata.get("trace_id", "")) == 32
    violations = []
    for detail in e.value.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations += [v.field for v in bad.field_violations]
    assert violations == ["query"]
    with pytest.raises(InvalidArgumentError) as long:
        client_for("alice").search("退" * 5000)
    assert long.value.reason == "QUERY_TOO_LONG"
    with pytest.raises(FedsearchError) as unknown:
        client_for("alice").search("x", sources=["no-such-source"])
    assert unknown.value.reason == "UNKNOWN_SOURCE"
    with Client(router, "not-a-jwt") as c:
        with pytest.raises(UnauthenticatedError) as bad_token:
            c.list_sources()
    assert bad_token.value.reason == "TOKEN_INVALID"
