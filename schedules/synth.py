"""Schedule synthesis: topology + collective + algorithm -> Schedule.

ReduceScatter is always built by MirrorXTree's construction (seed 000,
Algorithm 3): synthesize an AllGather on the mirror topology, then reverse it
in time and direction onto the links of the original topology. AllReduce is
that ReduceScatter followed by the AllGather, as two ``phases``.

``auto`` (the default) picks, per phase, the best valid method: the
ring-pipelined AllGather on a Hamiltonian decomposition (``ring``,
:mod:`.ringpipe`) where one is known and K is a multiple of 4 (it meets the
bound and the lane rule by construction); else, for K a multiple of 4, rounds
of a stored K = 4 schedule at the bound (``stored``, :mod:`.library`)
where one is stored; otherwise XTree, or rounds of a stored best-known schedule
where they are shorter, or the split schedule of :mod:`.split` (per round of 4 chunks N - 1
steps, the bound, where a tail is stored, else N) where a split is stored, and on small networks where XTree
misses the bound the exact solver (tiny ones) and XTree with repair
(:func:`.cpsat.repair`) if they find fewer steps within a few seconds. The
schedule's ``method`` says what was used.
"""

from __future__ import annotations

from .methods.a2a import RELIEVE_MAX, relay_alltoall
from .methods.a2a_exact import exact_alltoall
from .methods.a2a_fast import fast_relay_alltoall
from .methods.cpsat import exact, improve_tail, repair
from .methods.hamiltonian import decompose
from .methods.library import stored
from .methods.multitree import multitree
from .methods.overlap import overlapped_allreduce
from .methods.parity import no_decomposition
from .methods.reverse import reverse_onto
from .methods.ring2d import ring2d
from .methods.ringpipe import ring_allgather
from .methods.split import split_allgather
from .methods.tacos import tacos
from .methods.tidalmesh import tidalmesh
from .methods.tto import tto
from .methods.xtree import xtree
from .methods.xtree_paper import xtree_paper
from .schedule import Phase, Schedule, lower_bound
from .topology import Topology

__all__ = [
    "ALGORITHMS",
    "ALLTOALL_ALGORITHMS",
    "BASELINES",
    "EXACT_A2A_AUTO_MAX",
    "EXACT_AUTO_MAX",
    "EXACT_AUTO_SECONDS",
    "REPAIR_AUTO_MAX",
    "REPAIR_AUTO_SECONDS",
    "REPAIR_SEEDS",
    "SynthesisError",
    "allgather",
    "alltoall",
    "best_allgather",
    "cpsat",
    "overlap",
    "ring",
    "split",
    "synthesize",
]


def overlap(topo: Topology, chunks: int, collective: str = "allreduce", trees: str = "mirrorxtree") -> Schedule:
    """The overlapped AllReduce (format version 2, :mod:`.methods.overlap`).

    It is built from the trees of ``trees``'s phased AllReduce (seed 000, Algorithm 3 for
    ``mirrorxtree``); it schedules AllReduce only.

    Parameters
    ----------
    topo : Topology
        The network.
    chunks : int
        K, the chunks per shard (>= 1).
    collective : str
        Must be ``"allreduce"``.
    trees : str
        The algorithm of the phased AllReduce whose trees are overlapped (one of :data:`ALGORITHMS`),
        synthesized with ``lanes=False``.

    Returns
    -------
    Schedule
        An AllReduce of one phase whose step arrays have shape (n, 4): ``[link, root, chunk, op]``.

    Raises
    ------
    SynthesisError
        If ``collective`` is not ``"allreduce"``, or the phased AllReduce cannot be built.
    """
    if collective != "allreduce":
        raise SynthesisError(f"the overlapped schedule is an AllReduce (got {collective})")
    return overlapped_allreduce(topo, chunks, synthesize(topo, chunks, "allreduce", trees, lanes=False))


