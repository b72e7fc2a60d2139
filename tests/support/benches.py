"""The benchmarks' quick runs, as the bench tests start them: ``python -m bench.run --only SECTION --quick``."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_quick(section: str, var_dir: Path, timeout=300) -> subprocess.CompletedProcess:
    """``python -m bench.run --only SECTION --quick`` with its results under ``var_dir``; fails on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.run", "--only", section, "--quick"],
        cwd=ROOT,
        env={**os.environ, "VAR_DIR": str(var_dir)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def quick_figures(section: str, var_dir: Path) -> dict:
    run_quick(section, var_dir)
    return json.loads((var_dir / "bench" / "latest.json").read_text())[section]


def quotient_of_rounded(numerator: float, denominator: float, places: int, quotient_places: int) -> tuple:
    """The range a quotient rounded to ``quotient_places`` may take when it was computed before its parts were
    rounded to ``places`` (a bench reports both): ratios of small figures are checked without a tolerance guess."""
    half, half_quotient = 0.5 * 10**-places, 0.5 * 10**-quotient_places
    low = (numerator - half) / (denominator + half)
    high = (numerator + half) / max(denominator - half, 1e-12)
    return low - half_quotient - 1e-12, high + half_quotient + 1e-12
