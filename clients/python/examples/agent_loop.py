"""An agent loop with OpenAI-style function calling over fedsearch's tools.

The tools come from ListSources as the end user: `search_<source>` for each source they may use
(a call becomes `Search{sources:[<source>]}`) and the federated `search`. Each turn the model gets
the conversation and the tool specs; when it answers with `tool_calls`, every call is dispatched
and answered with a `{"role": "tool", "tool_call_id": ..., "content": <JSON hits + statuses>}`
message; when it answers with text, that is the answer.

`model` is any callable `(messages, tools) -> assistant message dict`. With the `openai` package:

    from openai import OpenAI
    llm = OpenAI()
    def model(messages, tools):
        r = llm.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        return r.choices[0].message.model_dump(exclude_none=True)

Run: python agent_loop.py ROUTER_HOST:PORT "question"   (token in $FEDSEARCH_TOKEN; needs openai)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from fedsearch import Client, Toolbox

Message = dict[str, Any]
Model = Callable[[list[Message], list[dict[str, Any]]], Message]

SYSTEM = (
    "You answer questions from the company's sources. Call the search tools; answer only from "
    "their hits and cite each fact with the hit's citation, e.g. [1]. If a source reports DENIED "
    "or UNAVAILABLE, say that part could not be checked."
)


def run_agent(model: Model, client: Client, question: str, *, max_turns: int = 4) -> list[Message]:
    """Runs the loop until the model answers without tool calls (or `max_turns` model turns);
    returns the whole conversation, the last message being the model's answer."""
    toolbox = Toolbox(client)
    specs = toolbox.specs()
    messages: list[Message] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    for _ in range(max_turns):
        reply = model(messages, specs)
        messages.append(reply)
        calls = reply.get("tool_calls") or []
        if not calls:
            break
        for call in calls:
            messages.append(toolbox.tool_message(call))
    return messages


def _openai_model() -> Model:
    from openai import OpenAI  # type: ignore[import-not-found]

    llm = OpenAI()

    def model(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        r = llm.chat.completions.create(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), messages=messages, tools=tools)
        out: Message = r.choices[0].message.model_dump(exclude_none=True)
        return out

    return model


if __name__ == "__main__":
    if len(sys.argv) != 3 or "FEDSEARCH_TOKEN" not in os.environ:
        sys.exit("usage: FEDSEARCH_TOKEN=<jwt> python agent_loop.py ROUTER_HOST:PORT QUESTION")
    with Client(sys.argv[1], lambda: os.environ["FEDSEARCH_TOKEN"]) as c:
        print(run_agent(_openai_model(), c, sys.argv[2])[-1].get("content", ""))
