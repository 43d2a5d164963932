"""Per-source tools from ListSources (only permitted sources, only supported filters) and the
federated tool, dispatched the way an OpenAI-style tool call arrives."""

from __future__ import annotations

import json

import pytest
from conftest import PERMITTED

from fedsearch import FILTER_NAMES, ToolArgumentError, Toolbox, state_name, tools_from_sources


@pytest.mark.parametrize("user", sorted(PERMITTED))
def test_each_user_is_offered_one_tool_per_permitted_source_plus_search(client_for, user):
    sources = client_for(user).list_sources()
    tools = {t.name: t for t in tools_from_sources(sources)}
    assert set(tools) == {f"search_{s}" for s in PERMITTED[user]} | {"search"}
    for s in sources:
        tool = tools[f"search_{s.name}"]
        assert tool.source == s.name
        # Only the filters this source lists, in the schema and in the tool.
        assert set(tool.filters) == set(s.supported_filters)
        offered = tool.parameters()["properties"].get("filters", {}).get("properties", {})
        assert set(offered) == set(s.supported_filters)
        assert "sources" not in tool.parameters()["properties"]
    federated = tools["search"]
    assert set(federated.parameters()["properties"]["sources"]["items"]["enum"]) == PERMITTED[user]
    assert set(federated.filters) == {f for s in sources for f in s.supported_filters}


def test_the_orders_tool_offers_only_time_range(client_for):
    tools = {t.name: t for t in tools_from_sources(client_for("alice").list_sources())}
    spec = tools["search_orders"].openai_spec()
    assert spec["type"] == "function" and spec["function"]["name"] == "search_orders"
    assert list(spec["function"]["parameters"]["properties"]["filters"]["properties"]) == ["time_range"]
    assert set(tools["search_tickets"].filters) == set(FILTER_NAMES)


def test_a_search_orders_call_is_search_with_sources_orders(client_for):
    box = Toolbox(client_for("alice"))
    r = box.call("search_orders", json.dumps({"query": "SO20261007 拒收", "top_k": 3}))
    assert r.routing.strategy == "explicit"
    assert [s.source for s in r.sources] == ["orders"]
    assert r.hits and all(h.source == "orders" for h in r.hits)
    assert len(r.hits) <= 3


def test_a_filter_the_source_does_not_support_is_refused_before_any_call(client_for):
    box = Toolbox(client_for("alice"))
    with pytest.raises(ToolArgumentError, match="time_range"):
        box.call("search_orders", {"query": "SO20261007", "filters": {"tags": ["x"]}})
    msg = box.tool_message(
        {"id": "call_1", "type": "function", "function": {"name": "search_orders", "arguments": '{"query": "x", "filters": {"equals": {"a": "b"}}}'}}
    )
    assert msg["role"] == "tool" and msg["tool_call_id"] == "call_1"
    assert "error" in json.loads(msg["content"])


def test_tools_of_sources_a_user_may_not_use_do_not_exist(client_for):
    box = Toolbox(client_for("carol"))
    assert "search_orders" not in box.tools
    with pytest.raises(ToolArgumentError, match="no tool"):
        box.call("search_orders", {"query": "SO20261007"})


def test_the_federated_tool_asks_every_relevant_source_or_the_named_ones(client_for):
    box = Toolbox(client_for("alice"))
    r = box.call("search", {"query": "客户C1001 的订单为什么还没发货？拒收要收手续费吗？"})
    assert len(r.sources) >= 2
    assert {s.source for s in r.sources} <= PERMITTED["alice"]
    named = box.call("search", {"query": "拒收手续费", "sources": ["wiki", "kb"]})
    assert {s.source for s in named.sources} == {"wiki", "kb"}
    with pytest.raises(ToolArgumentError):
        box.call("search", {"query": "x", "sources": ["not-a-source"]})


def test_a_tool_message_carries_cited_hits_and_statuses(client_for):
    box = Toolbox(client_for("eve"))
    msg = box.tool_message({"id": "c9", "function": {"name": "search", "arguments": '{"query": "支付超时 怎么处理"}'}})
    content = json.loads(msg["content"])
    states = {s["source"]: s["state"] for s in content["sources"]}
    assert states.get("wiki") == "DENIED"  # eve has no wiki account
    assert states.get("kb") == "OK"
    assert content["hits"] and content["hits"][0]["citation"] == "[1]"
    assert all(h["source"] == "kb" for h in content["hits"])
    assert content["trace_id"]


def test_state_names():
    assert state_name(6) == "DENIED" and state_name(1) == "OK"
