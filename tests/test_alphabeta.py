"""The alpha-beta event simulator on hand-computed tiny schedules and seed 003's closed forms."""

import numpy as np
import pytest

from equimesh.schedules.schedule import Phase, Schedule
from equimesh.schedules.topology import build
from equimesh.schedules.verify import verify
from equimesh.sim.analytic.alphabeta import (
    LinkModel,
    Transfers,
    dim_decomposed_allreduce,
    dim_decomposed_allreduce_time,
    run,
    run_ready_order,
    simulate,
)

# alpha = 1, B = 100 bytes per time unit: a 1000-byte chunk takes T = 1 + 10 = 11.
MODEL = LinkModel(alpha=1.0, bandwidth=100.0)
T = 11.0


def mesh22():
    return build("mesh", 2, 2)


def phase(topo, collective, steps):
    """steps: list of lists of (src, dst, root); chunk 0."""
    ids = {(l.src, l.dst): i for i, l in enumerate(topo.links)}
    return Phase(
        collective, [np.array([[ids[(u, v)], r, 0] for u, v, r in st], dtype=np.int64).reshape(-1, 3) for st in steps]
    )


# The 2x2 mesh: 0 1 / 2 3; neighbours 0-1, 0-2, 1-3, 2-3.
AG_STEP_SYNC = [
    [(0, 1, 0), (0, 2, 0), (1, 0, 1), (1, 3, 1), (2, 0, 2), (2, 3, 2), (3, 1, 3), (3, 2, 3)],
    [(1, 0, 3), (0, 1, 2), (0, 2, 1), (1, 3, 0)],
]


def test_allgather_two_steps_each_alpha_plus_chunk_over_b():
    t = mesh22()
    s = Schedule("allgather", "hand", 1, t, [phase(t, "allgather", AG_STEP_SYNC)])
    verify(s)
    r = simulate(s, [1000.0], MODEL)
    assert r.completion[0] == pytest.approx(2 * T)
    assert r.effective_bandwidth[0] == pytest.approx(1000.0 / (2 * T))


def test_allgather_is_event_driven_not_step_synchronous():
    # r0 travels 0->1->3->2 in steps 0..2; everything else sits in steps 3 and 4 but
    # mostly needs only its own data, so it starts before step 3 would in lockstep.
    t = mesh22()
    steps = [
        [(0, 1, 0)],
        [(1, 3, 0)],
        [(3, 2, 0)],
        [(1, 0, 1), (1, 3, 1), (2, 0, 2), (2, 3, 2), (3, 1, 3), (3, 2, 3)],
        [(0, 2, 1), (0, 1, 2), (1, 0, 3)],
    ]
    s = Schedule("allgather", "hand", 1, t, [phase(t, "allgather", steps)])
    verify(s)
    # By hand: 3->2 carries r0 in [2T, 3T] and then r3 in [3T, 4T]; all else ends by 3T.
    r = simulate(s, [1000.0], MODEL)
    assert r.completion[0] == pytest.approx(4 * T)


RS_STEPS = [
    [(3, 1, 1), (2, 0, 1), (1, 3, 2), (0, 2, 3)],
    [(3, 1, 0), (0, 1, 1), (3, 2, 2), (2, 3, 3)],
    [(1, 0, 0), (2, 0, 0), (0, 2, 2), (1, 3, 3)],
]


def test_reducescatter_waits_for_partials():
    t = mesh22()
    s = Schedule("reducescatter", "hand", 1, t, [phase(t, "reducescatter", RS_STEPS)])
    verify(s)
    # Chunk = M / (N K) = 4000 / 4 = 1000 bytes. 3->1 carries r1 in [0, T] and r0 in
    # [T, 2T]; node 1 forwards r0 to 0 only after that partial: [2T, 3T].
    r = simulate(s, [4000.0], MODEL)
    assert r.completion[0] == pytest.approx(3 * T)


def test_allreduce_allgather_leaves_root_when_its_sum_is_complete():
    t = mesh22()
    s = Schedule("allreduce", "hand", 1, t, [phase(t, "reducescatter", RS_STEPS), phase(t, "allgather", AG_STEP_SYNC)])
    verify(s)
    # Sums complete at 3T (root 0) and 2T (roots 1, 2, 3). By hand the AllGather's
    # diagonal step runs in [4T, 5T]: 0->1 is busy with r0 until 4T.
    r = simulate(s, [4000.0], MODEL)
    assert r.completion[0] == pytest.approx(5 * T)


def test_latest_of_several_partials_and_payload_units():
    # Link 0 carries key 0 -> key 2 (1 unit), link 1 carries key 1 -> key 2 after waiting
    # for link 0's first transfer (3 units); then link 2 forwards key 2 (2 units).
    tr = Transfers(
        step=np.array([0, 1, 2, 3]),
        link=np.array([0, 0, 1, 2]),
        src_keys=np.array([[4], [0], [3], [2]]),
        dst_keys=np.array([[3], [2], [2], [5]]),
        units=np.array([1, 1, 3, 2]),
        n_keys=4,
        n_links=3,
    )
    # unit time 10, alpha 1: [0,11] on link 0; [11,22] link 0; link 1 waits key 3 = 11: [11, 42];
    # key 2 = max(22, 42) = 42; link 2: [42, 42 + 21].
    assert run(tr, [10.0], 1.0)[0] == pytest.approx(63.0)


