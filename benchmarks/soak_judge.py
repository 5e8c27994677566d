"""Judging and summary of benchmarks/readiness_soak.py (controller side, pure): each method's
answer against the ready line (false_ready_reasons, judge_row), the figures of a soak
(summarize) and their print (print_summary)."""

from __future__ import annotations

import statistics
from typing import Any


def false_ready_reasons(method: dict[str, Any], row: dict[str, Any]) -> list[str]:
    """Why a method's 'ready' was a lie; [] when it was true. Assumes the method answered."""
    truth, plan = row["truth"], row["plan"]
    reasons = []
    if method["t_return"] < truth["t"]:
        reasons.append("before_ready_line")
    if method["pid"] == row["before"]["pid"]:
        reasons.append("old_main_pid")
    elif method["pid"] != truth["pid"]:
        reasons.append("other_main_pid")
    if method["topk_seen"] is not None and method["topk_seen"] != plan["topk"]:
        reasons.append("old_config")
    return reasons


def judge_row(row: dict[str, Any]) -> None:
    for name in ("ours", "naive"):
        method = row[name]
        if not method["ok"] or row.get("truth") is None:
            method["verdict"], method["reasons"], method["lag_s"] = "error", [], None
            continue
        method["reasons"] = false_ready_reasons(method, row)
        method["verdict"] = "false_ready" if method["reasons"] else "true_ready"
        method["lag_s"] = round(method["t_return"] - row["truth"]["t"], 4)


def percentile(values: list[float], pct: int) -> float:
    """Linear interpolation between closest ranks (statistics.quantiles, inclusive)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"restarts": len(rows)}
    for name in ("ours", "naive"):
        verdicts = [r[name]["verdict"] for r in rows]
        true_lags = [r[name]["lag_s"] for r in rows if r[name]["verdict"] == "true_ready"]
        false_lags = [r[name]["lag_s"] for r in rows if r[name]["verdict"] == "false_ready"]
        reasons: dict[str, int] = {}
        for r in rows:
            for reason in r[name]["reasons"]:
                reasons[reason] = reasons.get(reason, 0) + 1
        out[name] = {
            "true_ready": verdicts.count("true_ready"),
            "false_ready": verdicts.count("false_ready"),
            "errors": verdicts.count("error"),
            "false_ready_reasons": reasons,
            "lag_true_ready_s": {
                "n": len(true_lags),
                "median": round(statistics.median(true_lags), 4) if true_lags else None,
                "p95": round(percentile(true_lags, 95), 4) if true_lags else None,
                "max": round(max(true_lags), 4) if true_lags else None,
            },
            "lag_false_ready_s": {
                "n": len(false_lags),
                "median": round(statistics.median(false_lags), 4) if false_lags else None,
                "min": round(min(false_lags), 4) if false_lags else None,
            },
        }
    return out


def fmt_s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f} s"


def print_summary(summary: dict[str, Any], traffic: dict[str, int]) -> None:
    print(f"\nrestarts: {summary['restarts']}")
    for name, label in (("ours", "ours (sglang_ready)"), ("naive", "naive (/v1/models)")):
        s = summary[name]
        lag, early = s["lag_true_ready_s"], s["lag_false_ready_s"]
        print(
            f"{label:22} false-ready {s['false_ready']:3d}  true-ready {s['true_ready']:3d}  "
            f"errors {s['errors']:3d}  reasons {s['false_ready_reasons'] or '-'}"
        )
        print(
            f"{'':22} lag (true-ready, n={lag['n']}): median {fmt_s(lag['median'])}, "
            f"p95 {fmt_s(lag['p95'])}, max {fmt_s(lag['max'])}"
        )
        if early["n"]:
            print(
                f"{'':22} false-ready answers came {fmt_s(early['median'])} (median) relative "
                f"to the ready line, earliest {fmt_s(early['min'])}"
            )
    print(f"background /generate streams: {traffic or 'no figures'}")
