"""module_utils/sglang_port_owner.py: what both modules' own tests do not reach (as root, every
/proc/PID/fd is readable, so a denied one is only seen here)."""

from __future__ import annotations

from project_module_utils import module_utils

port_owner = module_utils("sglang_port_owner")


class _Procs(port_owner.ProcReader):
    def __init__(self, sockets: dict[int, set[int] | None]) -> None:
        super().__init__("/nonexistent")
        self.sockets = sockets  # pid -> its socket inodes; None: /proc/PID/fd not readable

    def socket_inodes(self, pid: int) -> set[int]:
        inodes = self.sockets[pid]
        if inodes is None:
            raise port_owner.ProcPermissionError(f"cannot read /proc/{pid}/fd: permission denied")
        return inodes


def test_socket_holders_keeps_the_order_and_reports_unreadable_pids() -> None:
    procs = _Procs({3: {7}, 1: None, 2: {8, 9}, 4: {5}})

    assert port_owner.socket_holders(procs, {9, 7}, [3, 1, 2, 4]) == ([3, 2], True)
    assert port_owner.socket_holders(procs, {5}, [4]) == ([4], False)
    assert port_owner.socket_holders(procs, {6}, [2, 3]) == ([], False)


def test_a_process_that_is_gone_holds_no_socket() -> None:
    procs = port_owner.ProcReader("/nonexistent")

    assert procs.socket_inodes(12345) == set()
    assert (procs.unit(12345), procs.command_line(12345), procs.process_state(12345)) == (
        "",
        "",
        None,
    )
