"""The committed STIG sample (samples/stig/) is exactly what samples/build_sample.py assembles from its
data files and fix scripts. No database needed: this runs the assembler (standard library only) into a
temporary folder and compares bytes, so an edited script, tip or label that was not re-assembled, or a
hand edit of a generated file, fails here."""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
SAMPLE = SAMPLES / "stig"
ASSEMBLER = SAMPLES / "build_sample.py"
GENERATED = {"run-6.jsonl", "run-7.jsonl", "gold_labels.csv", "tips.jsonl", "README.md"}


def assemble(out: Path, src: Path = SAMPLE) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ASSEMBLER), "--src", str(src), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)


def first_difference(expected: bytes, actual: bytes, name: str) -> str:
    exp = expected.decode("utf-8", "replace").splitlines()
    act = actual.decode("utf-8", "replace").splitlines()
    diff = difflib.unified_diff(exp, act, f"committed {name}", f"assembled {name}", n=0, lineterm="")
    return "\n".join(line[:300] for line in list(diff)[:8])


def differing(out: Path, names: set[str] = GENERATED) -> dict[str, str]:
    return {name: first_difference((SAMPLE / name).read_bytes(), (out / name).read_bytes(), name)
            for name in sorted(names) if (SAMPLE / name).read_bytes() != (out / name).read_bytes()}


@pytest.fixture(scope="module")
def assembled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("assembled")
    done = assemble(out)
    assert done.returncode == 0, f"build_sample.py failed:\n{done.stdout}\n{done.stderr}"
    return out


def test_assembler_writes_exactly_the_published_files(assembled: Path) -> None:
    assert {p.name for p in assembled.iterdir()} == GENERATED


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_committed_file_is_byte_identical_to_the_assembled_one(assembled: Path, name: str) -> None:
    committed, built = (SAMPLE / name).read_bytes(), (assembled / name).read_bytes()
    assert committed == built, (
        f"samples/stig/{name} differs from what samples/build_sample.py assembles; edit the data under "
        f"samples/stig/data or samples/stig/scripts and run `python3 samples/build_sample.py`:\n"
        + first_difference(committed, built, name))


def test_an_edited_script_shows_up_as_drift(tmp_path: Path) -> None:
    """The comparison above can fail: change one script in a copy and only its run log moves."""
    src = tmp_path / "src"
    shutil.copytree(SAMPLE, src)
    script = src / "scripts" / "run-7" / "harden_sshd_macs_openssh_conf_crypto_policy" / "attempt-2.sh"
    script.write_text(script.read_text(encoding="utf-8") + "echo drift\n", encoding="utf-8")
    done = assemble(tmp_path / "out", src)
    assert done.returncode == 0, done.stderr
    assert set(differing(tmp_path / "out")) == {"run-7.jsonl"}


def test_a_script_no_attempt_uses_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SAMPLE, src)
    stray = src / "scripts" / "run-6" / "sshd_disable_root_login" / "attempt-2.sh"
    stray.write_text("#!/usr/bin/env bash\nset -euo pipefail\n", encoding="utf-8")
    done = assemble(tmp_path / "out", src)
    assert done.returncode != 0
    assert "scripts/run-6/sshd_disable_root_login/attempt-2.sh" in done.stderr


def test_check_sample_accepts_the_committed_sample() -> None:
    done = subprocess.run([sys.executable, str(SAMPLES / "check_sample.py"), "--dir", str(SAMPLE)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: all checks passed" in done.stdout
