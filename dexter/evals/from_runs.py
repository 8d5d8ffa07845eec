"""``dexter eval --from-runs DIR``: an earlier eval's questions again, each run on the tool
results its own scratchpad recorded (``dexter.rerun``), so a prompt or model change is
measured on exactly the data the earlier runs fetched.

The questions, expected answers and rubrics come from ``DIR/results.jsonl`` (every line
carries them), the recordings from the scratchpads its lines name (relative to ``DIR``).
A call a recording does not have gets the "not recorded" error of ``dexter.rerun``; each
new run's scratchpad names the one it repeats (``rerun_of``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dexter.agent.loop import AgentSetup
from dexter.agent.prompts import build_system_prompt
from dexter.evals.dataset import DatasetError, EvalQuestion, parse_rubric
from dexter.evals.outputs import META_FILE, RESULTS_FILE, OutputError, ResultsFile, read_json
from dexter.evals.runner import QuestionSetupError
from dexter.rerun import RecordingError, load_recording, recorded_tools


class FromRunsError(Exception):
    """An earlier eval directory that cannot be rerun; the message says why."""


@dataclass
class EarlierEval:
    """What ``--from-runs`` takes from an earlier eval directory."""

    directory: Path
    meta: dict[str, Any]
    questions: list[EvalQuestion]
    scratchpads: dict[str, Path] = field(default_factory=dict)
    """The recorded run of each question (absolute paths)."""
    unrecorded: list[str] = field(default_factory=list)
    """Questions whose earlier run left no scratchpad (left out)."""

    @property
    def model(self) -> str:
        """The earlier eval's model ('' when its eval.json does not say)."""
        return str(self.meta.get("model") or "")

    @property
    def judge_model(self) -> str:
        """The earlier eval's judge ('' when its eval.json does not say)."""
        return str(self.meta.get("judge_model") or "")


def load_earlier(directory: Path) -> EarlierEval:
    """Read an earlier eval directory. Raises :class:`FromRunsError`."""
    if not directory.is_dir():
        raise FromRunsError(f"--from-runs {directory}: there is no such eval directory.")
    path = directory / RESULTS_FILE
    if not path.is_file():
        raise FromRunsError(f"--from-runs {directory}: it has no {RESULTS_FILE}; give the --out "
                            "directory of an earlier dexter eval.")
    try:
        found = ResultsFile(path).read()
        meta = read_json(directory / META_FILE) or {}
    except OutputError as exc:
        raise FromRunsError(str(exc)) from None
    earlier = EarlierEval(directory, meta, [])
    for ident, result in found.items():
        try:
            rubric = parse_rubric(result.rubric, f"{path} question {ident}")
        except DatasetError as exc:
            raise FromRunsError(str(exc)) from None
        if not result.scratchpad:
            earlier.unrecorded.append(ident)
            continue
        earlier.questions.append(EvalQuestion(ident, result.question, result.expected,
                                              result.type, rubric))
        pad = Path(result.scratchpad)
        earlier.scratchpads[ident] = (pad if pad.is_absolute() else directory / pad).absolute()
    if not earlier.questions:
        raise FromRunsError(f"--from-runs {directory}: none of its questions has a recorded run.")
    return earlier


def rules_text(home: Path) -> str:
    """The user's research rules (``DEXTER_HOME/RULES.md``) for a rebuilt system prompt."""
    try:
        return (home / "RULES.md").read_text(encoding="utf-8")
    except OSError:
        return ""


def replay_setup(setup: AgentSetup, scratchpad: Path, *, rules: str = "") -> AgentSetup:
    """The eval's setup with its tools answering from one recorded run (a fresh set of
    wrappers, so each run counts its own answers). Raises ``QuestionSetupError`` when the
    recording cannot be read: that question fails, the eval goes on."""
    try:
        recording = load_recording(scratchpad)
    except RecordingError as exc:
        raise QuestionSetupError(str(exc)) from None
    tools = recorded_tools(recording, setup.tools)
    prompt = setup.system_prompt
    if [t.name for t in tools] != [t.name for t in setup.tools]:
        # The recording used a tool this session lacks: list it too, as the run will offer it.
        prompt = build_system_prompt(tools, rules=rules)
    return dataclasses.replace(setup, tools=tools, system_prompt=prompt,
                               rerun_of=recording.path)
