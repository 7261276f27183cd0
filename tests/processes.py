"""One answer to "is this process still running?" for tests that kill or stop processes."""


def running(pid: int) -> bool:
    """Alive and not a zombie.

    A zombie has exited; in a container nobody may reap it soon. A process that disappears between
    opening its ``/proc`` entry and reading it raises ``ProcessLookupError`` on the read (CI saw this
    once), so every ``OSError`` counts as gone.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
