"""Shared pytest fixtures."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from dexter.testing.fakedata import FakeDataServer
from dexter.testing.fakellm import FakeLLM


def pytest_configure(config: pytest.Config) -> None:
    """A test run started in the background by a non-interactive shell inherits SIGINT
    ignored, and so would every dexter it starts: the Ctrl-C tests would then wait for an
    interrupt that never comes. Take SIGINT back, so each child starts with the default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if not hasattr(config, "workerinput"):  # the controlling process (or the only one)
        from tests import forkserver
        forkserver.start_shared()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """With ``DEXTER_TESTS_CPU_LOG=FILE``, append each test's CPU seconds (this process, the
    processes it waited for, and its fork-server runs) to FILE, to find the costly tests."""
    log = os.environ.get("DEXTER_TESTS_CPU_LOG")
    if not log:
        yield
        return
    before = _cpu_now()
    yield
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"{_cpu_now() - before:.3f} {item.nodeid}\n")


def _cpu_now() -> float:
    import resource

    from tests import forkserver
    own, children = (resource.getrusage(resource.RUSAGE_SELF),
                     resource.getrusage(resource.RUSAGE_CHILDREN))
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
            + forkserver.cpu_seconds)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (many seconds each: a fresh install, a red-team shard) run
    first, so that parallel workers do not end waiting for one of them started last.
    The order is otherwise kept (the sort is stable), and it is the same in every worker,
    as pytest-xdist requires."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(autouse=True)
def _process_state_is_left_as_found() -> Iterator[None]:
    """The suite runs in parallel and in any order (``make test`` uses pytest-xdist), so a
    test must not leave the environment or the working directory changed for the next one
    in its worker. Change them through ``monkeypatch`` (undone before this check runs, as
    autouse fixtures are set up first and torn down last) or pass a subprocess its own
    ``env``. A leak is undone here and fails the test that made it."""
    env, cwd = dict(os.environ), os.getcwd()
    yield
    leaked = sorted(k for k in env.keys() | os.environ.keys()
                    if env.get(k) != os.environ.get(k) and k != "PYTEST_CURRENT_TEST")
    moved = os.getcwd() != cwd
    if leaked or moved:
        for key in leaked:
            if key in env:
                os.environ[key] = env[key]
            else:
                del os.environ[key]
        os.chdir(cwd)
        pytest.fail("the test changed process state without monkeypatch: "
                    + ", ".join([*(f"${k}" for k in leaked), *(["the working directory"]
                                                              if moved else [])]))


@pytest.fixture(autouse=True)
def _state_folder_of_the_worker(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """dexter records what it wrote to settings files in the user state folder; a test in
    this process writes that record in its worker's temporary folder, never the real one
    (a ``dexter`` subprocess started with ``cli_env`` has a home of its own). Its name
    sorts after ``_process_state_is_left_as_found``: pytest sets up autouse fixtures of one
    file in name order, and that check must wrap this change."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.getbasetemp() / "state"))


@pytest.fixture
def fake_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    """A started :class:`FakeLLM`; both SDKs' env vars point at it (dummy keys, no proxy)."""
    with FakeLLM() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.anthropic_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
        yield fake


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    """A started :class:`FakeLLM` for tests that run the ``dexter`` command against it."""
    with FakeLLM() as server:
        yield server


@pytest.fixture
def data() -> Iterator[FakeDataServer]:
    """A started :class:`FakeDataServer` with the bundled SEC EDGAR and Financial Datasets
    fixtures."""
    server = FakeDataServer().start()
    try:
        yield server
    finally:
        server.stop()
