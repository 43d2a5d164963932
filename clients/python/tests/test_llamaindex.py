"""The LlamaIndex retriever against the live stack."""

from __future__ import annotations

from conftest import PERMITTED
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from fedsearch.llamaindex import FedsearchRetriever

QUESTION = "最近一周线上问题中哪些和支付超时有关，同时附上对应的工单处理状态"


def test_the_retriever_returns_scored_nodes_with_citations(client_for):
    client = client_for("dave")
    nodes = FedsearchRetriever(client, top_k=8).retrieve(QUESTION)
    assert 0 < len(nodes) <= 8
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    for i, n in enumerate(nodes, 1):
        m = n.node.metadata
        assert n.node.node_id == m["id"]
        assert n.score is not None and n.score > 0
        assert m["citation"].startswith(f"[{i}] ")
        assert m["source"] in PERMITTED["dave"] and m["source_status"] == "OK"
        # What an LLM sees of a node: its text and citation, not the bookkeeping.
        seen = n.node.get_content(metadata_mode=MetadataMode.LLM)
        assert m["citation"] in seen and "trace_id" not in seen
    assert {"incidents", "tickets"} <= {n.node.metadata["source"] for n in nodes}


def test_the_retriever_with_sources_and_a_query_bundle(client_for):
    nodes = FedsearchRetriever(client_for("carol"), sources=["kb"]).retrieve(QueryBundle("支付超时 怎么处理"))
    assert nodes and {n.node.metadata["source"] for n in nodes} == {"kb"}
