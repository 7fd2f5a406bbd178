"""The numpy relay (schedules/methods/a2a_fast.py) against the reference relay (a2a.py), issue 41.

Re-routed chunk by chunk (one batch per chunk) the numpy relay must give the very same steps as
a2a.py with stage 1b off: two implementations of the routes and the list schedule checked against
each other. With its default batches it must still verify.
"""

import numpy as np
import pytest

from equimesh.schedules.alltoall import skewed_counts
from equimesh.schedules.methods import a2a
from equimesh.schedules.methods.a2a_fast import fast_relay_alltoall
from equimesh.schedules.schedule import Schedule
from equimesh.schedules.topology import build
from equimesh.schedules.verify import verify


def _rows(phase):
    return [sorted(map(tuple, np.asarray(s).tolist())) for s in phase.steps]


@pytest.mark.parametrize("kind", ["mesh", "equimesh", "overflow", "torus", "supermesh"])
@pytest.mark.parametrize("rows,cols,k", [(3, 4, 1), (4, 4, 2), (5, 3, 1)])
def test_same_steps_as_the_reference_relay(monkeypatch, kind, rows, cols, k):
    monkeypatch.setattr(a2a, "RELIEVE_MAX", 0)  # stage 1b off, as where the numpy relay is used
    topo = build(kind, rows, cols)
    ref = a2a.relay_alltoall(topo, k)
    fast = fast_relay_alltoall(topo, k, batches=10**9)
    assert _rows(fast) == _rows(ref)


def test_skewed_same_steps_and_default_batches_verify(monkeypatch):
    monkeypatch.setattr(a2a, "RELIEVE_MAX", 0)
    topo = build("equimesh", 4, 5)
    counts = skewed_counts(topo.nodes, topo.cols, 1, 3, 3)
    assert _rows(fast_relay_alltoall(topo, 3, counts, batches=10**9)) == _rows(a2a.relay_alltoall(topo, 3, counts))
    s = Schedule("alltoall", "relay", 3, topo, [fast_relay_alltoall(topo, 3, counts)], {"counts": counts})
    verify(s)
