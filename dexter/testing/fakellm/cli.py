"""``python -m dexter.testing.fakellm``: serve a JSON script until killed."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from dexter.testing.fakellm.server import FakeLLM
from dexter.testing.fakellm.steps import load_script

# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dexter.testing.fakellm --script S.json --port 0 --port-file P``."""
    parser = argparse.ArgumentParser(
        prog="python -m dexter.testing.fakellm", description="Scripted fake LLM HTTP server."
    )
    parser.add_argument("--script", help="JSON list of steps served FIFO")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--default", help="a JSON step served when the queue is empty")
    parser.add_argument("--log", help="append one JSON line per request (body + violations)")
    args = parser.parse_args(argv)

    fake = FakeLLM(
        load_script(args.script) if args.script else (),
        host=args.host,
        port=args.port,
        log_path=args.log,
    )
    if args.default:
        fake.set_default(json.loads(args.default))
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    fake.start()
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(fake.port), encoding="utf-8")
        tmp.replace(args.port_file)
    print(f"fakellm listening on {fake.url}", file=sys.stderr, flush=True)
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
        for v in fake.violations:
            print(f"fakellm violation: {v}", file=sys.stderr)
    return 0

