"""The habits that keep the code readable (``make lint`` runs this file): ruff, the import-linter
contracts of pyproject.toml, ``__all__`` in every public module, and no function over 120 lines of code."""

import ast
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"equimesh": "equimesh", "rtl": "equimesh.rtl", "sim": "equimesh.sim", "schedules": "equimesh.schedules"}
SOURCES = sorted(p for d in PACKAGES for p in (ROOT / d).rglob("*.py"))
LONGEST_FUNCTION = 120


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *PACKAGES, "tests"], cwd=ROOT, capture_output=True, text=True
    )


def test_ruff_lint():
    r = _ruff("check", "--output-format", "concise")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format():
    r = _ruff("format", "--check")
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_linter_contracts(tmp_path):
    """The layering (CLI, sim, rtl, schedules), no command module importing another, no cycles within a
    package. pyproject maps equimesh.rtl etc. onto top-level folders, which grimp cannot follow, so the
    contracts are checked on a tree of links laid out as the import names say, without site's path hooks."""
    tree = tmp_path / "equimesh"
    tree.mkdir()
    for f in (ROOT / "equimesh").glob("*.py"):
        (tree / f.name).symlink_to(f)
    for d in ("rtl", "sim", "schedules"):
        (tree / d).symlink_to(ROOT / d)
    env = {"PYTHONPATH": f"{tmp_path}:{sysconfig.get_paths()['purelib']}", "PATH": "/usr/bin:/bin"}
    code = (
        "import sys; from importlinter.cli import lint_imports_command; "
        f"sys.argv = ['lint-imports', '{ROOT / 'pyproject.toml'}']; lint_imports_command()"
    )
    r = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "0 broken" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]


def _module(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


@pytest.mark.parametrize(
    "path",
    [p for p in SOURCES if p.name != "__init__.py" and not p.name.startswith("_")],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_public_modules_declare_all(path):
    tree = _module(path)
    names = [
        t.id
        for n in tree.body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Name)
    ]
    assert "__all__" in names, f"{path.relative_to(ROOT)} does not declare __all__"


def _code_lines(f: ast.FunctionDef) -> int:
    """A function's lines from its ``def`` to its end, less its docstring (a long numpy docstring is
    documentation, not a reason to split the code)."""
    body = f.body
    doc = body[0] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else None
    return f.end_lineno - f.lineno + 1 - (doc.end_lineno - doc.lineno + 1 if doc else 0)


def test_no_function_is_longer_than_the_limit():
    long = [
        f"{p.relative_to(ROOT)}:{n.lineno} {n.name} ({_code_lines(n)} lines)"
        for p in SOURCES
        for n in ast.walk(_module(p))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code_lines(n) > LONGEST_FUNCTION
    ]
    assert not long, long
