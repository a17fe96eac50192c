"""Bench report: Markdown tables, a CSV of every run, and PNG plots.

Metrics (per planner, per task family): search success (SayPlan), executability
(simulator-verified) and correctness (goal check), replanning rounds, and
LookPlanGraph's SR / APP / APL / NRR; tokens per call and cumulative (SayPlan
figure 3) and time per call.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

CSV_FIELDS = (
    "task", "env", "family", "planner", "executable", "executed_actions", "correct", "search_success", "precision",
    "nrr", "replanning_rounds", "plan_length", "llm_calls", "prompt_tokens", "completion_tokens", "elapsed_s",
    "failure", "error",
)  # fmt: skip


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _pct(values: list[bool]) -> str:
    return f"{100.0 * sum(values) / len(values):.1f}%" if values else "-"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


#: why a run did not succeed, in the words of issue 37's classes (the order is the table's)
FAILURE_CLASSES = (
    "bad search: never planned",
    "bad search: wrong answer",
    "unverifiable plan",
    "replans exhausted",
    "verified, goal not met",
    "deadline",
    "backend error",
    "raised",
)


def failure_class(row: dict[str, Any]) -> str:
    """Why a run failed ("" for a success): from its outcome code, message and scores.

    A search task succeeds when its answer names the expected node(s); a planning task when its plan is verified and
    meets the goal. Among failures: the model never proposed a plan (the search used up its steps or calls), proposed
    one but never an executable one (budget), used up its replanning rounds, or ended with a verified plan that
    answers or does the wrong thing; or the LLM itself failed (its call deadline, or another backend error).
    """
    if row.get("error"):
        return "raised"
    search, correct = row.get("search_success"), row.get("correct")
    if (search is None or search) and (correct is None or correct) and row.get("executable"):
        return ""
    failure, message = str(row.get("failure") or ""), str(row.get("message") or "")
    if failure == "backend_error":
        return "deadline" if "deadline" in message else "backend error"
    if failure == "replans_exhausted":
        return "replans exhausted"
    if row.get("executable"):
        return "bad search: wrong answer" if search is False else "verified, goal not met"
    proposed = any(c.get("stage") in ("plan", "replan") for c in row.get("calls", []))
    return "unverifiable plan" if proposed else "bad search: never planned"


def _rates(rows: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """Median prompt tokens read per second and answer tokens written per second over the calls that measured them."""
    read = [
        (c["prompt"] - c.get("cached", 0)) / c["prompt_s"]
        for r in rows
        for c in r.get("calls", [])
        if c.get("prompt_s") and c["prompt"] - c.get("cached", 0) > 0
    ]
    write = [c["completion"] / c["decode_s"] for r in rows for c in r.get("calls", []) if c.get("decode_s")]
    return (statistics.median(read) if read else None), (statistics.median(write) if write else None)


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["planner"], row["family"])].append(row)
        groups[(row["planner"], "all")].append(row)
    out = []
    for (planner, family), items in sorted(groups.items()):
        search = [bool(r["search_success"]) for r in items if r["search_success"] is not None]
        planning = [r for r in items if r["correct"] is not None]
        successes = [r for r in planning if r["correct"]]
        ran = [r for r in items if not r.get("error")]  # costs are means over runs that did not raise
        out.append(
            {
                "planner": planner,
                "family": family,
                "runs": len(items),
                "errors": len(items) - len(ran),
                "search_success": _pct(search),
                "executability": _pct([bool(r["executable"]) for r in planning]) if planning else "-",
                "correctness (SR)": _pct([bool(r["correct"]) for r in planning]) if planning else "-",
                "APP": _num(_mean([float(r["precision"]) for r in planning])),
                "APL": _num(_mean([float(r["plan_length"]) for r in successes]), 1),
                "NRR": _num(_mean([float(r["nrr"]) for r in planning if r["nrr"] is not None])),
                "replans": _num(_mean([float(r["replanning_rounds"]) for r in ran])),
                "calls": _num(_mean([float(r["llm_calls"]) for r in ran]), 1),
                "tokens": _num(_mean([float(r["prompt_tokens"] + r["completion_tokens"]) for r in ran]), 0),
                "s/call": _num(
                    _mean([c["latency_s"] for r in ran for c in r.get("calls", []) if c.get("latency_s")]), 2
                ),
            }
        )
        read, write = _rates(ran)
        if read is not None or write is not None:  # a backend that measures them (the embedded model)
            out[-1].update(
                {
                    "s/task (median)": _num(statistics.median(float(r["elapsed_s"]) for r in ran), 0),
                    "read tok/s": _num(read, 0),
                    "write tok/s": _num(write, 1),
                }
            )
    return out


def failure_table(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown lines: per planner, how many runs failed in each class (only the classes that occur)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in rows:
        counts[row["planner"]][failure_class(row) or "success"] += 1
    classes = ["success", *(c for c in FAILURE_CLASSES if any(c in k for k in counts.values()))]
    lines = ["| planner | " + " | ".join(classes) + " |", "|" + "---|" * (len(classes) + 1)]
    for planner in sorted(counts):
        lines.append(f"| {planner} | " + " | ".join(str(counts[planner].get(c, 0)) for c in classes) + " |")
    return lines


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def markdown(summary: list[dict[str, Any]], header_note: str, rows: list[dict[str, Any]] | None = None) -> str:
    if not summary:
        return "# Bench report\n\nNo runs.\n"
    columns = list(summary[0])
    lines = ["# Bench report", "", header_note, "", "| " + " | ".join(columns) + " |"]
    lines.append("|" + "---|" * len(columns))
    for row in summary:
        lines.append("| " + " | ".join(str(row[c]) for c in columns) + " |")
    lines += [
        "",
        "search_success: share of search tasks whose answer names the expected node(s).",
        "executability: share of planning runs with a simulator-verified plan; correctness (SR): goal met.",
        "APP: mean plan precision; APL: mean plan length of successful runs;",
        "NRR: nodes observed / nodes the goal names.",
        "errors: runs that raised instead of returning a result; they count as failed runs in the shares",
        "and are left out of the cost means (replans, calls, tokens, s/call).",
        "",
        "Plots: tokens_per_call.png (prompt tokens at each call, SayPlan figure 3) and "
        "cumulative_tokens.png, time_per_call.png.",
    ]
    if rows:
        lines += ["", "## How the runs ended", "", *failure_table(rows)]
    errors = [r for r in rows or [] if r.get("error")]
    if errors:
        lines += ["", "## Runs that raised", ""]
        lines += [f"- {r['planner']} {r['task']}: {str(r['error']).splitlines()[0][:300]}" for r in errors]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    by_planner: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_planner[row["planner"]].append(row)
    specs = (
        ("tokens_per_call.png", "prompt tokens at each call", lambda calls: [c["prompt"] for c in calls]),
        ("cumulative_tokens.png", "cumulative tokens", _cumulative),
        ("time_per_call.png", "seconds per call", lambda calls: [c["latency_s"] for c in calls]),
    )
    for name, ylabel, series in specs:
        fig, ax = plt.subplots(figsize=(7, 4))
        for planner, items in sorted(by_planner.items()):
            curves = [series(r["calls"]) for r in items if r.get("calls")]
            if not curves:
                continue
            length = max(len(c) for c in curves)
            means = [statistics.fmean([c[i] for c in curves if i < len(c)]) for i in range(length)]
            ax.plot(range(1, length + 1), means, marker="o", markersize=3, label=planner)
        ax.set_xlabel("LLM call (step)")
        ax.set_ylabel(ylabel + " (mean over tasks)")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out_dir / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def _cumulative(calls: list[dict[str, Any]]) -> list[float]:
    total, out = 0.0, []
    for call in calls:
        total += call["prompt"] + call["completion"]
        out.append(total)
    return out


def write_report(rows: list[dict[str, Any]], out_dir: Path, header_note: str) -> dict[str, Path]:
    summary = summarise(rows)
    paths = {"report": out_dir / "report.md", "csv": out_dir / "results.csv"}
    paths["report"].write_text(markdown(summary, header_note, rows), encoding="utf-8")
    write_csv(rows, paths["csv"])
    for path in plot(rows, out_dir):
        paths[path.stem] = path
    return paths
