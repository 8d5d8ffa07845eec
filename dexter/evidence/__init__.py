"""Answers you can check: the source ledger, figures in text, citations, the number check.

- ``ledger``: every successful tool result of a session as a source with an id (``S3``).
- ``numbers``: the figures an answer states (value, tolerance, kind) and a source's numbers.
- ``citations``: ``[S3]`` citations in an answer.
- ``verify``: the deterministic check of an answer's figures against the ledger.
- ``report``: the marked answer, the Sources section and the verification line.

See docs/verification.md.
"""