def test_ready_order_lets_a_ready_transfer_overtake():
    # C on link 1 (2 units) feeds A on link 0; B on link 0 needs nothing but comes after A.
    # Schedule order: A [21, 32], B [32, 43]. Ready order: B [0, 11], A [21, 32].
    tr = Transfers(
        step=np.array([0, 1, 2]),
        link=np.array([1, 0, 0]),
        src_keys=np.array([[3], [0], [3]]),
        dst_keys=np.array([[0], [1], [2]]),
        units=np.array([2, 1, 1]),
        n_keys=3,
        n_links=2,
    )
    assert run(tr, [10.0], 1.0)[0] == pytest.approx(43.0)
    assert run_ready_order(tr, 10.0, 1.0) == pytest.approx(32.0)


def test_ready_order_reports_unmet_dependencies():
    # Transfer 1 waits for key 0, which transfer 0 writes only after reading key 1 (a cycle).
    tr = Transfers(
        step=np.array([0, 1]),
        link=np.array([0, 1]),
        src_keys=np.array([[1], [0]]),
        dst_keys=np.array([[0], [1]]),
        units=np.array([1, 1]),
        n_keys=2,
        n_links=2,
    )
    with pytest.raises(ValueError, match="2 transfers never get their data"):
        run_ready_order(tr, 1.0, 0.0)


@pytest.mark.parametrize("steps,collective", [(AG_STEP_SYNC, "allgather"), (RS_STEPS, "reducescatter")])
def test_ready_order_equals_schedule_order_when_nothing_can_overtake(steps, collective):
    # The lockstep 2x2 schedules: every link's transfers are ready in schedule order.
    t = mesh22()
    s = Schedule(collective, "hand", 1, t, [phase(t, collective, steps)])
    assert simulate(s, [4000.0], MODEL, "ready").completion == pytest.approx(simulate(s, [4000.0], MODEL).completion)


def test_allreduce_ready_order_by_hand():
    t = mesh22()
    s = Schedule("allreduce", "hand", 1, t, [phase(t, "reducescatter", RS_STEPS), phase(t, "allgather", AG_STEP_SYNC)])
    # Ready order. Sums complete: r0 at 3T, r1..r3 at 2T. AllGather step 0 by data: 1->3 r1, 2->0 r2, 2->3 r2,
    # 3->1 r3, 3->2 r3 run [2T, 3T]; 1->0 r1 waits for 1->0 (RS r0) [2T, 3T]: [3T, 4T];
    # 0->1 r0, 0->2 r0 [3T, 4T]. Step 1: 1->3 r0 needs r0 at 1 (4T): [4T, 5T]. Same as in order.
    assert simulate(s, [4000.0], MODEL, "ready").completion[0] == pytest.approx(5 * T)


def test_vectorized_sizes_match_one_at_a_time():
    t = mesh22()
    s = Schedule("allreduce", "hand", 1, t, [phase(t, "reducescatter", RS_STEPS), phase(t, "allgather", AG_STEP_SYNC)])
    sizes = [4.0, 4000.0, 4e6]
    together = simulate(s, sizes, MODEL).completion
    alone = [simulate(s, [m], MODEL).completion[0] for m in sizes]
    assert together == pytest.approx(alone)


def test_link_busy_time_is_transfers_times_alpha_plus_bytes():
    t = mesh22()
    s = Schedule("allgather", "hand", 1, t, [phase(t, "allgather", AG_STEP_SYNC)])
    r = simulate(s, [1000.0], MODEL)
    ids = {(l.src, l.dst): i for i, l in enumerate(t.links)}
    busy = r.link_busy(MODEL)
    assert busy[ids[(0, 1)]] == pytest.approx(2 * T)  # r0, then r2
    assert busy[ids[(2, 3)]] == pytest.approx(T)  # r2 only


def test_size_zero_rejected():
    t = mesh22()
    s = Schedule("allgather", "hand", 1, t, [phase(t, "allgather", AG_STEP_SYNC)])
    with pytest.raises(ValueError, match="> 0"):
        simulate(s, [0.0], MODEL)


@pytest.mark.parametrize("rows,cols", [(2, 2), (3, 4), (4, 4), (5, 11), (8, 8), (2, 5)])
@pytest.mark.parametrize("wrap", [False, True], ids=["mesh", "torus"])
def test_seed003_dimension_decomposed_ring_allreduce(rows, cols, wrap):
    """Seed 003, Sections 3.4 / 4.2: t = 2 sum(d_i - 1) alpha + 2 (N-1)/N M / BW."""
    tr = dim_decomposed_allreduce(rows, cols, wrap)
    model = LinkModel()  # Table I: 20 ns, 128 GB/s
    sizes = np.array([1e3, 1e6, 1e9])
    n = rows * cols
    sim = run(tr, sizes / n / model.bandwidth, model.alpha)
    formula = np.array([dim_decomposed_allreduce_time(rows, cols, m, model) for m in sizes])
    assert np.abs(sim / formula - 1).max() < 0.01


def test_seed003_formula_by_hand():
    # 2x2: 2 * (1 + 1) * alpha + 2 * 3/4 * M / B with alpha = 1, B = 100, M = 1000
    assert dim_decomposed_allreduce_time(2, 2, 1000.0, MODEL) == pytest.approx(4 + 15)


@pytest.mark.parametrize("wrap", [False, True], ids=["mesh", "torus"])
def test_seed003_3x4_by_hand(wrap):
    # 3x4, alpha = 1, B = 100, M = 1200: 2 * ((3-1) + (4-1)) * 1 + 2 * (11/12) * 1200 / 100 = 10 + 22 = 32,
    # and the simulated algorithm (not the formula) within 1% of that hand value.
    assert dim_decomposed_allreduce_time(3, 4, 1200.0, MODEL) == pytest.approx(32.0)
    sim = run(dim_decomposed_allreduce(3, 4, wrap), np.array([1200.0 / 12 / MODEL.bandwidth]), MODEL.alpha)
    assert sim[0] == pytest.approx(32.0, rel=0.01)
