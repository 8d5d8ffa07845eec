"""Context engineering: the stages that keep a run inside the model's window.

One module per stage, each a small function (messages in, messages and a report out) that
the agent loop calls in the order of ``docs/architecture.md`` ("One turn, in order"):

- ``tokens``: the one token estimator; ``limits``: the threshold and the count it is
  compared with; ``trace``: the ``--trace`` hook.
- ``repair``: every tool call paired with one result.
- ``microcompact``: old re-fetchable results become placeholders with a retrieval clue.
- ``thinking``: older tool-calling turns lose their free text.
- ``results``: the per-result cap and the per-turn budget, with disk spill.
- ``threshold``: memory flush (``flush``), compaction (``compaction``), truncation
  (``truncate``) once over the threshold, the first two sent as a continuation of the
  conversation where the provider caches prompts (``continuation``); ``overflow``: the
  overflow retry.
"""
