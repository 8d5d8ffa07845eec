"""A scripted fake LLM HTTP server for offline tests (stdlib only).

The real ``openai`` and ``anthropic`` SDKs talk real HTTP over loopback to this server, which
speaks both wire formats (OpenAI Chat Completions + embeddings, Anthropic Messages), serves
scripted steps from a FIFO queue, records every request and checks request invariants
(tool-call pairing, ``stream_options.include_usage``, ``max_tokens``, auth headers).

In-process::

    with FakeLLM() as fake:
        fake.enqueue(Reply(text="hi", tool_calls=[ToolCallSpec("web_search", {"q": "x"})]))
        client = openai.OpenAI(base_url=fake.openai_base_url, api_key="sk-test")
        ...
        fake.assert_no_violations()

Harness mode::

    python -m dexter.testing.fakellm --script scenario.json --port 0 --port-file PORT

The package: ``steps`` (what to serve), ``checks`` (recorded requests and their
invariants), ``wire``/``openai_wire``/``anthropic_wire`` (one module per wire format),
``server`` (HTTP and the queue), ``cli`` (harness mode).
"""

from __future__ import annotations

from dexter.testing.fakellm.checks import (
    RecordedRequest,
    check_anthropic_messages,
    check_openai_messages,
    fake_embedding,
)
from dexter.testing.fakellm.cli import (
    main,
)
from dexter.testing.fakellm.server import (
    FakeLLM,
)
from dexter.testing.fakellm.steps import (
    PRESETS,
    ConcreteStep,
    Delay,
    DropStream,
    Dynamic,
    HttpError,
    Malformed,
    MidStreamError,
    QueueRoute,
    Raw,
    Reply,
    Reset,
    Route,
    Stall,
    Step,
    ToolCallSpec,
    Trickle,
    Truncate,
    Usage,
    anthropic_auth,
    anthropic_overloaded,
    anthropic_prompt_too_long,
    anthropic_rate_limit,
    load_script,
    openai_auth,
    openai_context_overflow,
    openai_insufficient_quota,
    openai_rate_limit,
    server_error,
    step_from_dict,
)

__all__ = [
    "PRESETS",
    "ConcreteStep",
    "Delay",
    "DropStream",
    "Dynamic",
    "FakeLLM",
    "HttpError",
    "Malformed",
    "MidStreamError",
    "QueueRoute",
    "Raw",
    "RecordedRequest",
    "Reply",
    "Reset",
    "Route",
    "Stall",
    "Step",
    "ToolCallSpec",
    "Trickle",
    "Truncate",
    "Usage",
    "anthropic_auth",
    "anthropic_overloaded",
    "anthropic_prompt_too_long",
    "anthropic_rate_limit",
    "check_anthropic_messages",
    "check_openai_messages",
    "fake_embedding",
    "load_script",
    "main",
    "openai_auth",
    "openai_context_overflow",
    "openai_insufficient_quota",
    "openai_rate_limit",
    "server_error",
    "step_from_dict",
]
