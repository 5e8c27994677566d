"""Session fixtures over the real SGLang releases (tests/releases/harness.py).

Every test here is marked `releases`: `make releases` runs them after building the real-SGLang
test image; `make unit` leaves them out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import harness
import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.releases)


@pytest.fixture(scope="session")
def release_facts() -> dict[str, dict[str, Any]]:
    """version -> what that release's own parser and source say (cached per wheel)."""
    return harness.all_facts()
