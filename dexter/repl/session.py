"""The REPL's agent session, without any terminal: the agent, the conversation, the costs.

:class:`ReplSession` opens the agent session for the current settings (or keeps the
configuration problem that stops it, with guidance), rebuilds it after a settings change
while keeping the memory recall frozen, runs one query against the session's
:class:`~dexter.agent.conversation.Conversation` and records how it ended (the summary in
the background, the sessions log, the cost, the context estimate). What it shows goes to
an :class:`~dexter.repl.protocol.Output` and to the renderer it is given for each run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from dexter import __version__
from dexter.agent.conversation import Conversation, append_session_log
from dexter.agent.executor import Approver
from dexter.agent.factory import Session, build_session, shell_notice
from dexter.agent.loop import Agent
from dexter.agent.queue import MessageQueue
from dexter.agent.sessions import SessionError, SessionRecord, SessionStore
from dexter.config import ConfigError, Settings
from dexter.config_trust import ConfigWatch
from dexter.context.tokens import estimate_message_tokens, estimate_tool_specs_tokens
from dexter.events import Done, Event, MemoryRecalled, RunStart, ToolEnd, ToolProgress, ToolStart
from dexter.messages import Message, SystemMessage
from dexter.providers.base import ToolSpec
from dexter.providers.registry import ModelInfo, api_key_for, resolve_model
from dexter.render.base import for_terminal
from dexter.render.live import LiveRenderer
from dexter.render.plain import PlainRenderer
from dexter.repl.cost import CostTracker, format_cost, model_price, usage_cost
from dexter.repl.protocol import Output
from dexter.repl.view import WARNING, IntroInfo, key_problem
from dexter.reports import Report, build_report
from dexter.reports.export import report_time
from dexter.secrets import scrub_value
from dexter.text import clean_value
from dexter.tools.base import UserInputFn

SessionBuilder = Callable[..., Session]
"""``build_session``-compatible: ``(settings, *, approver, interactive, queue, ...)``."""

RunRenderer = LiveRenderer | PlainRenderer
RendererFactory = Callable[[ModelInfo | None], RunRenderer]
"""Makes the renderer of one run, given the model's price (None when unknown)."""

INTERRUPTED_LINE = "Interrupted · what should dexter do instead?"
NO_MODEL = "No model is ready. Pick one with /model."
ASK_TOOL = "ask_user_question"


async def close_session(session: Session | None) -> None:
    """Close the session's model clients (errors while closing are not interesting)."""
    if session is not None:
        await session.aclose()


def context_estimate(agent: Any, messages: Sequence[Message]) -> int:
    """Tokens the agent's next request would hold (tool definitions included, as in the
    closing line of a finished run)."""
    estimate = getattr(agent, "context_tokens", None)
    if callable(estimate):
        with contextlib.suppress(Exception):
            return int(estimate())
    return estimate_message_tokens(messages)


def shown_elsewhere(event: Event) -> bool:
    """Events the REPL shows itself: the question tool's row (its prompt and the
    ``Answered:`` block stand for it; its errors are still shown)."""
    return isinstance(event, ToolStart | ToolProgress | ToolEnd) and event.tool == ASK_TOOL


