"""roles/sglang_host filters, fed by the fake nvidia-smi's output (the real tool's format)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from sglang_host_loader import FAKE_NVIDIA_SMI, filters

f = filters()
QUERY = [
    "--query-gpu=index,name,compute_cap,driver_version,memory.total",
    "--format=csv,noheader",
]
RTX = "NVIDIA RTX PRO 6000 Blackwell Server Edition"


def smi(profile: str, *args: str) -> str:
    env = dict(os.environ, FAKE_NVIDIA_SMI_PROFILE=profile, FAKE_NVIDIA_SMI_CONFIG="/nonexistent")
    done = subprocess.run(
        [sys.executable, str(FAKE_NVIDIA_SMI), *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def gpus(profile: str) -> list[dict[str, Any]]:
    return f.sglang_host_parse_gpus(smi(profile, *QUERY))


def test_parse_gpus_reads_every_field() -> None:
    parsed = gpus("rtx-pro-6000-8x")
    assert [g["index"] for g in parsed] == list(range(8))
    assert parsed[3] == {
        "index": 3,
        "name": RTX,
        "compute_cap": "12.0",
        "driver_version": "580.95.05",
        "memory_total_mib": 97887,
    }


def test_parse_gpus_skips_the_header_and_reads_nounits() -> None:
    text = smi("h100-sxm-8x", QUERY[0], "--format=csv,nounits")
    parsed = f.sglang_host_parse_gpus(text)
    assert text.splitlines()[0].startswith("index, name")
    assert len(parsed) == 8
    assert parsed[0]["memory_total_mib"] == 81559


def test_parse_gpus_of_nothing_is_empty() -> None:
    assert f.sglang_host_parse_gpus("") == []
    assert f.sglang_host_parse_gpus("No devices were found\n") == []


def test_a_healthy_host_has_no_problems() -> None:
    problems = f.sglang_host_gpu_problems(gpus("rtx-pro-6000-8x"), 8, "580.65.06", "8.0", [RTX])
    assert problems == []


def test_too_few_gpus_names_found_and_needed() -> None:
    problems = f.sglang_host_gpu_problems(gpus("rtx-pro-6000-4x"), 8, "580.65.06", "8.0", [])
    assert problems == [f"GPU count: found 4 (4 x {RTX}), need at least 8 (sglang_host_gpu_count)."]


def test_no_gpus_at_all() -> None:
    assert f.sglang_host_gpu_problems([], 1) == [
        "GPU count: found 0, need at least 1 (sglang_host_gpu_count)."
    ]


def test_old_driver_compared_numerically() -> None:
    problems = f.sglang_host_gpu_problems(gpus("rtx-pro-6000-old-driver"), 8, "580.65.06")
    assert problems == [
        "NVIDIA driver: found 570.172.08, need >= 580.65.06 (sglang_host_min_driver_version)."
    ]
    # 580.100 is newer than 580.65 although it sorts lower as text.
    newer = [dict(g, driver_version="580.100.01") for g in gpus("rtx-pro-6000-8x")]
    assert f.sglang_host_gpu_problems(newer, 8, "580.65.06") == []


def test_low_compute_capability_and_wrong_model() -> None:
    h100 = gpus("h100-sxm-8x")
    problems = f.sglang_host_gpu_problems(h100, 8, "", "10.0", [RTX])
    assert problems == [
        "compute capability: found 9.0 (NVIDIA H100 80GB HBM3), need >= 10.0"
        " (sglang_host_min_compute_capability).",
        f"GPU model: found NVIDIA H100 80GB HBM3, need one of {RTX} (sglang_host_gpu_models).",
    ]


def test_topology_of_rtx_pro_is_pcie_across_sockets() -> None:
    topo = f.sglang_host_parse_topology(smi("rtx-pro-6000-8x", "topo", "-m"))
    assert topo["interconnect"] == "pcie"
    assert topo["gpus"] == 8
    assert len(topo["links"]) == 28  # 8 choose 2: NIC rows and columns are not GPU pairs
    assert topo["links"]["GPU0-GPU1"] == "PIX"
    assert topo["links"]["GPU0-GPU2"] == "NODE"
    assert topo["links"]["GPU3-GPU4"] == "SYS"
    assert topo["link_types"] == ["NODE", "PIX", "SYS"]
    assert topo["widest_pcie"] == "SYS"


def test_topology_of_nvlink_host() -> None:
    topo = f.sglang_host_parse_topology(smi("h100-sxm-8x", "topo", "-m"))
    assert topo["interconnect"] == "nvlink"
    assert topo["link_types"] == ["NV18"]
    assert topo["widest_pcie"] == ""


@pytest.mark.parametrize(
    ("text", "interconnect"),
    [
        ("", "unknown"),
        ("\tGPU0\tCPU Affinity\nGPU0\t X \t0-15\n", "single"),
        (
            "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV4\tPHB\nGPU1\tNV4\t X \tPHB\nGPU2\tPHB\tPHB\t X \n",
            "mixed",
        ),
    ],
)
def test_topology_kinds(text: str, interconnect: str) -> None:
    assert f.sglang_host_parse_topology(text)["interconnect"] == interconnect


def test_nccl_env_p2p_over_pcie_for_rtx_pro() -> None:
    topo = f.sglang_host_parse_topology(smi("rtx-pro-6000-8x", "topo", "-m"))
    env = f.sglang_host_nccl_env(topo, gpus("rtx-pro-6000-8x"), ["RTX PRO 6000 Blackwell"])
    assert env == {"NCCL_P2P_LEVEL": "SYS"}


def test_nccl_env_node_maps_to_phb_and_other_cards_lose_p2p() -> None:
    topo = {"interconnect": "pcie", "widest_pcie": "NODE"}
    rtx = gpus("rtx-pro-6000-4x")
    assert f.sglang_host_nccl_env(topo, rtx, ["RTX PRO 6000 Blackwell"]) == {
        "NCCL_P2P_LEVEL": "PHB"
    }
    consumer = [dict(g, name="NVIDIA GeForce RTX 5090") for g in rtx]
    assert f.sglang_host_nccl_env(topo, consumer, ["RTX PRO 6000 Blackwell"]) == {
        "NCCL_P2P_DISABLE": "1"
    }


def test_nccl_env_keeps_defaults_on_nvlink() -> None:
    topo = f.sglang_host_parse_topology(smi("h100-sxm-8x", "topo", "-m"))
    assert f.sglang_host_nccl_env(topo, gpus("h100-sxm-8x"), ["RTX PRO 6000 Blackwell"]) == {}


def test_os_problem() -> None:
    supported = {"Debian": ["12"], "Ubuntu": ["22.04", "24.04"]}
    assert f.sglang_host_os_problem("Debian", "12", supported) == ""
    assert f.sglang_host_os_problem("Debian", "12.15", supported, "12") == ""
    assert f.sglang_host_os_problem("Ubuntu", "24.04", supported, "24") == ""
    assert "found Ubuntu 20.04" in f.sglang_host_os_problem("Ubuntu", "20.04", supported, "20")
    assert f.sglang_host_os_problem("Debian", "11", supported) == (
        "OS: found Debian 11, need one of Debian 12, Ubuntu 22.04, Ubuntu 24.04"
        " (sglang_host_supported_os)."
    )


def test_fake_list_gpus_and_bad_queries_look_like_the_real_tool() -> None:
    lines = smi("rtx-pro-6000-4x", "--list-gpus").splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(f"GPU 0: {RTX} (UUID: GPU-")
    bad = subprocess.run(
        [sys.executable, str(FAKE_NVIDIA_SMI), "--query-gpu=bogus", "--format=csv"],
        capture_output=True,
        text=True,
        env=dict(os.environ, FAKE_NVIDIA_SMI_CONFIG="/nonexistent"),
    )
    assert bad.returncode == 2
    assert 'Field "bogus" is not a valid field to query.' in bad.stdout


def test_fake_config_file_overrides_the_profile(tmp_path: Any) -> None:
    config = tmp_path / "fake.json"
    config.write_text('{"profile": "rtx-pro-6000-8x", "gpus": 2, "driver_version": "555.42.02"}')
    env = dict(os.environ, FAKE_NVIDIA_SMI_CONFIG=str(config))
    out = subprocess.run(
        [sys.executable, str(FAKE_NVIDIA_SMI), *QUERY], env=env, capture_output=True, text=True
    ).stdout
    parsed = f.sglang_host_parse_gpus(out)
    assert [(g["index"], g["driver_version"]) for g in parsed] == [
        (0, "555.42.02"),
        (1, "555.42.02"),
    ]
