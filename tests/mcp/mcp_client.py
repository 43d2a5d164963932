"""A real MCP client (the official Python SDK, `mcp` from PyPI) against fedsearch's MCP endpoint.

Usage: mcp_client.py URL TOKEN_ALICE TOKEN_CAROL

Connects as two different users, lists the tools, calls `search` and `fetch_document` as each,
and checks that they see different results; then checks that a missing or bad token is refused.
Prints one line per check and a closing `mcp: N passed, M failed`; exits 1 on any failure.
"""

import asyncio
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok    " if ok else "FAIL  ") + name + ("" if ok else f"  -- {detail}"))


async def session_call(url, token, fn):
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await fn(session)


def text_of(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def main(url, alice, carol):
    async def tools(s):
        return [t.name for t in (await s.list_tools()).tools]

    names = await session_call(url, alice, tools)
    check("tools are listed: search, fetch_document, feedback, list_sources",
          sorted(names) == ["feedback", "fetch_document", "list_sources", "search"], names)

    async def feedback(s):
        return await s.call_tool("feedback", {"used": ["kb:KB-101"]})

    fb = await session_call(url, alice, feedback)
    fb_text = fb.content[0].text if fb.content else ""
    check("feedback tool answers, as an error where the router stores none",
          fb.is_error and "FAILED_PRECONDITION" in fb_text, fb_text)

    question = {"query": "支付超时 处理手册", "token_budget": 800}

    async def search(s):
        return await s.call_tool("search", question)

    a = await session_call(url, alice, search)
    c = await session_call(url, carol, search)
    at, ct = text_of(a), text_of(c)
    check("alice's search succeeds", not a.is_error, at[:300])
    check("carol's search succeeds", not c.is_error, ct[:300])
    check("alice (support) gets the support runbook", "wiki:support:runbook_payment_timeout" in at, at[:600])
    check("carol (plain employee) does not get it", "support:runbook" not in ct, ct[:600])
    check("alice's results cite their sources", "cite: " in at and "ref: " in at, at[:300])
    check("the two users see different results", at != ct)
    structured = a.structured_content or {}
    check("structured content carries per-source status and a trace id",
          bool(structured.get("sources")) and len(structured.get("trace_id", "")) == 32, structured)

    async def fetch(s):
        return await s.call_tool("fetch_document", {"full_text_ref": "wiki:support:runbook_payment_timeout"})

    fa = await session_call(url, alice, fetch)
    fc = await session_call(url, carol, fetch)
    check("alice can fetch the runbook", not fa.is_error and "支付超时" in text_of(fa), text_of(fa)[:300])
    check("carol's fetch of the runbook is refused by the wiki", fc.is_error and "PERMISSION_DENIED" in text_of(fc),
          text_of(fc)[:300])

    async def sources(s):
        return await s.call_tool("list_sources", {})

    la, lc = text_of(await session_call(url, alice, sources)), text_of(await session_call(url, carol, sources))
    check("list_sources differs per user", '"tickets"' in la and '"tickets"' not in lc, (la[:200], lc[:200]))

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "fedsearch-test", "version": "1"}}}
    for label, token in [("missing", None), ("bad", "not-a-jwt")]:
        try:
            await session_call(url, token, tools)
            check(f"the SDK cannot open a session with a {label} token", False, "the session opened")
        except BaseException:  # the SDK reports the refused request as an error
            check(f"the SDK cannot open a session with a {label} token", True)
        headers = {"Accept": "application/json, text/event-stream"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        async with create_mcp_http_client(headers=headers) as http:
            r = await http.post(url, json=initialize)
        challenge = r.headers.get("www-authenticate", "")
        metadata = 'resource_metadata="https://search.example.com/.well-known/oauth-protected-resource/mcp"'
        want_error = token is not None
        check(f"a {label} token gets HTTP 401 with a Bearer challenge naming the resource metadata",
              r.status_code == 401 and challenge.startswith("Bearer ") and metadata in challenge
              and ('error="invalid_token"' in challenge) == want_error, (r.status_code, challenge))

    base = url.rsplit("/mcp", 1)[0]
    async with create_mcp_http_client() as http:
        doc = await http.get(base + "/.well-known/oauth-protected-resource/mcp")
    check("the protected-resource metadata names the authorization server (RFC 9728)",
          doc.status_code == 200 and doc.json().get("authorization_servers") == ["https://login.example.com"]
          and doc.json().get("resource") == "https://search.example.com/mcp", (doc.status_code, doc.text[:200]))

    async def raw_initialize(token, host=None):
        headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
        if host:
            headers["Host"] = host
        async with create_mcp_http_client(headers=headers) as http:
            return await http.post(url, json=initialize)

    async def delete(token, session_id):
        headers = {"Authorization": f"Bearer {token}", "Mcp-Session-Id": session_id}
        async with create_mcp_http_client(headers=headers) as http:
            return await http.delete(url)

    ok_host = await raw_initialize(alice, "search.example.com")
    check("a Host from mcp.allowed_hosts is served", ok_host.status_code == 200, (ok_host.status_code, ok_host.text[:200]))
    if ok_host.status_code == 200:
        gone = await delete(alice, ok_host.headers.get("mcp-session-id", ""))
        check("DELETE of a session answers 204", gone.status_code == 204, gone.status_code)
    else:
        check("DELETE of a session answers 204", False, "no session to delete")
    evil = await raw_initialize(alice, "evil.example.com")
    check("any other Host is refused (403)", evil.status_code == 403, evil.status_code)

    opened = [await raw_initialize(carol) for _ in range(3)]
    check("carol opens three sessions", all(r.status_code == 200 for r in opened), [r.status_code for r in opened])
    fourth = await raw_initialize(carol)
    check("her fourth gets 429 with Retry-After (max_sessions_per_user: 3)",
          fourth.status_code == 429 and "retry-after" in fourth.headers, (fourth.status_code, fourth.text[:200]))
    other = await raw_initialize(alice)
    check("another user still opens a session", other.status_code == 200, other.status_code)
    for r in opened + [other]:
        if "mcp-session-id" in r.headers:
            await delete(carol if r is not other else alice, r.headers["mcp-session-id"])
    again = await raw_initialize(carol)
    check("closing her sessions lets carol open one again", again.status_code == 200, again.status_code)
    if "mcp-session-id" in again.headers:
        await delete(carol, again.headers["mcp-session-id"])

    passed = sum(results)
    print(f"mcp: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:4])))
