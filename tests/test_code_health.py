"""The habits that keep the code readable (``make lint`` runs this file): ruff, the import-linter
contracts of pyproject.toml, ``__all__`` in every public module, numpy-style Parameters/Returns docstrings on
every public function and class, and no function over 120 lines of code."""

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


def _section(doc: str | None, title: str) -> bool:
    """True when ``doc`` has a numpy section ``title`` (the title, then a line of dashes)."""
    lines = (doc or "").splitlines()
    return any(a.strip() == title and b.strip() and set(b.strip()) == {"-"} for a, b in zip(lines, lines[1:]))


def _parameters(f: ast.FunctionDef, method: bool = False) -> list[str]:
    a = f.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return names[1:] if method and names[:1] in (["self"], ["cls"]) else names


def _own_nodes(f: ast.FunctionDef):
    """The nodes of ``f``'s body, not those of functions or classes defined inside it."""
    stack = list(f.body)
    while stack:
        n = stack.pop()
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            yield n
            stack.extend(ast.iter_child_nodes(n))


def _none(node) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def _missing_sections(n: ast.FunctionDef | ast.ClassDef) -> list[str]:
    """The numpy sections item ``n`` lacks: Parameters when it takes any (a class: its constructor's, or a
    dataclass's fields, which may be listed as Attributes), Returns (Yields for a generator) when it returns
    a value."""
    doc = ast.get_docstring(n)
    if not doc:
        return ["docstring"]
    if isinstance(n, ast.ClassDef):
        init = next((m for m in n.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
        fields = [m for m in n.body if isinstance(m, ast.AnnAssign) and "ClassVar" not in ast.unparse(m.annotation)]
        if init is not None and _parameters(init, method=True):
            return (
                [] if _section(doc, "Parameters") or _section(ast.get_docstring(init), "Parameters") else ["Parameters"]
            )
        return [] if not fields or _section(doc, "Parameters") or _section(doc, "Attributes") else ["Attributes"]
    missing = [] if not _parameters(n) or _section(doc, "Parameters") else ["Parameters"]
    nodes = list(_own_nodes(n))
    if any(isinstance(x, ast.YieldFrom) or (isinstance(x, ast.Yield) and not _none(x.value)) for x in nodes):
        missing += [] if _section(doc, "Yields") else ["Yields"]
    elif (n.returns is not None and not _none(n.returns) and ast.unparse(n.returns) not in ("None", "NoReturn")) or any(
        isinstance(x, ast.Return) and not _none(x.value) for x in nodes
    ):
        missing += [] if _section(doc, "Returns") else ["Returns"]
    return missing


def _public_items(path: Path):
    """The functions and classes that ``path`` defines and names in its ``__all__``."""
    tree = _module(path)
    exported = next(
        (
            ast.literal_eval(n.value)
            for n in tree.body
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
        ),
        [],
    )
    defined = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return [defined[name] for name in exported if name in defined]


def test_public_items_have_numpy_docstrings():
    """Every public function and class says what it takes (Parameters) and gives (Returns or Yields), in the
    numpy style of the Amaranth standard library."""
    missing = [
        f"{p.relative_to(ROOT)}:{n.lineno} {n.name}: no {', '.join(gaps)}"
        for p in SOURCES
        for n in _public_items(p)
        if (gaps := _missing_sections(n))
    ]
    assert not missing, "\n".join(missing)


def test_docstring_rule_sees_a_missing_section():
    """The rule itself: a function with a parameter and a value but no sections fails, one with both passes."""
    bare, full = ast.parse(
        'def f(x):\n    """Double."""\n    return 2 * x\n'
        'def g(x):\n    """Double.\n\n    Parameters\n    ----------\n    x : int\n\n'
        '    Returns\n    -------\n    int\n    """\n    return 2 * x\n'
    ).body
    assert _missing_sections(bare) == ["Parameters", "Returns"]
    assert _missing_sections(full) == []


def _documented_parameters(doc: str | None) -> list[str]:
    """The names a numpy Parameters section lists (``rows, cols : int`` lists two, ``**context`` one)."""
    lines, names, inside = (doc or "").splitlines(), [], False
    for line, below in zip(lines, lines[1:] + [""]):
        if line.strip() and below.strip() and set(below.strip()) == {"-"}:
            inside = line.strip() == "Parameters"
        elif inside and line and not line[0].isspace() and set(line.strip()) != {"-"}:
            names += [x.strip().lstrip("*") for x in line.split(" : ")[0].split(",")]
    return names


def test_documented_parameters_exist():
    """Every name in a Parameters section is a parameter of the function (for a class: of its constructor, or
    one of its fields), as mkdocstrings' griffe checks in ``make docs``."""
    wrong = []
    for p in SOURCES:
        for n in ast.walk(_module(p)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = _parameters(n)
            elif isinstance(n, ast.ClassDef):
                init = next((m for m in n.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
                params = (
                    _parameters(init, method=True)
                    if init
                    else [
                        m.target.id for m in n.body if isinstance(m, ast.AnnAssign) and isinstance(m.target, ast.Name)
                    ]
                )
            else:
                continue
            extra = [x for x in _documented_parameters(ast.get_docstring(n)) if x not in params]
            if extra:
                wrong.append(f"{p.relative_to(ROOT)}:{n.lineno} {n.name}: {', '.join(extra)} not in the signature")
    assert not wrong, "\n".join(wrong)
