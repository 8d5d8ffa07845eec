"""Provider errors: one exception type, classified into kinds the loop and the user understand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ErrorKind = Literal[
    "context_overflow", "rate_limit", "billing", "auth", "timeout", "overloaded",
    "server", "connection", "not_found", "bad_request", "cancelled", "unknown",
]

NON_RETRYABLE: frozenset[str] = frozenset(
    {"context_overflow", "billing", "auth", "not_found", "bad_request", "cancelled"}
)


@dataclass
class ProviderError(Exception):
    """A failed provider call.

    ``message`` is plain words for the user (which key, which model, what to do) and never
    contains an API key. ``detail`` is the provider's own message, also scrubbed of keys.
    """

    kind: ErrorKind
    message: str
    provider: str = ""
    model: str = ""
    status: int | None = None
    retry_after: float | None = None
    detail: str = ""
    request_id: str = ""
    output_started: bool = False

    def __str__(self) -> str:
        return self.message

    @property
    def retryable(self) -> bool:
        return self.kind not in NON_RETRYABLE
