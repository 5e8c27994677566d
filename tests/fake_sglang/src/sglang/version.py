"""What the build calls itself: SGLANG_EMU_VERSION's release (sglang_emulator.VERSIONS), as the
emulator's /server_info reports it; the wheel's own metadata always says 0.5.23."""

import os

from sglang_emulator import VERSIONS

_name = os.environ.get("SGLANG_EMU_VERSION", "").strip() or "0.5.23"
__version__ = VERSIONS.get(_name, _name)
