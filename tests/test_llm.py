"""`equimesh llm` (seed 000, Fig. 9): per-layer work and pass times by hand, the data file, the CLI and bad input."""

import json

import pytest

from equimesh.cli import main
from equimesh.sim.analytic.llm import PEAK_FLOPS, LayerWork, ModelShape, layer_work, load_models, pass_times

TINY = {
    "name": "tiny",
    "layers": 2,
    "hidden": 4,
    "heads": 2,
    "kv_heads": 1,
    "head_dim": 2,
    "ffn": 8,
    "mlp": "plain",
    "source": "hand-made",
}


def test_table_i_peak():
    assert PEAK_FLOPS == 2 * 512 * 512 * 1e9


def test_layer_work_by_hand():
    # T = s b = 6 tokens, q = 4, kv = 2; per node (4 nodes):
    # QKV 2*6*4*(4+2*2) = 384, out 2*6*4*4 = 192 -> 576 / 4; core 2*2*b*s^2*q = 4*2*9*4 = 288 / 4;
    # MLP 2*6*4*8*2 = 768 / 4; activations 6*4 elements * 4 bytes = 96 (AllGather: 96 / 4 per node)
    w = layer_work(ModelShape(**TINY), seq_len=3, micro_batch=2, nodes=4)
    assert (w.attn_linear, w.attn_core, w.mlp_linear, w.ag_bytes, w.rs_bytes) == (144, 72, 192, 24, 96)
    gated = layer_work(ModelShape(**{**TINY, "mlp": "gated"}), seq_len=3, micro_batch=2, nodes=4)
    assert gated.mlp_linear == 2 * 6 * 4 * 8 * 3 / 4


def test_pass_times_by_hand():
    p = PEAK_FLOPS
    w = LayerWork(attn_linear=3 * p, attn_core=1 * p, mlp_linear=5 * p, ag_bytes=1, rs_bytes=1)
    # forward per layer: attention 2 + (3 + 1) + 1, MLP 2 + 5 + 1 -> 15
    # backward: attention 2 + max(3 + 2, 2) + max(3, 1) = 10, MLP 2 + max(5, 2) + max(5, 1) = 12 -> 22
    t = pass_times(w, t_ag=2.0, t_rs=1.0, layers=3)
    assert t["forward_s"] == pytest.approx(45) and t["backward_s"] == pytest.approx(66)
    assert t["forward_compute_s"] == pytest.approx(3 * 9) and t["forward_comm_s"] == pytest.approx(3 * 6)
    # communication-bound backward: the overlapped GEMMs hide under the collectives
    slow = pass_times(w, t_ag=10.0, t_rs=10.0, layers=1)
    assert slow["backward_s"] == pytest.approx((10 + 10 + 10) * 2)


def test_data_file_has_the_four_models_of_fig9_with_sources():
    models = {m.name: m for m in load_models()}
    assert list(models) == ["GPT-NeoX-20B", "OPT-30B", "Qwen3-32B", "Llama-3-70B"]
    assert (models["Llama-3-70B"].layers, models["Llama-3-70B"].hidden, models["Llama-3-70B"].kv_heads) == (80, 8192, 8)
    assert all(m.source for m in models.values())


def tiny_file(tmp_path, **edit):
    p = tmp_path / "m.json"
    m = {**TINY, **edit}
    p.write_text(json.dumps({"models": [{k: v for k, v in m.items() if v is not None}]}))
    return str(p)


def test_cli_json_on_a_small_network(tmp_path, capsys):
    assert (
        main(
            [
                "llm",
                "--models-file",
                tiny_file(tmp_path),
                "--rows",
                "2",
                "--cols",
                "3",
                "--seq-len",
                "64",
                "--json",
                "--plot",
                str(tmp_path / "f.png"),
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    r = out["models"][0]
    assert r["name"] == "tiny" and (tmp_path / "f.png").stat().st_size > 0
    base = [a for a in r["algorithms"] if a != "equimesh-xtree"]
    assert base and r["best_baseline_forward"] in base
    eq = r["algorithms"]["equimesh-xtree"]
    best = min(r["algorithms"][a]["forward_s"] for a in base)
    assert r["forward_speedup"] == pytest.approx(best / eq["forward_s"])
    # the pass times are built from the collective times reported beside them
    gemm = eq["forward_compute_s"] / 2
    assert eq["forward_s"] == pytest.approx(2 * (2 * (eq["allgather_s"] + eq["reducescatter_s"])) + 2 * gemm)


@pytest.mark.parametrize(
    "argv, message, code",
    [
        (["--model", "GPT-5"], "unknown model 'GPT-5'; expected one of: all, GPT-NeoX-20B", 2),
        (["--seq-len", "0"], "--seq-len and --micro-batch must be >= 1", 2),
        (["--micro-batch", "-1"], "--seq-len and --micro-batch must be >= 1", 2),
        (["--rows", "1"], "--rows: must be 2..64 (got 1)", 2),
        (["--models-file", "/nonexistent.json"], "no such file", 1),
    ],
)
def test_cli_bad_input_one_line(capsys, argv, message, code):
    assert main(["llm", *argv]) == code
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"ffn": None}, "tiny: missing field 'ffn'"),
        ({"layers": 0}, "field 'layers' must be an integer >= 1"),
        ({"mlp": "moe"}, "field 'mlp' must be one of plain, gated"),
    ],
)
def test_cli_model_file_errors_name_the_field(tmp_path, capsys, edit, message):
    assert main(["llm", "--models-file", tiny_file(tmp_path, **edit)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