class ReplSession:
    """The agent session of one REPL, and what it keeps between runs."""

    def __init__(
        self,
        settings: Settings,
        out: Output,
        *,
        new_renderer: RendererFactory,
        approver: Approver,
        request_user_input: UserInputFn | None,
        build: SessionBuilder = build_session,
        interactive: bool = True,
        resume: SessionRecord | None = None,
        watch: ConfigWatch | None = None,
    ) -> None:
        self.settings = settings
        self.watch = watch
        """The workspace config files read at start: a run that changed one is told."""
        self.out = out
        self.queue = MessageQueue()
        self.sessions = SessionStore(settings.home_path)
        self.record = resume if resume is not None else self.sessions.new(settings.model)
        """The saved session this REPL writes after every turn (a resumed one, or new)."""
        self.resumed = resume is not None
        self.conversation: Conversation = self.record.conversation
        self.costs = CostTracker()
        self.session: Session | None = None
        self.problem = ""
        self.context_tokens = 0
        self.renderer: RunRenderer | None = None
        """The current run's renderer, while a run is rendering."""
        self.interrupting = False
        """Set by whoever cancels the run for the user: a cancel without it is not ours."""
        self._new_renderer = new_renderer
        self._approver = approver
        self._request_user_input = request_user_input
        self._build = build
        self._interactive = interactive
        self._recall: tuple[MemoryRecalled | None, str] | None = None
        """The memory recalled when the session opened: frozen for the session's life."""
        self.last_report: Report | None = None
        """The report of the last answered question (``/export``, ``/chart``)."""

    @property
    def agent(self) -> Agent | None:
        """The current agent, or None when no model can run."""
        return self.session.agent if self.session is not None else None

    # -- opening and rebuilding ---------------------------------------------------------------

    def open_session(self) -> bool:
        """Build the agent for the current settings; on a configuration problem keep none.

        Returns whether a model can run. The problem (e.g. a missing key) is kept in
        ``problem`` with guidance on how to fix it.
        """
        frozen = self._recall
        try:
            session = self._build(
                self.settings, approver=self._approver, interactive=self._interactive,
                queue=self.queue, request_user_input=self._request_user_input,
                **({"recall": frozen} if frozen is not None else {}),
            )
        except ConfigError as exc:
            self.session = None
            self.problem = key_problem(str(exc), self._missing_key_var(),
                                       interactive=self._interactive)
            return False
        if frozen is None:
            self._recall = (session.recalled, session.memory_text)
            notice = shell_notice(session)
            if notice:
                self.out.warn(notice)
        else:
            # the recall is the session's, loaded once (the conversation says it once)
            session.recalled = frozen[0]
        self.session = session
        self.problem = ""
        return True

    def _missing_key_var(self) -> str | None:
        try:
            provider = resolve_model(self.settings.model, self.settings).provider
        except ConfigError:
            return None
        if provider.api_key_env and api_key_for(provider) is None:
            return provider.api_key_env
        return None

    async def rebuild(self) -> bool:
        """Rebuild the agent after a settings change (model, search provider, rules)."""
        old = self.session
        ok = self.open_session()
        if old is not None and old is not self.session:
            await close_session(old)
        return ok

    async def aclose(self) -> None:
        """End the session: cancel pending summaries, save it, close the model clients."""
        await self.conversation.aclose()
        self.save_session()
        await close_session(self.session)

    # -- the saved session ------------------------------------------------------------------

    def save_session(self) -> None:
        """Save the conversation to its session file (a problem is a note, never fatal)."""
        if not self.record.worth_saving():
            return
        try:
            notice = self.sessions.save(self.record)
        except SessionError as exc:
            self.out.note(str(exc))
            return
        if notice:
            self.out.note(notice)

    def new_session(self) -> None:
        """Go on in a new saved session (after ``/clear``); the old one stays resumable."""
        self.record = self.sessions.new(self.settings.model, self.conversation)
        self.resumed = False
        self.last_report = None

    # -- what the views show ------------------------------------------------------------------

    def model_label(self) -> str:
        """The model name for the toolbar and views."""
        return self.session.model_name if self.session is not None else self.settings.model

    def threshold(self) -> int:
        """The current agent's context threshold (0 without an agent)."""
        agent = self.agent
        return int(agent.threshold) if agent is not None else 0

    def next_request_view(self) -> list[Message]:
        """What the next question's request starts with: the system prompt and history."""
        agent = self.agent
        system = agent.setup.system_prompt if agent is not None else ""
        return [SystemMessage(system), *self.conversation.messages()]

    def tool_specs_tokens(self) -> int:
        """Estimated tokens of the tool definitions sent with every request."""
        agent = self.agent
        if agent is None:
            return 0
        specs = [ToolSpec(t.name, t.description, t.json_schema()) for t in agent.setup.tools
                 if t.bound()]  # an MCP tool in search mode is not sent until chosen
        return estimate_tool_specs_tokens(specs)

    def estimate_next_request(self) -> int:
        """Estimated tokens of the next request before its question."""
        return estimate_message_tokens(self.next_request_view()) + self.tool_specs_tokens()

    def intro_info(self, interrupt_key: str) -> IntroInfo:
        """What the intro shows for the current settings."""
        try:
            resolved = resolve_model(self.settings.model, self.settings)
            display, provider = resolved.display_name, resolved.provider.display_name
        except ConfigError:
            display, provider = self.settings.model, ""
        return IntroInfo(
            version=__version__, model=self.settings.model, model_display=display,
            provider=provider, home=str(self.settings.home_path),
            scratchpads=str(self.settings.scratchpad_path), problem=self.problem,
            interrupt_key=interrupt_key,
        )

    # -- one run ------------------------------------------------------------------------------

    async def run_one(self, query: str) -> str:
        """One run, rendered. Returns its status (``interrupted`` when cancelled by the user)."""
        session = self.session
        if session is None:
            self.out.warn(self.problem or NO_MODEL)
            return "error"
        agent = session.agent
        price = model_price(self.settings.model, self.settings)
        renderer = self._new_renderer(price)
        self.renderer = renderer
        done: Done | None = None
        try:
            async for event in agent.run(query, self.conversation):
                if isinstance(event, Done):
                    done = event
                elif isinstance(event, RunStart):
                    self.record.note_run(model=self.settings.model, scratchpad=event.scratchpad)
                if not shown_elsewhere(event):
                    renderer.handle(for_terminal(scrub_value(clean_value(event))))
        except asyncio.CancelledError:
            if not self.interrupting:
                raise
            self.interrupting = False
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            renderer.close()
            self._record_interrupt(agent)
            self.save_session()
            return "interrupted"
        except Exception as exc:  # a bug in a stage must not end the session
            renderer.close()
            self.out.error(f"The run failed unexpectedly: {type(exc).__name__}: {exc}")
            self.save_session()
            return "error"
        finally:
            self.renderer = None
            for warning in self.watch.newly_changed() if self.watch is not None else ():
                self.out.warn(warning)
        if done is None:
            self.out.error("The run ended without an answer.")
            self.save_session()
            return "error"
        if isinstance(renderer, PlainRenderer) and price is not None:
            cost = usage_cost(done.token_usage, price)
            if cost is not None:
                self.out.note(f"~{format_cost(cost)} estimated")
        self._record_done(done, price)
        if done.status == "ok":
            self.last_report = build_report(done, query, report_time(), self.conversation.ledger)
        return done.status

    def _record_done(self, done: Done, price: ModelInfo | None) -> None:
        turn = self.conversation.latest  # the run added its turn
        agent = self.agent
        if turn is not None:
            # the answer is on screen by now; its summary is written in the background
            # (and saved with the session when it is ready)
            task = self.conversation.summarize_later(
                turn, agent.setup.fast_model if agent is not None else None)
            if task is not None:
                record = self.record
                task.add_done_callback(lambda _task: self._save_summary(record))
            if done.status == "ok":
                problem = append_session_log(self.settings.home_path, turn)
                if problem:
                    self.out.note(problem)
        self.costs.add(self.settings.model, done.token_usage, price)
        self.context_tokens = done.context_tokens
        self.save_session()

    def _save_summary(self, record: SessionRecord) -> None:
        """A turn's summary is ready: save it, unless the session changed meanwhile."""
        if record is self.record:
            self.save_session()

    def _record_interrupt(self, agent: Agent) -> None:
        """Say so; the run kept its repaired transcript as the turn and wrote the record."""
        self.context_tokens = context_estimate(agent, agent.messages)
        self.out.print(INTERRUPTED_LINE, style=WARNING)
