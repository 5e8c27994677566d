"""Reads what `nvidia-smi` says about a host and turns it into preflight problems and NCCL settings.

Pure functions over the tool's text output, so every branch is unit-tested without a GPU
(tests/unit/test_sglang_host_filters.py). Messages name what was found and what is needed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

GPU_FIELDS = ("index", "name", "compute_cap", "driver_version", "memory.total")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# nvidia-smi's PCIe link types from the closest to the farthest; NODE is NCCL's PHB level
# (traffic crosses the CPU's host bridges within one NUMA node).
PCIE_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")
NCCL_P2P_LEVEL = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}


def version_tuple(text: Any) -> tuple[int, ...]:
    """'580.95.05' -> (580, 95, 5); '12.0' -> (12, 0); non-numeric parts end the tuple."""
    numbers: list[int] = []
    for part in str(text).strip().split("."):
        digits = re.match(r"\d+", part)
        if not digits:
            break
        numbers.append(int(digits.group()))
    return tuple(numbers)


def sglang_host_os_problem(
    distribution: str, version: Any, supported: dict[str, Any], major_version: Any = ""
) -> str:
    """'' when the OS release is supported, else what was found and what is needed.

    A listed release matches the full version (Ubuntu 24.04) or the major one (Debian 12 covers
    its point releases, whose facts say 12.15).
    """
    releases = [str(v) for v in supported.get(str(distribution), [])]
    if str(version) in releases or (str(major_version) and str(major_version) in releases):
        return ""
    needed = ", ".join(f"{name} {v}" for name, versions in supported.items() for v in versions)
    return f"OS: found {distribution} {version}, need one of {needed} (sglang_host_supported_os)."


def _memory_mib(text: str) -> int | None:
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else None


def sglang_host_parse_gpus(text: str, fields: Iterable[str] = GPU_FIELDS) -> list[dict[str, Any]]:
    """Rows of `nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]` as dicts.

    Keys: index (int), name, compute_cap, driver_version, memory_total_mib (int or None); any
    other queried field is kept as text under its name with '.' replaced by '_'.
    """
    names = list(fields)
    gpus: list[dict[str, Any]] = []
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(names) or not line.strip():
            continue
        row = dict(zip(names, cells, strict=True))
        if row.get("index", "0").lower() == "index":
            continue  # header line (format without noheader)
        gpu: dict[str, Any] = {k.replace(".", "_"): v for k, v in row.items()}
        if "index" in row:
            if not row["index"].isdigit():
                continue
            gpu["index"] = int(row["index"])
        if "memory.total" in row:
            del gpu["memory_total"]
            gpu["memory_total_mib"] = _memory_mib(row["memory.total"])
        gpus.append(gpu)
    return gpus


def _describe_models(gpus: list[dict[str, Any]]) -> str:
    counts = Counter(str(g.get("name", "?")) for g in gpus)
    return ", ".join(f"{n} x {name}" for name, n in sorted(counts.items()))


def sglang_host_gpu_problems(
    gpus: list[dict[str, Any]],
    required_count: int,
    min_driver: str = "",
    min_compute_cap: str = "",
    models: Iterable[str] = (),
) -> list[str]:
    """Why these GPUs cannot serve: count, driver, compute capability and model, found vs needed."""
    problems: list[str] = []
    required = int(required_count)
    if len(gpus) < required:
        found = f"{len(gpus)} ({_describe_models(gpus)})" if gpus else "0"
        problems.append(
            f"GPU count: found {found}, need at least {required} (sglang_host_gpu_count)."
        )
    if min_driver:
        drivers = sorted({str(g.get("driver_version", "")) for g in gpus})
        old = [d for d in drivers if version_tuple(d) < version_tuple(min_driver)]
        if old:
            problems.append(
                f"NVIDIA driver: found {', '.join(old)}, need >= {min_driver}"
                " (sglang_host_min_driver_version)."
            )
    if min_compute_cap:
        low = sorted(
            {
                (str(g.get("compute_cap", "")), str(g.get("name", "")))
                for g in gpus
                if version_tuple(g.get("compute_cap", "")) < version_tuple(min_compute_cap)
            }
        )
        for cap, name in low:
            problems.append(
                f"compute capability: found {cap or 'unknown'} ({name}), need >= {min_compute_cap}"
                " (sglang_host_min_compute_capability)."
            )
    wanted = [m for m in models if m]
    if wanted:
        others = sorted({str(g.get("name", "")) for g in gpus} - set(wanted))
        if others:
            problems.append(
                f"GPU model: found {', '.join(others)}, need one of {', '.join(wanted)}"
                " (sglang_host_gpu_models)."
            )
    return problems


def sglang_host_parse_topology(text: str) -> dict[str, Any]:
    """`nvidia-smi topo -m` as {interconnect, gpus, links, link_types, widest_pcie}.

    interconnect: single (one GPU), nvlink (every GPU pair over NVLink), pcie (no NVLink at all),
    mixed, or unknown (nothing parsed). links: {"GPU0-GPU1": "PIX", ...} for GPU pairs only (NIC
    rows and columns are ignored). widest_pcie: the farthest PCIe link type between two GPUs, or "".
    """
    columns: list[str] = []
    rows: dict[str, list[str]] = {}
    for raw in (text or "").splitlines():
        line = ANSI.sub("", raw)
        if not line.strip():
            if rows:
                break  # the legend follows the matrix
            continue
        cells = [c.strip() for c in line.split("\t")]
        if not columns and "GPU0" in cells:
            columns = [c for c in cells if c]
            continue
        if columns and re.fullmatch(r"GPU\d+", cells[0]):
            rows[cells[0]] = cells[1:]
    gpus = [c for c in columns if re.fullmatch(r"GPU\d+", c)]
    links: dict[str, str] = {}
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            row = rows.get(a, [])
            col = columns.index(b)
            if col < len(row):
                links[f"{a}-{b}"] = row[col]
    types = sorted(set(links.values()))
    pcie = [t for t in links.values() if t in PCIE_ORDER]
    nvlink = [t for t in links.values() if t.startswith("NV")]
    if len(gpus) == 1:
        interconnect = "single"
    elif not links:
        interconnect = "unknown"
    elif len(nvlink) == len(links):
        interconnect = "nvlink"
    elif not nvlink:
        interconnect = "pcie"
    else:
        interconnect = "mixed"
    widest = max(pcie, key=PCIE_ORDER.index) if pcie else ""
    return {
        "interconnect": interconnect,
        "gpus": len(gpus),
        "links": links,
        "link_types": types,
        "widest_pcie": widest,
    }


def sglang_host_nccl_env(
    topology: dict[str, Any], gpus: list[dict[str, Any]], p2p_pcie_models: Iterable[str]
) -> dict[str, str]:
    """NCCL environment for this topology.

    Pairs without NVLink talk over PCIe. Cards known to do P2P over PCIe (RTX PRO 6000 Blackwell)
    get NCCL_P2P_LEVEL wide enough for the farthest GPU pair, so NCCL does not fall back to
    copies through host memory; other cards get P2P disabled (consumer boards hang with it on).
    NVLink-only and single-GPU hosts keep NCCL's defaults.
    """
    if topology.get("interconnect") not in ("pcie", "mixed"):
        return {}
    capable = [m for m in p2p_pcie_models if m]
    names = {str(g.get("name", "")) for g in gpus}
    if names and capable and all(any(m in name for m in capable) for name in names):
        return {"NCCL_P2P_LEVEL": NCCL_P2P_LEVEL.get(topology.get("widest_pcie", ""), "SYS")}
    return {"NCCL_P2P_DISABLE": "1"}


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "sglang_host_os_problem": sglang_host_os_problem,
            "sglang_host_parse_gpus": sglang_host_parse_gpus,
            "sglang_host_gpu_problems": sglang_host_gpu_problems,
            "sglang_host_parse_topology": sglang_host_parse_topology,
            "sglang_host_nccl_env": sglang_host_nccl_env,
        }
