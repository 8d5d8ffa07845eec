"""``dexter sandbox``: is the shell contained here, what may a command see, and proof."""

from __future__ import annotations

from pathlib import Path

from dexter.frontend import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, print_error, settings_for

MASKS_SHOWN = 8


def run_sandbox(config: Path | None, check: bool) -> int:
    """Print the sandbox status and policy; with ``check``, run the probes (exit 1 on a hole)."""
    from rich.table import Table

    from dexter.frontend import stdout_console
    from dexter.sandbox.policy import SandboxPolicyError, build_policy
    from dexter.sandbox.runner import detect_runner

    try:
        settings = settings_for(config)
    except CliError as exc:
        print_error(str(exc))
        return EXIT_USAGE
    console = stdout_console()
    runner = detect_runner(settings)
    console.print(runner.status.describe(), markup=False)
    cwd = Path.cwd()
    try:
        policy = build_policy(settings, cwd)
    except SandboxPolicyError as exc:
        print_error(f"{exc}.")
        return EXIT_USAGE
    if not runner.status.active:
        console.print("Without a sandbox every command that the parser cannot prove read-only "
                      "asks in the REPL and is refused under --yes.")
        return EXIT_OK if not check else EXIT_FAILED
    table = Table(show_header=False, box=None)
    table.add_row("read-write", ", ".join(str(p) for p in policy.writable_roots))
    table.add_row("read-only", "system folders; " + ", ".join(
        str(p) for p in (*policy.extra_read, *policy.protected_as("read-only"),
                         *policy.reveal)))
    table.add_row("hidden", ", ".join(str(p) for p in (policy.home,
                                                     *policy.protected_as("hidden"))))
    table.add_row("never created", ", ".join(str(p) for p in policy.protected_as("absent"))
                  or "-")
    masked = [*policy.masked_dirs, *policy.masked_files]
    shown = ", ".join(str(p) for p in masked[:MASKS_SHOWN])
    more = f" and {len(masked) - MASKS_SHOWN:,} more" if len(masked) > MASKS_SHOWN else ""
    table.add_row("masked (secret names)", (shown + more) or "-")
    table.add_row("network", "on" if policy.network else "off (asks per command)")
    table.add_row("environment", ", ".join(sorted(policy.env)))
    limits = policy.limits
    table.add_row("limits", f"memory {limits.memory_bytes >> 20:,} MiB, processes "
                  f"{limits.max_processes:,}, file size {limits.max_file_bytes >> 20:,} MiB, "
                  f"/tmp {limits.tmp_bytes >> 20:,} MiB (0: none)")
    console.print(table)
    if not check:
        return EXIT_OK
    from dexter.sandbox.check import check as run_probes

    results = run_probes(runner, settings, cwd)
    for result in results:
        mark = "[green]held[/]" if result.passed else "[bold red]BROKEN[/]"
        console.print(f"  {mark}  ", end="")
        console.print(result.name, markup=False)
    broken = [r for r in results if not r.passed]
    if broken:
        print_error(f"{len(broken)} of {len(results)} sandbox checks failed: "
                    + "; ".join(r.name for r in broken))
        return EXIT_FAILED
    console.print(f"All {len(results)} checks held.")
    return EXIT_OK
