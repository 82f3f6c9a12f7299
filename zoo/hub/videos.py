"""Whether a video ``zoo push`` would stage plays: empty or undecodable files are left out, with a warning.

An evaluation killed while recording leaves a 0-byte or truncated mp4 (moviepy writes the index, ``moov``,
last), and a hub page shows it as a broken player. zoo records videos with moviepy, which encodes through
imageio-ffmpeg's ffmpeg binary; the same binary decodes the first frame here, scaled to 8x8 gray so the
answer is 64 bytes whatever the resolution, under a timeout: the work is bounded by one frame.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

VIDEO_SUFFIXES = (".mp4",)
DECODE_TIMEOUT_S = 30.0
_FRAME_BYTES = 64  # one 8x8 gray frame


def _ffmpeg() -> str | None:
    """imageio-ffmpeg's ffmpeg (the video extra's), or None when it is not installed."""
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        return None


def check_video(path: Path) -> tuple[bool, str | None]:
    """``(publish, why)``: False with the reason for an empty file or one whose first frame does not decode;
    True with a note when it could not be decoded for want of the video extra (a non-empty file is then
    published); ``(True, None)`` for a video that plays."""
    if path.stat().st_size == 0:
        return False, "is empty (0 bytes)"
    ffmpeg = _ffmpeg()
    if ffmpeg is None:
        from zoo.envs import VIDEO_HINT

        return True, f"was not checked: decoding it needs imageio-ffmpeg ({VIDEO_HINT})"
    command = [
        ffmpeg,
        "-nostdin",
        "-v",
        "error",
        "-i",
        str(path),
        "-map",
        "0:v:0",
        "-frames:v",
        "1",
        "-vf",
        "scale=8:8",
        "-pix_fmt",
        "gray",
        "-f",
        "rawvideo",
        "pipe:1",
    ]
    try:
        proc = subprocess.run(command, capture_output=True, timeout=DECODE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return False, f"does not decode (no frame after {DECODE_TIMEOUT_S:g} s)"
    if proc.returncode == 0 and len(proc.stdout) == _FRAME_BYTES:
        return True, None
    said = [line.strip() for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    why = said[0].split("] ", 1)[-1][:200] if said else f"ffmpeg exit {proc.returncode}, no frame"
    return False, f"does not decode ({why})"
