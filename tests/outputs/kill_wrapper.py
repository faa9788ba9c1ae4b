"""Run an ``eqagen`` command that SIGKILLs itself at the AT-th rename of its dataset writer.

``python -m tests.outputs.kill_wrapper AT eqagen ARGS...``: every ``os.replace`` of the dataset writer
(the shard writer, atomic files, the swap; not the batch checkpoints) is counted, and the AT-th kills the
process before it happens; ``AT`` = ``swap:K`` kills before the K-th rename into the folder proper (out
of ``.eqagen/``: the swap's moves). An unkilled run prints ``renames=N`` on stderr: the number of kill
points. The code under test is unchanged.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys

import eqagen.outputs.atomic as atomic
import eqagen.outputs.folder as folder
import eqagen.outputs.shards as shards


class KillingOs:
    def __init__(self, at: str):
        self.swap_only = at.startswith("swap:")
        self.at, self.count = int(at.removeprefix("swap:")), 0

    def __getattr__(self, name: str):
        return getattr(os, name)

    def replace(self, src, dst) -> None:
        counted = f"{os.sep}batches{os.sep}" not in str(dst)
        if self.swap_only:
            counted = f"{os.sep}.eqagen{os.sep}" not in str(dst)
        if counted:
            self.count += 1
            if self.count == self.at:
                os.kill(os.getpid(), signal.SIGKILL)
        os.replace(src, dst)


def main() -> int:
    killing = KillingOs(sys.argv[1])
    shards.os = atomic.os = folder.os = killing  # type: ignore[assignment]
    atexit.register(lambda: print(f"renames={killing.count}", file=sys.stderr))
    from eqagen.cli import main as eqagen_main

    return eqagen_main(sys.argv[3:])


if __name__ == "__main__":
    sys.exit(main())
