"""examples/agent_loop.py driven the way a model drives it: the "model" here reads the offered
tool specs and emits OpenAI-style tool calls (JSON arguments), then answers citing the hits."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from conftest import PERMITTED

_spec = importlib.util.spec_from_file_location("agent_loop", Path(__file__).parents[1] / "examples" / "agent_loop.py")
assert _spec and _spec.loader
agent_loop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(agent_loop)


class ScriptedModel:
    """Plays the model: first turn, a tool call of the most specific tool offered for the
    question (here: the orders tool, else the federated one); after the tool answers, a reply
    citing the first hit."""

    def __init__(self, preferred: list[tuple[str, dict[str, Any]]]) -> None:
        self.preferred = preferred
        self.offered: list[str] = []

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        self.offered = [t["function"]["name"] for t in tools]
        results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
        if not results:
            name, args = next((n, a) for n, a in self.preferred if n in self.offered)
            call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        hits = results[-1].get("hits", [])
        answer = f"{hits[0]['title']} {hits[0]['citation']}" if hits else "nothing found"
        return {"role": "assistant", "content": answer}


PLAN = [
    ("search_orders", {"query": "SO20261007 拒收", "top_k": 3}),
    ("search", {"query": "SO20261007 拒收手续费"}),
]


def test_a_tool_call_of_search_orders_becomes_search_with_sources_orders(client_for):
    model = ScriptedModel(PLAN)
    messages = agent_loop.run_agent(model, client_for("alice"), "订单SO20261007拒收了，手续费多少？")
    assert set(model.offered) == {f"search_{s}" for s in PERMITTED["alice"]} | {"search"}
    assistant, tool, final = messages[2], messages[3], messages[4]
    assert assistant["tool_calls"][0]["function"]["name"] == "search_orders"
    assert tool["role"] == "tool" and tool["tool_call_id"] == "call_1"
    content = json.loads(tool["content"])
    assert [s["source"] for s in content["sources"]] == ["orders"]
    assert content["hits"] and all(h["source"] == "orders" for h in content["hits"])
    assert final["role"] == "assistant" and final["content"].endswith("[1]")
    assert len(messages) == 5


def test_a_user_without_orders_gets_no_orders_tool_and_the_model_falls_back(client_for):
    model = ScriptedModel(PLAN)
    messages = agent_loop.run_agent(model, client_for("carol"), "订单SO20261007拒收了，手续费多少？")
    assert "search_orders" not in model.offered
    assert set(model.offered) == {"search_kb", "search_wiki", "search"}
    call = messages[2]["tool_calls"][0]["function"]
    assert call["name"] == "search"
    content = json.loads(messages[3]["content"])
    assert {s["source"] for s in content["sources"]} <= PERMITTED["carol"]


def test_a_bad_tool_call_is_answered_with_an_error_the_model_can_read(client_for):
    model = ScriptedModel([("search_orders", {"query": "SO20261007", "filters": {"tags": ["x"]}})])
    messages = agent_loop.run_agent(model, client_for("alice"), "q", max_turns=2)
    err = json.loads(messages[3]["content"])
    assert "error" in err and "time_range" in err["error"]
    assert messages[-1]["content"] == "nothing found"
