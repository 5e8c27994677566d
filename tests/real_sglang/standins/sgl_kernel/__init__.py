"""TEST-ONLY import stand-in for sgl_kernel (see _standin.py); never on a GPU host."""

import _standin

__version__ = "0.0.0+standin"
_standin.install(__import__(__name__))
