"""Fixtures shared by the tests that run delayd: one build of delayd per
session (or DELAYQ_DELAYD, a binary to use instead)."""

import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


def need(ok, why):
    """Skips without ok, except under CI=true where it fails."""
    if not ok:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="session")
def delayd_binary():
    given = os.environ.get("DELAYQ_DELAYD")
    if given:
        yield pathlib.Path(given)
        return
    need(shutil.which("go") is not None, "go is not on PATH: cannot build delayd")
    bindir = pathlib.Path(tempfile.mkdtemp(prefix="delayq-py-"))
    binary = bindir / "delayd"
    out = subprocess.run(["go", "build", "-o", str(binary), "./cmd/delayd"], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, f"go build delayd: {out.stderr}"
    yield binary
    shutil.rmtree(bindir, ignore_errors=True)
