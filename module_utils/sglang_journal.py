# The failure message of a server that will not become ready: the headline, the likely cause read
# from the new invocation's journal (bind failure, rejected flag, out of memory, a traceback), then
# the journal lines themselves. The needles are the classifier's
# (module_utils/sglang_failure_cause.py), which also gives the failure its cause.
# Used by library/sglang_ready.py. Runs on the target host: standard library only.
from __future__ import annotations

from ansible.module_utils.sglang_failure_cause import evidence
from ansible.module_utils.sglang_systemd import SystemdReader


def explain_journal(lines: list[str]) -> list[str]:
    """Lines that name the likely cause, so it stands above the raw journal text (the needles are
    the classifier's, module_utils/sglang_failure_cause.py)."""
    causes = [f"likely cause: {meaning}: {line}" for _, meaning, line in evidence(lines)]
    return list(dict.fromkeys(causes))


def read_journal(
    systemd: SystemdReader, unit: str, invocations: list[str], since_epoch: float
) -> list[str]:
    """The unit's last journal lines (SystemdReader.journal), or one line saying why not."""
    try:
        return systemd.journal(unit, invocations, since_epoch)
    except Exception as exc:  # the journal is an aid; never hide the real failure behind it
        return [f"(could not read the journal: {exc})"]


def failure_message(headline: str, unit: str | None, lines: list[str]) -> str:
    parts = [headline, *explain_journal(lines)]
    if lines:
        parts.append(f"--- last {len(lines)} journal lines of {unit} ---")
        parts.extend(lines)
    return "\n".join(parts)
