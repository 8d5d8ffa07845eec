"""What opening an HTTP client costs dexter: the SDK clients and the data sources' client,
with the process's shared TLS context (``dexter/tls.py``), next to what each client paid
when it loaded the trust store itself (the libraries' default, still measured here).

Prints CPU milliseconds per client (median of many) and the ratio. Asserts nothing.
Run: ``.venv/bin/python benchmarks/client_setup.py``
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import httpx2
from anthropic import DefaultAsyncHttpxClient as AnthropicHttpClient
from openai import DefaultAsyncHttpxClient as OpenAIHttpClient

from dexter.providers.anthropic_messages import AnthropicModel
from dexter.providers.base import CallTimeouts
from dexter.providers.openai_chat import OpenAIChatModel
from dexter.tls import httpx_context

RUNS = 40
URL = "http://127.0.0.1:9/v1"


def cpu_ms(make: Callable[[], Any]) -> float:
    make()  # imports and the shared context, once
    samples = []
    for _ in range(RUNS):
        started = time.process_time()
        make()
        samples.append((time.process_time() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    timeouts = CallTimeouts()
    rows = [
        ("OpenAI SDK client", lambda: OpenAIChatModel._new_client("sk-x", URL, timeouts),
         lambda: OpenAIHttpClient(base_url=URL)),
        ("Anthropic SDK client", lambda: AnthropicModel._new_client("sk-x", URL, timeouts),
         lambda: AnthropicHttpClient(base_url=URL)),
        ("data sources' httpx client",
         lambda: httpx.AsyncClient(verify=httpx_context()),
         lambda: httpx.AsyncClient()),
    ]
    print(f"CPU per client opened (median of {RUNS}); 'own trust store' is the library's "
          "default, which loads it for each client")
    for name, shared, own in rows:
        now, before = cpu_ms(shared), cpu_ms(own)
        print(f"  {name:28s} shared context {now:6.2f} ms   own trust store {before:6.2f} ms"
              f"   ({before / now:4.1f}x)")
    print(f"  loading the trust store alone: httpx2 {cpu_ms(httpx2.create_ssl_context):.2f} ms, "
          f"httpx {cpu_ms(httpx.create_ssl_context):.2f} ms")


if __name__ == "__main__":
    main()
