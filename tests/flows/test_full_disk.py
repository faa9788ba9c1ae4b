"""A full disk is told from the failure itself, wherever it sits in the chain of errors, never guessed.

What is simulated: the ENOSPC of a plain write is built as ``OSError(errno.ENOSPC, strerror)``, the very
object Python raises from a write(2) that fails with that errno (``/dev/full`` would give it for real, but this
machine's sandbox accepts writes to it); EDQUOT likewise (no quota can be set up here); and the 500 that
Prefect's client raises while recording a failure, when its server could not write its database on the same
full disk, is built as its client builds it. pyarrow's own error is real: a write onto a full 64 KiB tmpfs
(needs root, else that case skips). The end-to-end run on a full tmpfs is
``tests/flows/test_crash_safety.py::test_a_full_disk_under_prefect_is_exit_2_and_its_staging_is_cleaned_by_the_rerun``
(slow, root).

When the failure holds only Prefect's 500 (its server's own write failed first, and its exception stayed in
its process), the OS is asked with a real write beside the server's database: only its refusal (ENOSPC on a
filled tmpfs) makes the 500 a full disk.

Regression: a failed run was called a full disk when its output's file system had under 1 MiB free, whatever
it failed of, and a full disk was not named when the file system had more free (a tmpfs fills by quanta).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from prefect.exceptions import PrefectHTTPStatusError

from eqagen.cli import os_error_text
from eqagen.flows.run import full_disk_error, full_disk_said
from tests.flows.test_crash_safety import tmpfs

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup


def a_write_to_a_full_disk() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # what write(2) failing with ENOSPC raises


def prefects_500_while_handling(error: BaseException | None) -> PrefectHTTPStatusError:
    """What Prefect's client raises when its server answers 500 to the state write that records ``error``
    (None: to a request of its own, as when the server's database write fails first)."""
    request = httpx.Request("POST", "http://127.0.0.1:4200/api/flow_runs/1/set_state")
    response = httpx.Response(500, request=request, json={"exception_message": "Internal Server Error"})
    try:
        try:
            if error is not None:
                raise error
            response.raise_for_status()
        except OSError:
            response.raise_for_status()
    except httpx.HTTPStatusError as http:
        try:
            raise PrefectHTTPStatusError.from_httpx_error(http) from http.__cause__
        except PrefectHTTPStatusError as wrapped:
            return wrapped
    raise AssertionError("no 500 raised")


@pytest.fixture
def pyarrows_write_error(tmp_path) -> OSError:
    """pyarrow's own error for a shard written onto a full file system."""
    with tmpfs(tmp_path / "disk", 64) as disk:
        with contextlib.suppress(OSError), open(disk / "filler", "wb") as f:
            f.write(b"\0" * (128 << 10))
        try:
            pq.write_table(pa.table({"a": list(range(100_000))}), disk / "shard.parquet", compression="none")
        except OSError as err:
            return err
    raise AssertionError("pyarrow wrote onto a full tmpfs")


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda: prefects_500_while_handling(a_write_to_a_full_disk()), errno.ENOSPC),
        (lambda: ExceptionGroup("units", [ValueError("x"), prefects_500_while_handling(a_write_to_a_full_disk())]),
         errno.ENOSPC),
        (lambda: prefects_500_while_handling(OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))), errno.EDQUOT),
    ],
    ids=["prefect-500-over-ENOSPC", "in-an-exception-group", "EDQUOT"],
)  # fmt: skip
def test_a_full_disk_inside_another_failure_is_said_as_a_full_disk_naming_the_folder(tmp_path, make, code) -> None:
    assert_said_as_a_full_disk(make(), code, tmp_path)


def test_pyarrows_full_disk_inside_prefects_failure_is_said_as_a_full_disk(pyarrows_write_error, tmp_path) -> None:
    assert "No space left on device" in str(pyarrows_write_error)
    assert_said_as_a_full_disk(prefects_500_while_handling(pyarrows_write_error), errno.ENOSPC, tmp_path)


def assert_said_as_a_full_disk(failure: BaseException, code: int, tmp_path: Path) -> None:
    assert full_disk_error(failure) is not None
    with pytest.raises(OSError) as raised, full_disk_said(tmp_path):
        raise failure
    assert raised.value.errno == code and raised.value.__cause__ is failure
    line = os_error_text(raised.value)
    assert line == f"cannot write {tmp_path}: {os.strerror(code)}; fix: free some space or choose another --out; " \
                   "finished batches are kept, so rerunning resumes"  # fmt: skip


def test_a_full_disk_names_its_file_or_else_the_folder(tmp_path) -> None:
    own = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "questions" / "x.parquet"))
    with pytest.raises(OSError) as raised, full_disk_said(tmp_path):
        raise own
    assert raised.value is own  # already the full disk, naming its file
    with pytest.raises(OSError) as raised, full_disk_said(tmp_path):
        raise prefects_500_while_handling(own)
    assert raised.value.filename == own.filename
    with pytest.raises(OSError) as raised, full_disk_said(tmp_path):
        raise a_write_to_a_full_disk()  # a write(2) names no file: the folder is named
    assert os_error_text(raised.value).startswith(f"cannot write {tmp_path}: No space left on device; fix: ")


def test_other_failures_are_left_as_they_are(tmp_path) -> None:
    denied = prefects_500_while_handling(OSError(errno.EACCES, os.strerror(errno.EACCES), "x"))
    with pytest.raises(PrefectHTTPStatusError) as raised, full_disk_said(tmp_path):
        raise denied
    assert raised.value is denied and full_disk_error(denied) is None


def test_a_failure_on_a_nearly_full_disk_is_not_called_a_full_disk(tmp_path) -> None:
    """A 1 MiB tmpfs with a few KB left: a run failing of something else keeps its own error (the free-space
    guess called it 'No space left on device')."""
    with tmpfs(tmp_path / "disk", 1024) as disk:
        with open(disk / "filler", "wb") as f:
            f.write(b"\0" * (1024 - 16) * 1024)
        stats = os.statvfs(disk)
        assert stats.f_bavail * stats.f_frsize < 1 << 20
        with pytest.raises(ValueError, match="not a disk problem"), full_disk_said(disk):
            raise ValueError("not a disk problem")


def test_prefects_500_alone_is_a_full_disk_only_when_the_os_refuses_a_write_beside_its_database(tmp_path) -> None:
    """When Prefect's server fails its own write first (seen on a 1.5 MB tmpfs: a 500 for `/api/flows/`, no
    OSError in the run), the OS is asked with a write beside the server's database: on a roomy disk the 500
    stays what it is; on a full one (a 1 MiB tmpfs filled, root) it is the full disk, naming the folder."""
    alone = prefects_500_while_handling(None)
    assert full_disk_error(alone) is None
    with pytest.raises(PrefectHTTPStatusError), full_disk_said(tmp_path, server_dir=tmp_path):
        raise alone
    with tmpfs(tmp_path / "disk", 1024) as disk:
        with contextlib.suppress(OSError), open(disk / "filler", "wb") as f:
            f.write(bytes(2 << 20))
        with pytest.raises(OSError) as raised, full_disk_said(tmp_path / "out", server_dir=disk):
            raise alone
        assert os_error_text(raised.value).startswith(f"cannot write {tmp_path / 'out'}: No space left on device")
        assert raised.value.__cause__ is alone and list(disk.iterdir()) == [disk / "filler"]
