"""`make lint` is a real gate: the repository's own ruff and mypy settings catch an unused import, a ``noqa``
that excuses nothing, a function of too many statements and a type error added to one of our modules, the
unchanged module passes both, and a missing tool fails the target with the command that installs it instead of
skipping the check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MODULE = "queues/engine/clock.py"


def run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


def ruff_check(source: str) -> subprocess.CompletedProcess[str]:
    # --stdin-filename: the repository's config and per-file rules apply as if the text were that module.
    return subprocess.run(
        [str(BIN / "ruff"), "check", "--stdin-filename", MODULE, "-"],
        cwd=ROOT,
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_ruff_reports_an_unused_import_and_passes_the_module_as_it_is():
    source = (ROOT / MODULE).read_text()
    assert ruff_check(source).returncode == 0
    result = ruff_check(
        source.replace("from __future__ import annotations\n", "from __future__ import annotations\n\nimport os\n", 1)
    )
    assert result.returncode == 1 and "F401" in result.stdout, result.stdout


def test_ruff_reports_a_noqa_without_a_firing_rule_and_a_function_of_too_many_statements():
    source = (ROOT / MODULE).read_text()
    result = ruff_check(source + "\n\nLIMIT = 1  # noqa: E501\n")  # nothing too long on that line
    assert result.returncode == 1 and "RUF100" in result.stdout, result.stdout
    statements = "".join(f"    print({i})\n" for i in range(60))
    result = ruff_check(source + f"\n\ndef long_function() -> None:\n{statements}")
    assert result.returncode == 1 and "PLR0915" in result.stdout, result.stdout


def test_mypy_reports_a_type_error_and_passes_the_module_as_it_is(tmp_path):
    source = (ROOT / MODULE).read_text()
    clean, broken = tmp_path / "clean_copy.py", tmp_path / "broken_copy.py"
    clean.write_text(source)
    broken.write_text(source + '\n\ndef broken() -> int:\n    return "not an int"\n')
    config = ("--config-file", ROOT / "pyproject.toml", "--cache-dir", tmp_path / "cache")
    assert run(BIN / "mypy", *config, clean).returncode == 0
    result = run(BIN / "mypy", *config, broken)
    assert result.returncode == 1 and "[return-value]" in result.stdout, result.stdout


def test_make_lint_fails_with_the_install_hint_when_a_tool_is_missing():
    result = run("make", "lint", "LINT_TOOLS=ruff no-such-linter")
    assert result.returncode != 0
    assert (
        "no-such-linter is not installed; run:" in result.stderr
        and "pip install -c constraints/newest.txt -e '.[dev]'" in result.stderr
    )
