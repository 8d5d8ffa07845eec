"""``dexter eval``: measured answer quality on a dataset of questions with rubrics.

``dataset`` reads CSV/JSONL datasets (the public 50 ships in ``data/``); ``judge`` grades an
answer against its rubric with one model call; ``runner`` runs questions as ordinary
non-interactive agent runs, several at once; ``outputs`` writes ``results.jsonl`` and
``summary.json``; ``report`` writes ``report.md`` and the terminal table; ``display`` shows
progress; ``compare`` sets two evals side by side; ``harness`` ties them together for the
CLI. Above ``agent`` (it runs agents), below ``repl`` and ``cli``. See docs/eval.md.
"""
