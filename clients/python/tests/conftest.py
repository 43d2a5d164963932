"""The live stack the tests run against: scripts/python-client-test.sh starts it and sets
FEDSEARCH_TEST_ROUTER (host:port), FEDSEARCH_TEST_SECRET (the router's HS256 secret) and
FEDSEARCH_TEST_CLI (the `fedsearch` CLI, which mints the demo users' tokens)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator

import pytest

from fedsearch import Client

# The sample company's users (data/sample/COMPANY.md) and what each may use (the sources'
# required_groups in deploy/config/router.yaml against each user's groups).
PERMITTED = {
    "alice": {"orders", "tickets", "incidents", "kb", "wiki"},
    "dave": {"orders", "tickets", "incidents", "kb", "wiki"},
    "bob": {"orders", "tickets", "kb", "wiki"},
    "carol": {"kb", "wiki"},
    "eve": {"kb", "wiki"},
}


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.exit(f"{name} is not set: run scripts/python-client-test.sh (it starts the stack)", returncode=2)
    return value


@pytest.fixture(scope="session")
def router() -> str:
    return _env("FEDSEARCH_TEST_ROUTER")


@pytest.fixture(scope="session")
def secret() -> str:
    return _env("FEDSEARCH_TEST_SECRET")


def mint(user: str, secret: str, *extra: str) -> str:
    cli = _env("FEDSEARCH_TEST_CLI")
    out = subprocess.run(
        [cli, "token", "--secret", secret, "--user", user, "--ttl", "1h", *extra],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


@pytest.fixture(scope="session")
def token(secret: str) -> Callable[[str], str]:
    cache: dict[str, str] = {}

    def get(user: str) -> str:
        if user not in cache:
            cache[user] = mint(user, secret)
        return cache[user]

    return get


@pytest.fixture(scope="session")
def client_for(router: str, token: Callable[[str], str]) -> Iterator[Callable[[str], Client]]:
    clients: dict[str, Client] = {}

    def get(user: str) -> Client:
        if user not in clients:
            clients[user] = Client(router, lambda: token(user))
        return clients[user]

    yield get
    for c in clients.values():
        c.close()
