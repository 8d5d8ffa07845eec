"""The overflow retry: truncate and retry at most twice, then give up."""

from __future__ import annotations

from dexter.config import ContextSettings
from dexter.context.overflow import handle_overflow
from tests.context_builders import head, rounds


def test_first_retry_keeps_three_rounds_and_reports_it() -> None:
    messages = head() + rounds(8)
    truncated, event = handle_overflow(messages, ContextSettings(), retries_so_far=0)
    assert event is not None
    assert (event.cleared_count, event.kept_count, event.reason) == (10, 3, "overflow")
    assert truncated == head() + rounds(8)[-6:]


def test_retried_twice_then_reported() -> None:
    cfg = ContextSettings()
    messages = head() + rounds(8)
    first, event1 = handle_overflow(messages, cfg, retries_so_far=0)
    second, event2 = handle_overflow(first, cfg, retries_so_far=1)
    third, event3 = handle_overflow(second, cfg, retries_so_far=2)
    assert event1 is not None and event2 is not None
    assert event2.kept_count == 2  # the second retry is not a repeat of the first
    assert event3 is None
    assert third is second


def test_nothing_to_remove_is_reported_at_once() -> None:
    messages = head() + rounds(1)
    same, event = handle_overflow(messages, ContextSettings(), retries_so_far=0)
    assert event is None
    assert same is messages


def test_disabled_defenses_do_not_truncate() -> None:
    messages = head() + rounds(8)
    same, event = handle_overflow(messages, ContextSettings(enabled=False), retries_so_far=0)
    assert (same, event) == (messages, None)
