"""Fig. 9's open parameters (sim/analytic/llm.py pass_times with mfu and overlap; fig9_search)."""

import pytest

from equimesh.sim.analytic.fig9_search import solve_mfu
from equimesh.sim.analytic.llm import PEAK_FLOPS, PROPOSED, LayerWork, layer_work, load_models, pass_times


def test_pass_times_mfu_and_overlap_by_hand():
    # two blocks of 1 s of GEMMs at the peak each, AllGather and ReduceScatter 0.5 s each, one layer
    w = LayerWork(attn_linear=PEAK_FLOPS, attn_core=0.0, mlp_linear=PEAK_FLOPS, ag_bytes=1.0, rs_bytes=1.0)
    # mfu 0.5: GEMMs 2 s per block; forward AG + GEMM + RS = 3 s per block
    assert pass_times(w, 0.5, 0.5, 1, mfu=0.5)["forward_s"] == pytest.approx(6.0)
    # all of a block's 1 s of collectives under its 2 s of GEMMs: 2 s per block
    assert pass_times(w, 0.5, 0.5, 1, mfu=0.5, overlap=1.0)["forward_s"] == pytest.approx(4.0)
    # backward: AG + max(dgrad 2, AG) + max(wgrad 2, RS) = 4.5 per block
    assert pass_times(w, 0.5, 0.5, 1, mfu=0.5)["backward_s"] == pytest.approx(9.0)
    # the defaults are Table I's peak and no forward overlap: 1 + 1 = 2 s per block
    assert pass_times(w, 0.5, 0.5, 1)["forward_s"] == pytest.approx(4.0)


def test_solve_mfu_finds_the_target_and_refuses_the_unreachable():
    m = load_models()[0]
    # baseline collectives exactly twice as slow: the speedup runs from 1 (compute bound) to 2 (comm bound)
    row = {
        "seq_len": 2048,
        "micro_batch": 1,
        "algorithms": {
            PROPOSED: {"allgather_s": 1e-3, "reducescatter_s": 1e-3},
            "mesh-x": {"allgather_s": 2e-3, "reducescatter_s": 2e-3},
        },
    }
    assert solve_mfu([m], [row], 64, "forward", 2.5) is None
    u = solve_mfu([m], [row], 64, "forward", 1.5)
    assert u is not None and 0 < u < 1
    # per layer (two blocks) the baseline's collectives take 8 ms, EquiMesh's 4 ms; the forward speedup
    # (C + 8) / (C + 4) = 1.5 needs C = 4 ms of GEMMs per layer at that mfu
    lw = layer_work(m, 2048, 1, 64)
    assert (lw.attn_linear + lw.attn_core + lw.mlp_linear) / (PEAK_FLOPS * u) == pytest.approx(4e-3, rel=1e-6)
