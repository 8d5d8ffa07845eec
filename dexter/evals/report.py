"""The readable outputs of an eval: ``report.md`` and the summary table on the terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dexter.evals.outputs import QuestionResult
from dexter.providers.pricing import format_cost


def fmt_score(value: float | None) -> str:
    """``0.733`` or ``-`` when there is nothing to average."""
    return "-" if value is None else f"{value:.3f}"


def fmt_rate(value: float | None) -> str:
    """``40.0%`` or ``-``."""
    return "-" if value is None else f"{value * 100:.1f}%"


def fmt_cost(value: float | None) -> str:
    """``$1.23`` or ``unpriced`` when the model has no price in the catalog."""
    return "unpriced" if value is None else format_cost(value)


def fmt_seconds(value: float | None) -> str:
    """``12.3s``, ``4m 05s`` or ``-``."""
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f}s"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes}m {seconds:02d}s"


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The summary as (label, value) rows, shared by the terminal table and the report."""
    rows = [
        ("model", str(summary.get("model", ""))),
        ("judge", str(summary.get("judge_model", ""))),
        ("questions", str(summary["questions"])),
        ("completed", str(summary["completed"])),
        ("failed", str(summary["failed"])),
        ("judge errors", str(summary["judge_errors"])),
        ("not run", str(summary["not_run"])),
        ("mean score", fmt_score(summary["mean_score"])),
        ("pass-all rate", fmt_rate(summary["pass_all_rate"])),
        ("criteria passed", f"{summary['criteria_passed']} of {summary['criteria']}"),
        ("run cost", fmt_cost(summary["total_cost_usd"])),
        ("median cost", fmt_cost(summary["median_cost_usd"])),
        ("judge cost", fmt_cost(summary["judge_cost_usd"])),
        ("tokens in / out", f"{summary['input_tokens']:,} / {summary['output_tokens']:,}"),
        ("judge tokens in / out",
         f"{summary['judge_input_tokens']:,} / {summary['judge_output_tokens']:,}"),
        ("run time (sum / median)",
         f"{fmt_seconds(summary['total_seconds'])} / {fmt_seconds(summary['median_seconds'])}"),
    ]
    if summary.get("from_runs"):
        rows.insert(2, ("recorded data of", str(summary["from_runs"])))
    return [(label, value) for label, value in rows if value]


def type_rows(summary: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """(type, questions, mean score, pass-all rate) per question type."""
    return [(kind, str(row["questions"]), fmt_score(row["mean_score"]), fmt_rate(row["pass_all_rate"]))
            for kind, row in summary["by_type"].items()]


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.strip().splitlines()) or "> (empty)"


def _headline(result: QuestionResult) -> str:
    if result.status == "ok":
        return (f"score {fmt_score(result.score)} ({result.criteria_passed} of "
                f"{len(result.verdicts)}){' · all passed' if result.passed_all else ''}")
    if result.status == "failed":
        return "failed (score 0)"
    return "judge error (not scored)"


def report_markdown(summary: Mapping[str, Any], results: Sequence[QuestionResult]) -> str:
    """``report.md``: the summary table, the table per type, then every question with its
    answer and verdicts."""
    title = f"# dexter eval: {summary.get('model', '')}"
    lines = [title, ""]
    if summary.get("dataset"):
        lines += [f"Dataset: `{summary['dataset']}`", ""]
    lines += ["| | |", "|---|---|"]
    lines += [f"| {label} | {_cell(value)} |" for label, value in summary_rows(summary)]
    lines += ["", "## By type", "", "| type | questions | mean score | pass-all rate |",
              "|---|---:|---:|---:|"]
    lines += [f"| {_cell(kind)} | {n} | {mean} | {rate} |" for kind, n, mean, rate in type_rows(summary)]
    lines += ["", "## Questions", ""]
    for result in results:
        kind = f" [{result.type}]" if result.type else ""
        lines += [f"### {result.id}.{kind} {_headline(result)}", "", _quote(result.question), ""]
        cost = fmt_cost(result.cost_usd)
        facts = [f"status `{result.status}`", f"{fmt_seconds(result.seconds)}",
                 f"{result.input_tokens:,} in / {result.output_tokens:,} out", cost]
        if result.verification:
            facts.append(f"figures {result.verification.get('status', '')}")
        if result.scratchpad:
            facts.append(f"scratchpad `{result.scratchpad}`")
        lines += [" · ".join(facts), ""]
        if result.error:
            lines += [f"**Error:** {_cell(result.error)}", ""]
        if result.answer and result.status != "failed":
            lines += ["**Answer**", "", _quote(result.answer), ""]
        if result.expected:
            lines += ["**Expected**", "", _quote(result.expected), ""]
        if result.rubric:
            lines += ["| # | operator | criterion | verdict | reason |", "|---:|---|---|---|---|"]
            verdicts = {v.get("criterion"): v for v in result.verdicts}
            for n, item in enumerate(result.rubric, 1):
                verdict = verdicts.get(n)
                mark = "-" if verdict is None else ("pass" if verdict.get("passed") else "FAIL")
                reason = "" if verdict is None else str(verdict.get("reason", ""))
                lines.append(f"| {n} | {item.get('operator', '')} | {_cell(item.get('criteria', ''))} "
                             f"| {mark} | {_cell(reason)} |")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def summary_table(summary: Mapping[str, Any]) -> Any:
    """The summary and the per-type table as one rich renderable for the terminal."""
    from rich.console import Group
    from rich.table import Table

    main = Table(title="dexter eval", title_justify="left", show_header=False)
    main.add_column("", style="bold")
    main.add_column("", justify="right")
    for label, value in summary_rows(summary):
        main.add_row(label, value)
    types = Table(title="By type", title_justify="left")
    for column, justify in (("type", "left"), ("questions", "right"), ("mean score", "right"),
                            ("pass-all rate", "right")):
        types.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in type_rows(summary):
        types.add_row(*row)
    return Group(main, types)
