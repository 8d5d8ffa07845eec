"""A scripted run that uses every event type, for eyeballing the views and for tests.

``python -m dexter.render.demo`` plays it on this terminal with realistic pauses;
``--plain`` / ``--json`` show the other views.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from dexter.events import (
    AnswerDelta,
    Compaction,
    ContextCleared,
    Done,
    Event,
    MemoryFlush,
    MemoryRecalled,
    Microcompact,
    ProviderRetry,
    QueueDrain,
    RunStart,
    SandboxAlert,
    ScratchpadError,
    StreamProgress,
    Thinking,
    ToolApproval,
    ToolDenied,
    ToolEnd,
    ToolError,
    ToolLimit,
    ToolProgress,
    ToolStart,
    Verification,
)

ANSWER = """## Revenue growth, FY2022 → FY2024

NVIDIA grew far faster than AMD, driven by data-center GPUs.

| Company | FY2022 revenue | FY2024 revenue | Growth | Source |
|---|---|---|---|---|
| NVIDIA | $26.97B | $60.92B | 125.9% | [S1] [S3] |
| AMD | $23.60B | $22.68B | -3.9% | [S2] |

- NVIDIA's data-center segment was **78%** of revenue in FY2024.
"""

NVDA = {"query": "NVIDIA annual revenue FY2022 to FY2024"}
AMD = {"query": "AMD annual revenue FY2022 to FY2024"}
CALC = {"expression": "60922 / 26974 - 1"}
FETCH = {"url": "https://example.com/nvda-10k"}


def sample_events() -> list[Event]:
    """A complete run touching every event type, ending with a successful ``done``."""
    return [
        RunStart("How did NVIDIA's and AMD's revenue grow from FY2022 to FY2024?",
                 "gpt-4.1", "openai", "scratchpads/2025-01-02-101500_abc.jsonl"),
        MemoryRecalled(["MEMORY.md"], 1_250),
        StreamProgress(0, "requesting"),
        ProviderRetry(1, 2.0, "rate limited"),
        StreamProgress(640, "responding"),
        AnswerDelta("I'll fetch both income statements."),
        Thinking("I'll fetch both companies' income statements, then compute the growth."),
        ToolLimit("get_financials", "You are approaching the suggested limit for "
                  "'get_financials' (3 calls).", "c1"),
        ToolStart("get_financials", NVDA, "c1"),
        ToolStart("get_financials", AMD, "c2"),
        ToolProgress("get_financials", "Fetching income statements", "c1"),
        ToolEnd("get_financials", AMD, '{"data": {"FY2022": 23601, "FY2024": 22680, '
                '"_meta": 1}, "source_urls": ["https://a.example", "https://b.example"]}',
                870, "c2", ("https://a.example", "https://b.example"), "S2",
                "income_statements[AMD, annual] · SEC EDGAR"),
        ToolEnd("get_financials", NVDA, '{"data": [1, 2, 3, 4]}', 1_240, "c1", (), "S1",
                "income_statements[NVDA, annual] · SEC EDGAR"),
        SandboxAlert("bash", ("the command created .git (a repository's .git, whose config "
                              "and hooks git would run later); dexter moved it to "
                              ".dexter/quarantine/20250102-101502/.git",), "c9"),
        ToolStart("calculator", CALC, "c3"),
        ToolEnd("calculator", CALC, '{"data": {"expression": "60922 / 26974 - 1", '
                '"result": 1.258545}}', 4, "c3", (), "S3", "calculator: 60922 / 26974 - 1"),
        ToolStart("web_fetch", FETCH, "c4"),
        ToolError("web_fetch", "HTTP 404 Not Found: the page does not exist", "c4", FETCH, 310),
        ToolApproval("write_file", {"path": "notes/nvda.md"}, "allow-session", "c5"),
        ToolApproval("write_file", {"path": "/etc/hosts"}, "deny", "c6"),
        ToolDenied("write_file", {"path": "/etc/hosts"}, "The user did not approve this call.",
                   "c6"),
        Microcompact(6, 42_000, "count"),
        MemoryFlush("start"),
        MemoryFlush("end", ["2025-01-02.md"]),
        Compaction("start"),
        Compaction("end", True, 120_000, 8_000, "gpt-4.1-mini"),
        ContextCleared(12, 5),
        QueueDrain(1, "also compare Intel"),
        ScratchpadError("scratchpads/2025-01-02-101500_abc.jsonl",
                        "Could not write the scratchpad scratchpads/2025-01-02-101500_abc.jsonl: "
                        "No space left on device (ENOSPC)"),
        StreamProgress(300, "responding"),
        Verification(checked=7, supported=6, status="unverified",
                     unsupported=[{"text": "78%", "value": 78.0, "start": 0, "end": 0}],
                     final=False),
        Done(ANSWER, [{"tool": "get_financials"}] * 2 + [{"tool": "calculator"},
                                                         {"tool": "web_fetch"}],
             iterations=3, total_time_ms=12_400,
             token_usage={"input_tokens": 12_300, "output_tokens": 1_100},
             tokens_per_second=45.0, context_tokens=20_000, context_threshold=95_000,
             model="gpt-4.1",
             citations=[{"id": "S1", "tool": "get_financials",
                         "title": "income_statements[NVDA, annual] · SEC EDGAR",
                         "url": "https://www.sec.gov/cgi-bin/browse-edgar?CIK=NVDA"},
                        {"id": "S2", "tool": "get_financials",
                         "title": "income_statements[AMD, annual] · SEC EDGAR", "url": ""},
                        {"id": "S3", "tool": "calculator",
                         "title": "calculator: 60922 / 26974 - 1", "url": ""}],
             verification={"checked": 6, "supported": 6, "unsupported": [],
                           "unknown_citations": [], "status": "verified"}),
    ]


def main(argv: Sequence[str] | None = None) -> None:
    """Play the sample run on stdout: live view by default, ``--plain`` or ``--json``."""
    args = list(sys.argv[1:] if argv is None else argv)
    from rich.console import Console

    from dexter.render import choose_renderer

    console = Console()
    renderer = choose_renderer(console, json="--json" in args,
                               is_terminal=console.is_terminal and "--plain" not in args)
    try:
        for event in sample_events():
            renderer.handle(event)
            time.sleep(0.4 if isinstance(event, ToolStart | Thinking | StreamProgress) else 0.15)
    finally:
        renderer.close()


if __name__ == "__main__":
    main()