# The mesh baselines of seed 000, Section V-A that build a whole Schedule themselves, by name:
# (topology, chunks, collective) -> Schedule. With ALGORITHMS this is the one registry of methods.
BASELINES = {"tacos": tacos, "tto": tto, "tidalmesh": tidalmesh, "overlap": overlap}
# "xtree-paper" is seed 000's Algorithm 2 as printed (:mod:`.methods.xtree_paper`); "xtree-matching" is
# equimesh's own variant of it (:mod:`.methods.xtree`), also reachable under its older name "xtree".
ALGORITHMS = (
    "auto",
    "ring",
    "split",
    "xtree-matching",
    "xtree",
    "xtree-paper",
    "repair",
    "mirrorxtree",
    "multitree",
    "ring2d",
    "optimal",
    "cpsat",
    "relay",
)
ALLTOALL_ALGORITHMS = ("auto", "relay", "cpsat")  # AllToAll methods (docs/alltoall.md)
EXACT_A2A_AUTO_MAX = 9  # auto tries the AllToAll CP-SAT model when nodes x K is at most this
EXACT_AUTO_MAX = 24  # auto tries the CP-SAT exact model when nodes x K is at most this ...
EXACT_AUTO_SECONDS = 10.0  # ... for at most this long
REPAIR_AUTO_MAX = 64  # auto tries XTree with repair when nodes x K is at most this ...
REPAIR_AUTO_SECONDS = 5.0  # ... for at most this long
REPAIR_SEEDS = 4  # XTree tie-break orders that repair tries


class SynthesisError(RuntimeError):
    """The algorithm could not produce a schedule (e.g. the exact solver ran out of time).

    The message is one line saying why, and usually which ``--algorithm`` applies instead.
    """


def ring(topo: Topology, chunks: int) -> Phase:
    """The ring-pipelined AllGather (:mod:`.methods.ringpipe`) on a Hamiltonian decomposition.

    Parameters
    ----------
    topo : Topology
        An EquiMesh or mirror EquiMesh (seed 000, Algorithm 1).
    chunks : int
        K, the chunks per shard; must be a multiple of 4 (then the schedule meets the bound).

    Returns
    -------
    Phase
        The AllGather phase; it meets the bound and the lane rule by construction.

    Raises
    ------
    SynthesisError
        Saying why it does not apply and what does: another kind of topology, K not a multiple
        of 4, or no known Hamiltonian decomposition of ``topo``.
    """
    if topo.kind not in ("equimesh", "mirror-equimesh"):
        raise SynthesisError(f"ring needs an EquiMesh (got {topo.kind}); use --algorithm auto or xtree")
    if chunks % 4:
        raise SynthesisError(
            f"ring needs K a multiple of 4 to reach the bound (got K={chunks}); use --algorithm auto or xtree"
        )
    dec = decompose(topo)
    if dec is None:
        known = stored(topo, chunks)
        other = (
            "auto (it runs a stored schedule at the bound here)"
            if known is not None and known.num_steps <= lower_bound(topo, chunks, "allgather")
            else "auto or xtree"
        )
        why = no_decomposition(topo) or "none is known, README 'Schedules'"
        raise SynthesisError(f"ring: no Hamiltonian decomposition of the {topo.name} ({why}); use --algorithm {other}")
    return ring_allgather(topo, chunks, dec)


def split(topo: Topology, chunks: int) -> Phase:
    """The split AllGather (:mod:`.methods.split`).

    Parameters
    ----------
    topo : Topology
        The network; a split exists for the EquiMesh and its mirror only.
    chunks : int
        K, the chunks per shard; must be a multiple of 4.

    Returns
    -------
    Phase
        The AllGather phase: per round of 4 chunks N - 1 steps (the bound) where a tail is stored, else N.

    Raises
    ------
    SynthesisError
        Saying why it does not apply and what does: K not a multiple of 4, another kind of
        topology, a 2 x C EquiMesh with C odd from 5 on (none exists), or no stored split and no tile.
    """
    if chunks % 4:
        raise SynthesisError(f"split needs K a multiple of 4 (got K={chunks}); use --algorithm auto or xtree")
    phase = split_allgather(topo, chunks)
    if phase is None:
        long = max(topo.rows, topo.cols)
        side = min(topo.rows, topo.cols) == 2 and long % 2 and long >= 5
        why = (
            "it applies to the EquiMesh and its mirror only"
            if topo.kind not in ("equimesh", "mirror-equimesh")
            else "none exists at 2 x C with C odd from 5 on, for any ring directions (CP-SAT proof, "
            "docs/schedules.md 'Split schedules')"
            if side
            else "none stored for it with these ring directions, and no split tile covers it (tiles: cccc, one "
            "side even, the other odd >= 9, or >= 7 with an even side of 14 or 16; "
            "docs/schedules.md 'Split schedules')"
        )
        raise SynthesisError(f"split on the {topo.name}: {why}; use --algorithm auto")
    return phase


