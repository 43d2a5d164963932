"""fedsearch — a typed Python client for the fedsearch federated search router.

    from fedsearch import Client
    client = Client("127.0.0.1:50051", token_provider)   # a str or a callable returning the JWT
    response = client.search("SO20261007 拒收手续费", top_k=5)

`fedsearch.tools` builds agent tools from ListSources; `fedsearch.langchain` and
`fedsearch.llamaindex` (extras `langchain`, `llamaindex`) plug it into those frameworks. The
generated protobuf modules are `fedsearch.v1.search_pb2` and `fedsearch.types.v1.types_pb2`.
"""

from fedsearch.client import FILTER_NAMES, Client, TokenProvider, filters_from_args, state_name, timestamp
from fedsearch.errors import (
    DeadlineExceededError,
    FedsearchError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
)
from fedsearch.tools import (
    SearchTool,
    ToolArgumentError,
    Toolbox,
    hit_citation,
    hit_metadata,
    result_json,
    tools_from_sources,
)

__all__ = [
    "FILTER_NAMES",
    "Client",
    "DeadlineExceededError",
    "FedsearchError",
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "SearchTool",
    "TokenProvider",
    "ToolArgumentError",
    "Toolbox",
    "UnauthenticatedError",
    "UnavailableError",
    "filters_from_args",
    "hit_citation",
    "hit_metadata",
    "result_json",
    "state_name",
    "timestamp",
    "tools_from_sources",
]
