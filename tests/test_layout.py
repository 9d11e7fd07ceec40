"""Files read in one sitting: no module in nmt/ or in the study beside it
(nmt_study/) over 400 lines, no function over 60. ruff holds complexity and statements (pyproject.toml); this holds
length, which ruff does not measure."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (ROOT / "nmt", ROOT / "nmt_study")
MAX_FILE_LINES, MAX_FUNCTION_LINES = 400, 60
EXEMPT_FILES: set[str] = set()
EXEMPT_FUNCTIONS: set[tuple[str, str]] = set()


def modules():
    for path in sorted(p for package in PACKAGES for p in package.rglob("*.py")):
        yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")


def test_no_module_over_400_lines():
    long = [(name, len(text.splitlines())) for name, text in modules()
            if len(text.splitlines()) > MAX_FILE_LINES and name not in EXEMPT_FILES]
    assert not long, f"split these modules: {long}"


def test_no_function_over_60_lines():
    long = [(name, node.name, node.end_lineno - node.lineno + 1) for name, text in modules()
            for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
            and (name, node.name) not in EXEMPT_FUNCTIONS]
    assert not long, f"split these functions: {long}"