def best_allgather(topo: Topology, chunks: int, lanes: bool, time_limit: float, progress) -> tuple[Phase, str]:
    """``auto``: the best valid AllGather and the name of its method (module docstring).

    In order: ``ring`` where K is a multiple of 4 and a Hamiltonian decomposition is known; a
    ``stored`` schedule at the bound; a ``split`` one at most one step over the bound and no
    longer than the stored one (with ``lanes`` only); else XTree (seed 000, Algorithm 2), replaced
    by a stored or split schedule where shorter; and where XTree misses the bound on small
    networks, the CP-SAT exact model
    (nodes x K <= :data:`EXACT_AUTO_MAX`, at most :data:`EXACT_AUTO_SECONDS`) and XTree with repair
    (nodes x K <= :data:`REPAIR_AUTO_MAX`, at most :data:`REPAIR_AUTO_SECONDS`) if they find fewer steps.

    Parameters
    ----------
    topo : Topology
        The network.
    chunks : int
        K, the chunks per shard.
    lanes : bool
        Honour the RTL's node storage rule (:mod:`.storage`).
    time_limit : float
        Seconds; caps the exact and repair solvers (each also capped by its own limit above).
    progress : callable or None
        ``progress(done, total)``, called by XTree as it goes.

    Returns
    -------
    tuple of (Phase, str)
        The AllGather phase and its method: ``"ring"``, ``"stored"``, ``"split"``, ``"xtree"``,
        ``"cpsat"`` or ``"repair"``.
    """
    bound = lower_bound(topo, chunks, "allgather")
    if chunks % 4 == 0 and decompose(topo) is not None:
        return ring(topo, chunks), "ring"
    known = stored(topo, chunks)
    if known is not None and known.num_steps <= bound:
        return known, "stored"
    near = split_allgather(topo, chunks) if lanes else None
    if near is not None and near.num_steps <= bound + 1 and (known is None or near.num_steps <= known.num_steps):
        return near, "split"  # at the bound (a stored tail), or one over: only the bound is better
    best, method = xtree(topo, chunks, lanes=lanes, progress=progress), "xtree"
    if known is not None or near is not None:  # best known, above the bound: the solvers below found no better
        for phase, name in ((known, "stored"), (near, "split")):
            if phase is not None and phase.num_steps < best.num_steps:
                best, method = phase, name
        return best, method
    if best.num_steps > bound and topo.nodes * chunks <= EXACT_AUTO_MAX:
        res = exact(topo, chunks, best.num_steps - 1, lanes=lanes, time_limit=min(time_limit, EXACT_AUTO_SECONDS))
        if res.phase is not None:
            best, method = res.phase, "cpsat"
    if best.num_steps > bound and topo.nodes * chunks <= REPAIR_AUTO_MAX:
        ph = repair(topo, chunks, REPAIR_SEEDS, lanes, time_limit=min(time_limit, REPAIR_AUTO_SECONDS))
        if ph.num_steps < best.num_steps:
            best, method = ph, "repair"
    return best, method


def cpsat(topo: Topology, chunks: int, lanes: bool, time_limit: float, progress) -> tuple[Phase, dict]:
    """The CP-SAT exact model for half of ``time_limit``, started from XTree's step count.

    Starting from XTree (seed 000, Algorithm 2) there is always a schedule; if the exact model
    finds nothing shorter, CP-SAT windows on XTree's last steps (:func:`.cpsat.improve_tail`) for
    the other half.

    Parameters
    ----------
    topo : Topology
        The network.
    chunks : int
        K, the chunks per shard.
    lanes : bool
        Honour the RTL's node storage rule (:mod:`.storage`).
    time_limit : float
        Seconds in all, split in two halves.
    progress : callable or None
        ``progress(done, total)``, passed to XTree.

    Returns
    -------
    tuple of (Phase, dict)
        The AllGather phase, and ``{"proven": bool, "lower": int}``: whether its step count is
        proven optimal, and the proven lower limit on the step count.
    """
    start = xtree(topo, chunks, lanes=lanes, progress=progress)
    res = exact(topo, chunks, start.num_steps - 1, lanes=lanes, time_limit=time_limit / 2)
    if res.phase is not None:
        return res.phase, {"proven": res.proven, "lower": res.lower}
    if res.lower == start.num_steps:
        return start, {"proven": True, "lower": res.lower}
    best = improve_tail(topo, chunks, start, lanes, time_limit / 2)
    return best, {"proven": best.num_steps == res.lower, "lower": res.lower}


