"""Test set-up: the repo's tests/ folder is importable (for helpers.py), MuJoCo renders headless."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("MUJOCO_GL", "egl")
