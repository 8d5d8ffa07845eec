"""Expensive fixture data built once per test run, whichever pytest-xdist worker asks first.

A module-scoped fixture is built again in every worker that runs one of the module's tests
(``make test`` spreads a module's tests over all of them), and xdist's ``loadgroup`` does
not pin them with pytest 9 (it renames ``item._nodeid``, which pytest 9 no longer reads).
:func:`built_once` builds a folder under the run's shared temporary root, under a lock:
the first worker builds it, the others wait and read it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from dexter.filelock import locked


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], None]) -> Path:
    """The folder ``name`` that ``build`` filled, built once for this test run (all its
    workers); a build that failed is tried again by the next worker that asks."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, shared by its workers (one per run)
    folder, done = root / name, root / f"{name}.done"
    with locked(root / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