def allgather(topo: Topology, chunks: int, algorithm: str, lanes: bool, time_limit: float, progress) -> Phase:
    """The AllGather of one named method (every one of :data:`ALGORITHMS` but ``auto`` and ``cpsat``).

    Parameters
    ----------
    topo : Topology
        The network.
    chunks : int
        K, the chunks per shard.
    algorithm : str
        ``"ring"``, ``"split"``, ``"xtree"`` or ``"mirrorxtree"`` (both XTree, seed 000, Algorithm 2),
        ``"repair"``, ``"multitree"``, ``"ring2d"`` or ``"optimal"``.
    lanes : bool
        Honour the RTL's node storage rule (:mod:`.storage`).
    time_limit : float
        Seconds for the ``repair`` and ``optimal`` solvers.
    progress : callable or None
        ``progress(done, total)``, passed to XTree.

    Returns
    -------
    Phase
        The AllGather phase.

    Raises
    ------
    SynthesisError
        If the method does not apply, the exact solver decides nothing within ``time_limit``,
        or ``algorithm`` is unknown.
    """
    if algorithm == "ring":
        return ring(topo, chunks)
    if algorithm == "split":
        return split(topo, chunks)
    if algorithm in ("xtree", "xtree-matching", "mirrorxtree"):
        return xtree(topo, chunks, lanes=lanes, progress=progress)
    if algorithm == "xtree-paper":
        return xtree_paper(topo, chunks, lanes=lanes)
    if algorithm == "repair":
        return repair(topo, chunks, REPAIR_SEEDS, lanes, time_limit=time_limit)
    if algorithm == "multitree":
        return multitree(topo, chunks)
    if algorithm == "ring2d":
        return ring2d(topo, chunks)
    if algorithm == "optimal":
        from .methods.optimal import optimal  # scipy.optimize takes a second to import; only this path needs it

        res = optimal(topo, chunks, lanes=lanes, time_limit=time_limit)
        if res.phase is None:
            raise SynthesisError(
                f"exact solver: no decision within {time_limit:g} s on {topo.name} (K={chunks}); "
                f"every step count below {res.infeasible_below} is proven infeasible"
            )
        return res.phase
    raise SynthesisError(f"unknown algorithm {algorithm!r}; expected one of {', '.join(ALGORITHMS)}")


def alltoall(topo: Topology, chunks: int, algorithm: str, lanes: bool, time_limit: float, counts=None) -> Schedule:
    """An AllToAll schedule (docs/alltoall.md): ``relay`` (:mod:`.methods.a2a`); ``cpsat``, the exact
    model (:mod:`.methods.a2a_exact`) below relay's step count, ``time_limit`` seconds per step count;
    ``auto``, relay, and on networks of nodes x K <= 9 the exact model for a few seconds if relay
    misses the bound (without ``lanes``). ``lanes``: relay under the RTL's lane rule
    (:func:`.storage.alltoall_lanes`). Links-only relays of more than ``RELIEVE_MAX`` chunk fields
    (nodes x K) run in numpy (:mod:`.methods.a2a_fast`). ``counts``: a skewed AllToAll's chunks per
    (source, destination), at most ``chunks`` each (relay only).

    Parameters
    ----------
    topo : Topology
        The topology.
    chunks : int
        K, chunks per (source, destination) pair.
    algorithm : str
        ``"auto"``, ``"relay"`` or ``"cpsat"`` (:data:`ALLTOALL_ALGORITHMS`).
    lanes : bool
        Relay under the RTL's lane rule (the exact model does not model lanes: an error with ``cpsat``).
    time_limit : float
        The exact model's seconds per step count.
    counts : array_like, optional
        ``[N, N]`` chunks per pair of a skewed AllToAll.

    Returns
    -------
    Schedule
        One ``alltoall`` phase; ``meta`` names the method (and, for ``cpsat``, what is proven).

    Raises
    ------
    SynthesisError
        For an unknown algorithm, ``lanes`` with ``cpsat``, or ``counts`` with ``cpsat``.
    """
    if algorithm not in ALLTOALL_ALGORITHMS:
        raise SynthesisError(f"AllToAll is scheduled by {', '.join(ALLTOALL_ALGORITHMS)} (got {algorithm})")
    if lanes and algorithm == "cpsat":
        raise SynthesisError(
            "the exact AllToAll model does not model the storage lanes; use --storage none or --algorithm relay"
        )
    if counts is not None and algorithm == "cpsat":
        raise SynthesisError("the exact AllToAll model takes uniform AllToAll only; use --algorithm relay")
    if lanes or topo.nodes * chunks <= RELIEVE_MAX:
        phase = relay_alltoall(topo, chunks, counts, lanes=lanes)
    else:  # stage 1b is off at this size: the same relay in numpy
        phase = fast_relay_alltoall(topo, chunks, counts)
    meta = {"method": "relay"}
    if counts is not None:
        meta["counts"] = counts
    if lanes:
        meta["storage"] = "lanes"
    small = topo.nodes * chunks <= EXACT_A2A_AUTO_MAX and counts is None and not lanes
    if algorithm == "cpsat" or (algorithm == "auto" and small):
        limit = time_limit if algorithm == "cpsat" else min(time_limit, EXACT_AUTO_SECONDS)
        res = exact_alltoall(topo, chunks, phase.num_steps - 1, limit)
        if res.phase is not None:
            phase, meta["method"] = res.phase, "cpsat"
        if algorithm == "cpsat":
            meta["proven_optimal"] = res.proven or res.lower == phase.num_steps
            meta["proven_lower"] = res.lower
    return Schedule("alltoall", algorithm, chunks, topo, [phase], meta)


