"""`equimesh evaluate`: JSON contents on a hand-computable case, failures, plots and bad input."""

import json

import pytest

from equimesh.cli import main

ALPHA, B = 20e-9, 128e9


def run_json(capsys, *argv):
    assert main(["evaluate", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_tacos_on_2x2_by_hand(capsys):
    # 2x2 mesh: every node takes 3 shards through 2 in-links. K=1 needs 2 steps: 2 (a + M/B);
    # K=2 needs 6 chunks over 2 links, 3 (a + M/2B); K=4: 6 (a + M/4B). Best per size.
    out = run_json(capsys, "--rows", "2", "--cols", "2", "--algorithms", "mesh-tacos", "--sizes", "1K,1M")
    r = out["results"][0]
    m1k, m1m = 1024.0, 2.0**20
    assert r["best_chunks"] == [1, 2]
    assert r["completion_s"][0] == pytest.approx(2 * (ALPHA + m1k / B))
    assert r["completion_s"][1] == pytest.approx(3 * (ALPHA + m1m / 2 / B))
    assert r["effective_bandwidth_GBps"][1] == pytest.approx(m1m / (3 * (ALPHA + m1m / 2 / B)) / 1e9, rel=1e-5)
    assert r["ratio_vs_best_baseline"] == 1.0 and out["best_baseline"] == "mesh-tacos"


def test_ratio_is_against_the_best_baseline(capsys):
    out = run_json(
        capsys,
        "--rows",
        "3",
        "--cols",
        "4",
        "--collective",
        "allreduce",
        "--sizes",
        "64M",
        "--algorithms",
        "equimesh-xtree,mesh-tacos,mesh-tidalmesh",
    )
    bw = {r["algorithm"]: r["effective_bandwidth_GBps"][-1] for r in out["results"]}
    best = max(bw["mesh-tacos"], bw["mesh-tidalmesh"])
    for r in out["results"]:
        assert r["ratio_vs_best_baseline"] == pytest.approx(bw[r["algorithm"]] / best, abs=1e-4)


def test_failed_links_resynthesized_and_verified(capsys):
    out = run_json(
        capsys, "--rows", "3", "--cols", "3", "--algorithms", "equimesh-xtree", "--sizes", "1M", "--fail-links", "4-5"
    )
    f = out["failures"][0]
    assert f["verified"] and {tuple(x[:2]) for x in f["failed_links"]} == {(4, 5), (5, 4)}
    intact = out["results"][0]["effective_bandwidth_GBps"][0]
    assert f["slowdown"][0] == pytest.approx(intact / f["effective_bandwidth_GBps"][0], rel=1e-3)


def test_plot_written(tmp_path, capsys):
    png = tmp_path / "fig.png"
    assert (
        main(
            [
                "evaluate",
                "--rows",
                "2",
                "--cols",
                "3",
                "--algorithms",
                "equimesh-xtree",
                "--sizes",
                "1K,1M",
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "argv,code,msg",
    [
        (["--algorithms", "nosuch"], 2, "unknown algorithm 'nosuch'"),
        (["--sizes", "0"], 2, "sizes must be > 0"),
        (["--sizes", "1X"], 2, "not a number"),
        (["--chunks", "0"], 2, "--chunks: must be 1..16777216 (got 0)"),
        (["--rows", "1"], 2, "--rows: must be 2..64 (got 1)"),
        (["--algorithms", "mesh-tidalmesh", "--fail-links", "0-1"], 2, "cannot be resynthesized"),
        (["--algorithms", "mesh-tacos", "--fail-links", "0-1,0-3"], 1, "disconnects the network: node 0"),
        (["--algorithms", "mesh-tacos", "--fail-links", "0-5"], 2, "has no link 0-5"),
    ],
)
def test_bad_input_is_one_line(capsys, argv, code, msg):
    base = {"--rows": "2", "--cols": "3", "--sizes": "1K"}
    for i in range(0, len(argv) - 1):
        base.pop(argv[i], None)
    assert main(["evaluate", *[x for kv in base.items() for x in kv], *argv]) == code
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_sizes_parse_with_binary_suffixes():
    from equimesh.sim.analytic.evaluate import format_size, parse_size

    assert parse_size("4K") == 4096 and parse_size("1G") == 2**30 and parse_size("16MB") == 2**24
    assert parse_size("1000") == 1000
    assert [format_size(v) for v in (1024, 2**20, 3 * 2**30, 1000)] == ["1KB", "1MB", "3GB", "1000B"]


def test_fail_links_and_fail_random_exclude_each_other(capsys):
    assert main(["evaluate", "--fail-links", "0-1", "--fail-random", "2"]) == 2
    assert "not allowed with" in capsys.readouterr().err
