"""A patch that "adds" the source lines of the named functions, so that ``mutmut run --use-patch-file``
mutates those functions only (mutmut 2 mutates whole files otherwise).

Usage: ``python tests/mutation/lines.py FILE FUNCTION [FUNCTION ...] > PATCH``. Docstrings are left out:
a mutated docstring changes nothing a test could see.
"""

from __future__ import annotations

import ast
import sys


def patch(path: str, names: list[str]) -> str:
    text = open(path).read().splitlines()
    tree = ast.parse("\n".join(text))
    lines: set[int] = set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            found.add(node.name)
            lines.update(range(node.lineno, node.end_lineno + 1))
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                lines -= set(range(body[0].lineno, body[0].end_lineno + 1))
    missing = set(names) - found
    if missing:
        raise SystemExit(f"{path}: no function {', '.join(sorted(missing))}")
    out = [f"--- a/{path}", f"+++ b/{path}"]
    for ln in sorted(lines):  # one hunk per line: mutmut reads only the added lines
        out += [f"@@ -{ln - 1},0 +{ln},1 @@", "+" + text[ln - 1]]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(patch(sys.argv[1], sys.argv[2:]))
