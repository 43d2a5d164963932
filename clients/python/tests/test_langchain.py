"""The LangChain retriever and tools against the live stack."""

from __future__ import annotations

import asyncio
import json

import pytest
from conftest import PERMITTED
from langchain_core.documents import Document
from langchain_core.messages import ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from fedsearch.langchain import FedsearchRetriever, search_tools


def test_the_retriever_returns_documents_with_citation_source_status_and_metadata(client_for):
    docs = FedsearchRetriever(client=client_for("alice"), top_k=6).invoke("客户C1001：我昨天买的商品为什么还没发货？如果拒收要收手续费吗？")
    assert 0 < len(docs) <= 6
    assert all(isinstance(d, Document) for d in docs)
    for n, d in enumerate(docs, 1):
        m = d.metadata
        assert d.id == m["id"] and m["id"].startswith(m["source"] + ":")
        assert m["citation"].startswith(f"[{n}] ")
        assert m["source"] in PERMITTED["alice"]
        assert m["source_status"] == "OK"
        assert m["source_statuses"][m["source"]] == "OK"
        assert m["trace_id"] and m["full_text_ref"]
        assert d.page_content.startswith(m["title"])
    assert {"orders", "wiki"} <= {d.metadata["source"] for d in docs}


def test_the_retriever_reports_a_denied_source(client_for):
    docs = FedsearchRetriever(client=client_for("eve")).invoke("支付超时 怎么处理")
    assert docs
    assert docs[0].metadata["source_statuses"]["wiki"] == "DENIED"
    assert all(d.metadata["source"] == "kb" for d in docs)


def test_the_retriever_limited_to_sources(client_for):
    docs = FedsearchRetriever(client=client_for("alice"), sources=["wiki"]).invoke("return policy rejection fee")
    assert docs and {d.metadata["source"] for d in docs} == {"wiki"}
    # The current return policy first, the superseded one marked.
    superseded = [d for d in docs if d.metadata["superseded_by"]]
    assert superseded and docs.index(superseded[0]) > 0


@pytest.mark.parametrize("user", sorted(PERMITTED))
def test_tools_are_offered_only_for_permitted_sources(client_for, user):
    tools = search_tools(client_for(user))
    assert {t.name for t in tools} == {f"search_{s}" for s in PERMITTED[user]} | {"search"}
    for t in tools:
        spec = convert_to_openai_tool(t)["function"]
        assert spec["name"] == t.name
        assert "query" in spec["parameters"]["required"]


def test_the_orders_tool_schema_has_only_time_range(client_for):
    tools = {t.name: t for t in search_tools(client_for("alice"))}
    params = convert_to_openai_tool(tools["search_orders"])["function"]["parameters"]
    filters = json.dumps(params)
    assert "time_range" in filters
    for unsupported in ("doc_types", "tags", "equals"):
        assert unsupported not in filters
    with pytest.raises(ValidationError):
        tools["search_orders"].invoke({"query": "SO20261007", "filters": {"tags": ["x"]}})


def test_a_tool_call_returns_a_tool_message_with_documents(client_for):
    tools = {t.name: t for t in search_tools(client_for("alice"))}
    msg = tools["search_orders"].invoke(
        {"type": "tool_call", "id": "call_7", "name": "search_orders", "args": {"query": "SO20261007 拒收", "top_k": 3}}
    )
    assert isinstance(msg, ToolMessage) and msg.tool_call_id == "call_7"
    content = json.loads(msg.content)
    assert [s["source"] for s in content["sources"]] == ["orders"]
    assert msg.artifact and all(d.metadata["source"] == "orders" for d in msg.artifact)
    assert len(msg.artifact) <= 3


def test_the_orders_tool_applies_a_time_range(client_for):
    tools = {t.name: t for t in search_tools(client_for("alice"))}
    unfiltered = json.loads(tools["search_orders"].invoke({"query": "C1001 orders"}))
    assert unfiltered["hits"], "customer C1001 has recent orders"
    window = {"from": "2000-01-01T00:00:00Z", "to": "2000-01-02T00:00:00Z"}
    content = json.loads(tools["search_orders"].invoke({"query": "C1001 orders", "filters": {"time_range": window}}))
    assert content["sources"][0]["state"] == "OK"
    assert content["hits"] == []


def test_the_federated_tool_with_named_sources(client_for):
    tools = {t.name: t for t in search_tools(client_for("carol"))}
    content = json.loads(tools["search"].invoke({"query": "退货政策 拒收手续费", "sources": ["wiki"]}))
    assert [s["source"] for s in content["sources"]] == ["wiki"]
    with pytest.raises(ValidationError):
        tools["search"].invoke({"query": "x", "sources": ["orders"]})  # not offered to carol


def test_the_retriever_works_async(client_for):
    retriever = FedsearchRetriever(client=client_for("bob"), sources=["orders"])
    docs = asyncio.run(retriever.ainvoke("SO20261007"))
    assert docs and {d.metadata["source"] for d in docs} == {"orders"}
