"""The example scratchpad ``scratchpads/example-apple.jsonl``: a scripted research run.

A newcomer without a key can see what a run looks like with ``dexter replay
scratchpads/example-apple.jsonl``. The run is real in everything but the model: ``dexter
ask`` ran with dexter's fake provider (``testing.fakellm``) answering from the script
below, and its finance tools read Apple's real SEC EDGAR responses recorded in
``tests/fixtures/sec-real/`` (companyfacts, submissions, the FY2024 10-K) from the fake
data server. So the tool calls, their results, the source ledger and the figure check are
dexter's own; the model's words were written for the example. The file's ``init`` line
says so (``example``), and ``dexter replay`` shows that line first.

Regenerate it (after a change to what a run records) with::

    python -m dexter.testing.example_run scratchpads/example-apple.jsonl
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from dexter.testing.fakedata import FakeDataServer, RecordedTree
from dexter.testing.fakellm import FakeLLM, Reply, ToolCallSpec, Usage

ROOT = Path(__file__).resolve().parents[2]
SEC_REAL = ROOT / "tests" / "fixtures" / "sec-real"
EXAMPLE = ROOT / "scratchpads" / "example-apple.jsonl"
MODEL = "gpt-4.1"
QUESTION = ("How did Apple's revenue and net income change from fiscal 2023 to fiscal 2024, "
            "and what does the 10-K say drove it?")
LABEL = ("Scripted example: the model's turns were written for this demo and served by "
         "dexter's fake provider; the tool results are real SEC EDGAR responses for Apple, "
         "recorded in tests/fixtures/sec-real. Regenerate with: python -m "
         "dexter.testing.example_run scratchpads/example-apple.jsonl")
"""The ``example`` field of the ``init`` line, shown by ``dexter replay``."""

ANSWER = (
    "**Apple's revenue grew about 2% in fiscal 2024 while net income fell about 3%.**\n\n"
    "| | FY2023 | FY2024 | change |\n"
    "|---|---|---|---|\n"
    "| Revenue | $383.3B | $391.0B | up 2.02% |\n"
    "| Net income | $97.0B | $93.7B | down 3.36% |\n\n"
    "- **Revenue** rose from $383.3 billion to $391.0 billion [S1], up 2.02% [S3].\n"
    "- **Net income** fell from $97.0 billion to $93.7 billion [S1], down 3.36% [S4], even "
    "though revenue grew: the 10-K says the effective tax rate rose to 24.1% from 14.7%, due "
    "primarily to a one-time income tax charge of $10.2 billion, net, related to the State "
    "Aid Decision [S2].\n"
    "- **What drove sales**: in the 10-K's MD&A, Americas net sales increased due primarily "
    "to higher net sales of Services, and Europe's on Services and iPhone, while Greater "
    "China's decreased on lower net sales of iPhone and iPad [S2].\n\n"
    "Sources: Apple's XBRL company facts [S1] and its FY2024 Form 10-K [S2] on SEC EDGAR."
)


def script(fake: FakeLLM) -> None:
    """The model's side of the run, in the order dexter asks (the finance tools route
    with the fast model on the same fake provider)."""
    fake.enqueue(
        Reply(text="I'll pull Apple's annual income statements first.",
              tool_calls=[ToolCallSpec("get_financials", {
                  "query": "Apple annual income statements, fiscal 2023 to 2025"})],
              usage=Usage(6_200, 60)),
        Reply(tool_calls=[ToolCallSpec("get_income_statements", {
            "ticker": "AAPL", "period": "annual", "limit": 3})], usage=Usage(1_900, 40)),
        Reply(text="Now what the FY2024 10-K says drove the results.",
              tool_calls=[ToolCallSpec("read_filings", {
                  "query": "Apple FY2024 10-K MD&A: drivers of net sales and net income"})],
              usage=Usage(9_800, 50)),
        Reply(tool_calls=[ToolCallSpec("read_10k_items", {
            "ticker": "AAPL", "items": ["Item-7"], "fiscal_year": 2024})],
              usage=Usage(2_100, 40)),
        Reply(text="Computing the changes exactly.",
              tool_calls=[ToolCallSpec("calculator", {
                              "expression": "(391035 - 383285) / 383285 * 100"}),
                          ToolCallSpec("calculator", {
                              "expression": "(96995 - 93736) / 96995 * 100"})],
              usage=Usage(24_500, 70)),
        Reply(text=ANSWER, usage=Usage(25_100, 420)),
    )


Runner = Callable[[list[str], Path, dict[str, str]], tuple[int, str, str]]
"""Runs ``dexter ARGS`` in a folder with an environment: (exit code, stdout, stderr)."""


def run_dexter(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """``python -m dexter ARGS`` in a new interpreter."""
    run = subprocess.run([sys.executable, "-m", "dexter", *args], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=600)
    return run.returncode, run.stdout, run.stderr


def generate(out: Path, run: Runner = run_dexter) -> Path:
    """Run the scripted question through ``dexter ask`` (started by ``run``: a test passes
    one that forks a pre-imported interpreter) and write its scratchpad to ``out`` with the
    example label in its ``init`` line; returns ``out``."""
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as fake, \
            FakeDataServer(fallback=RecordedTree(SEC_REAL)) as data:
        script(fake)
        cwd = Path(tmp)
        env = {
            "PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8",
            "HOME": str(cwd / "home"), "XDG_CONFIG_HOME": str(cwd / "home" / ".config"),
            "DEXTER_HOME": str(cwd / ".dexter"), "DEXTER_MEMORY_ENABLED": "false",
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "OPENAI_BASE_URL": fake.openai_base_url, "OPENAI_API_KEY": "sk-example-not-a-key",
            "SEC_EDGAR_BASE_URL": data.url, "SEC_EDGAR_DATA_URL": data.url,
            "YAHOO_CHART_BASE_URL": data.url, "FINANCIAL_DATASETS_BASE_URL": data.url,
        }
        code, stdout, stderr = run(["ask", "--json", "--model", MODEL, QUESTION], cwd, env)
        if code != 0:
            raise RuntimeError(f"the example run failed ({code}):\n{stderr}\n{stdout[-3000:]}")
        fake.assert_no_violations()
        [pad] = sorted((cwd / "scratchpads").glob("*.jsonl"))
        lines = pad.read_text(encoding="utf-8").splitlines()
        lines = [real_urls(line, data.url) for line in lines]
    init = json.loads(lines[0])
    init["example"] = LABEL
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join([json.dumps(init, ensure_ascii=False), *lines[1:]]) + "\n",
                   encoding="utf-8")
    return out


def real_urls(text: str, base: str) -> str:
    """``text`` with the fake data server's URLs given back to the SEC hosts whose
    recorded responses it served (``www.sec.gov`` or ``data.sec.gov``), so the example's
    sources name where the data really comes from."""
    def host(match: re.Match[str]) -> str:
        path = match.group(1)
        for name in RecordedTree.HOSTS:
            if (SEC_REAL / name / path.split("?")[0].lstrip("/")).is_file():
                return f"https://{name}{path}"
        data_api = path.startswith(("/api/", "/submissions/"))
        return f"https://{'data.sec.gov' if data_api else 'www.sec.gov'}{path}"

    return re.sub(re.escape(base) + r"(/[^\s\"\\<>]*)", host, text)


def main(argv: list[str] | None = None) -> int:
    """``python -m dexter.testing.example_run [OUT]``."""
    args = sys.argv[1:] if argv is None else argv
    out = generate(Path(args[0]) if args else EXAMPLE)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
