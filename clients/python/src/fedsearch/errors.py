"""gRPC failures as Python exceptions that carry the status code and, when the server sends a
`google.rpc.Status` with an `ErrorInfo` detail (trailer `grpc-status-details-bin`), its reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

STATUS_DETAILS_KEY = "grpc-status-details-bin"


class FedsearchError(Exception):
    """A call to the router failed.

    `code` is the gRPC status code, `message` the server's message. `reason`, `domain` and
    `metadata` come from the `google.rpc.ErrorInfo` detail when the server sent one; `reason` is
    None otherwise. `details` holds every decoded `google.rpc.Status` detail (packed `Any`s).
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        reason: str | None = None,
        domain: str | None = None,
        metadata: Mapping[str, str] | None = None,
        details: Sequence[Any] = (),
    ) -> None:
        super().__init__(f"{code.name}: {message}" + (f" (reason {reason})" if reason else ""))
        self.code = code
        self.message = message
        self.reason = reason
        self.domain = domain
        self.metadata: dict[str, str] = dict(metadata or {})
        self.details = list(details)


class UnauthenticatedError(FedsearchError):
    """The token is missing, expired or wrongly signed (UNAUTHENTICATED)."""


class InvalidArgumentError(FedsearchError):
    """The request was refused as invalid (INVALID_ARGUMENT); the message names the field."""


class PermissionDeniedError(FedsearchError):
    """The caller may not do this (PERMISSION_DENIED)."""


class NotFoundError(FedsearchError):
    """The document or source does not exist for this caller (NOT_FOUND)."""


class UnavailableError(FedsearchError):
    """The router (or the source a document lives in) cannot be reached now (UNAVAILABLE)."""


class ResourceExhaustedError(FedsearchError):
    """The router is overloaded (RESOURCE_EXHAUSTED); retry later."""


class DeadlineExceededError(FedsearchError):
    """The call ran out of time (DEADLINE_EXCEEDED)."""


_BY_CODE: dict[grpc.StatusCode, type[FedsearchError]] = {
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
}


def error_from_status(
    code: grpc.StatusCode,
    message: str,
    trailing_metadata: Iterable[tuple[str, str | bytes]] | Iterable[Any] | None = None,
) -> FedsearchError:
    """Builds the exception for a failed call from its code, message and trailers."""
    reason = domain = None
    info_metadata: dict[str, str] = {}
    details: list[Any] = []
    raw = next((v for k, v in trailing_metadata or () if k == STATUS_DETAILS_KEY), None)
    if isinstance(raw, bytes):
        status = status_pb2.Status()
        try:
            status.ParseFromString(raw)
        except Exception:  # a malformed trailer must not hide the real error
            status = None
        if status is not None:
            details = list(status.details)
            if status.message:
                message = status.message
            for any_detail in status.details:
                if any_detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    info = error_details_pb2.ErrorInfo()
                    any_detail.Unpack(info)
                    reason, domain, info_metadata = info.reason or None, info.domain or None, dict(info.metadata)
                    break
    cls = _BY_CODE.get(code, FedsearchError)
    return cls(code, message, reason=reason, domain=domain, metadata=info_metadata, details=details)


def from_rpc_error(error: grpc.RpcError) -> FedsearchError:
    """Turns a `grpc.RpcError` (which is also a `grpc.Call`) into a `FedsearchError`."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    message = (error.details() if hasattr(error, "details") else None) or ""
    trailers = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    return error_from_status(code or grpc.StatusCode.UNKNOWN, message, trailers)
