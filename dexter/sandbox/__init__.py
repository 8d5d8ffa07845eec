"""Containment: where tools may reach, enforced below the tools and the permission engine.

- :mod:`dexter.sandbox.paths`: the path sandbox of the file tools (working directory and
  ``DEXTER_HOME``, minus secrets, links and hard links).
- :mod:`dexter.sandbox.policy`: what one shell command may see (a :class:`SandboxPolicy`),
  built from the settings, the workspace and the grants of its approval.
- :mod:`dexter.sandbox.runner`: the operating-system sandbox every ``bash`` command runs in
  (bubblewrap on Linux, ``sandbox-exec`` on macOS), behind one interface.
- :mod:`dexter.sandbox.scan`: the per-command scan of the writable folders for secret names
  and ``.git``; :mod:`dexter.sandbox.guard`: binds opened without following links, and the
  check (and rollback) of protected paths after each command.
- :mod:`dexter.sandbox.seccomp` and :mod:`dexter.sandbox.cgroups`: the system-call filter
  and the per-command process and memory limits.

``docs/security.md`` describes the model: the boundary is the operating system; the shell
parser only decides what to ask.
"""
