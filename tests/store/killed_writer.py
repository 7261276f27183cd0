"""A writer process killed with SIGKILL mid-work, for the store's crash tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def kill_writer_once_ready(argv: list[str], pause: float) -> None:
    """Start ``python *argv`` (fsync on), wait for it to print ``ready``, let it write ``pause`` seconds
    more, then SIGKILL it and wait for it to be gone."""
    proc = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE, env={**os.environ, "DOMINDS_FSYNC": "1"})
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"ready"
    time.sleep(pause)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
