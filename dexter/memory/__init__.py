"""Persistent memory: markdown files under ``DEXTER_HOME/memory``, a SQLite index, hybrid search.

The file format is described in ``dexter.memory.store``; the index in ``dexter.memory.index``;
ranking in ``dexter.memory.search``. Start from ``dexter.memory.manager.MemoryManager``.
"""