def synthesize(
    topo: Topology,
    chunks: int,
    collective: str,
    algorithm: str = "auto",
    lanes: bool = True,
    time_limit: float = 60.0,
    progress=None,
    counts=None,
) -> Schedule:
    """Build the schedule.

    ReduceScatter is MirrorXTree's construction (seed 000, Algorithm 3): an AllGather on the mirror
    topology reversed in time and direction onto ``topo`` (:func:`.reverse.reverse_onto`); AllReduce
    is that ReduceScatter followed by the AllGather, as two phases.

    Parameters
    ----------
    topo : Topology
        The network.
    chunks : int
        K, the chunks per shard.
    collective : str
        ``"allgather"``, ``"reducescatter"``, ``"allreduce"`` or ``"alltoall"`` (docs/alltoall.md).
    algorithm : str
        One of :data:`ALGORITHMS` (AllToAll: :data:`ALLTOALL_ALGORITHMS`); ``"auto"`` (the default)
        picks the best valid method per phase.
    lanes : bool
        ``True`` (the default) makes it honour the RTL's node storage rule (``storage.py``), so the
        hardware can run it; ``False`` gives the pure collective schedule, limited only by the links.
    time_limit : float
        Seconds for the solvers (``optimal``, ``cpsat``, ``repair``, and ``auto``'s capped tries).
    progress : callable or None
        ``progress(done, total)``, passed to XTree.
    counts : numpy.ndarray or None
        A skewed AllToAll's chunks per (source, destination), at most ``chunks`` each; None: uniform.

    Returns
    -------
    Schedule
        Its ``meta`` holds ``method`` (the methods used, joined by ``+``), ``storage: "lanes"``
        with ``lanes``, and for ``cpsat`` ``proven_optimal`` and ``proven_lower`` (steps).

    Raises
    ------
    SynthesisError
        If ``multitree`` or ``ring2d`` is asked for with ``lanes``, the collective is unknown,
        or the method cannot produce a schedule.
    """
    if algorithm in ("multitree", "ring2d") and lanes:
        raise SynthesisError(
            f"{algorithm} does not model the node storage lanes; pass lanes=False "
            "(--storage none), or use xtree or optimal"
        )
    if collective == "alltoall":
        return alltoall(topo, chunks, algorithm, lanes, time_limit, counts)
    if algorithm == "relay":
        raise SynthesisError("relay schedules AllToAll only (--collective alltoall)")
    proofs = []

    def gather(t: Topology) -> tuple[Phase, str]:
        if algorithm == "auto":
            return best_allgather(t, chunks, lanes, time_limit, progress)
        if algorithm == "cpsat":
            ph, proof = cpsat(t, chunks, lanes, time_limit, progress)
            proofs.append(proof)
            return ph, algorithm
        return allgather(t, chunks, algorithm, lanes, time_limit, progress), algorithm

    phases, methods = [], []
    if collective in ("reducescatter", "allreduce"):
        m = topo.mirror()
        ph, how = gather(m)
        phases.append(reverse_onto(ph, m, topo))
        methods.append(how)
    if collective in ("allgather", "allreduce"):
        ph, how = gather(topo)
        phases.append(ph)
        methods.append(how)
    if not phases:
        raise SynthesisError(f"unknown collective {collective!r}")
    meta = {"storage": "lanes"} if lanes else {}
    meta["method"] = "+".join(dict.fromkeys(methods))
    if proofs:
        meta["proven_optimal"] = all(p["proven"] for p in proofs)
        meta["proven_lower"] = sum(p["lower"] for p in proofs)
    return Schedule(collective, algorithm, chunks, topo, phases, meta)
