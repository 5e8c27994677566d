# The failure message of a server that will not become ready: the headline, the likely cause read
# from the new invocation's journal (bind failure, rejected flag, out of memory, a traceback), then
# the journal lines themselves.
# Used by library/sglang_ready.py. Runs on the target host: standard library only.
from __future__ import annotations

from ansible.module_utils.sglang_systemd import SystemdReader

_CAUSES = (
    ("address already in use", "the port is already in use by another process (bind failed)"),
    (
        "unrecognized arguments",
        "SGLang rejected a flag (wrong flag dialect for this SGLang build?)",
    ),
    ("out of memory", "out of memory"),
)


def explain_journal(lines: list[str]) -> list[str]:
    """Lines that name the likely cause, so it stands above the raw journal text."""
    causes: list[str] = []
    for line in lines:
        lowered = line.lower()
        for needle, meaning in _CAUSES:
            if needle in lowered:
                causes.append(f"likely cause: {meaning}: {line.strip()}")
    for index, line in enumerate(lines):
        if line.lstrip().startswith("Traceback (most recent call last)"):
            exception = next(
                (
                    later.strip()
                    for later in lines[index + 1 :]
                    if later.strip() and not later[:1].isspace() and "Traceback" not in later
                ),
                "(exception line not in the journal excerpt)",
            )
            causes.append(f"likely cause: the server raised an exception: {exception}")
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
