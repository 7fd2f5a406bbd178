"""`equimesh paper`: bad input in one line; the Algorithm 2 table on the paper's 2x3 example."""

import pytest

from equimesh.cli import main
from equimesh.sim.analytic.paper_xtree import algorithm2_rows, algorithm2_table


@pytest.mark.parametrize(
    "argv,text",
    [
        (["paper", "--sizes", "1x3"], "1x3"),
        (["paper", "--chunks", "0"], "--chunks"),
    ],
)
def test_bad_input_one_line(capsys, argv, text):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("equimesh: ") and err.count("\n") == 1 and text in err, err


def test_algorithm2_table_on_the_2x3_example():
    # seed 000, Sec. IV-A: 2x3 EquiMesh, K = 4, min in-degree 4: bound ceil(4 * 5 / 4) = 5 (the paper's depth)
    rows = algorithm2_rows([(2, 3)], [4])
    assert [r.storage for r in rows] == ["links only", "lanes"]
    assert all(r.bound == 5 for r in rows)
    assert all(min(r.paper.values()) >= 5 and r.matching >= 5 for r in rows)
    lines = algorithm2_table(rows)
    assert len(lines) == 4 and lines[2].startswith("| 2x3 | 4 | links only | 5 |")
