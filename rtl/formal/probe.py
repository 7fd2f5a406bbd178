"""What the formal wrappers need besides Amaranth's public API.

* :func:`internals`: a block's registers by name, to state the strengthening invariants that
  k-induction needs (an unreachable state of the block that the wrapper's own counters cannot rule
  out otherwise). The wrapper elaborates the block itself and reads its ``Module``'s statements.
* :func:`made`: the instances of a class made while a block elaborates (its lanes, its crossbar), so
  that a wrapper can watch their ports.
* :func:`anyconst`: a value the solver chooses once (Yosys ``$anyconst``), for a symbolic
  configuration such as a router's forwarding entries.
* :func:`stream_contract`: the ``Assume`` of the valid/ready stream contract.
"""

from __future__ import annotations

from contextlib import contextmanager

from amaranth.hdl import Assume, Module, Mux, ResetSignal, Signal, Value
from amaranth.hdl._ast import AnyConst  # public in amaranth.hdl from 0.6 on; the RTLIL backend writes $anyconst

__all__ = ["anyconst", "apart", "internals", "made", "no_reset", "ring_distance", "stream_contract"]


def anyconst(m: Module, shape, name: str):
    """A signal holding one value the solver picks for the whole trace (Yosys ``$anyconst``).

    Parameters
    ----------
    m : Module
        The module that drives it.
    shape : ShapeLike
        Its shape.
    name : str
        Its name.

    Returns
    -------
    Signal
        The signal, constant over the trace, unconstrained otherwise.
    """
    sig = Signal(shape, name=name)
    m.d.comb += sig.eq(AnyConst(shape))
    return sig


def internals(module: Module) -> dict[str, Signal]:
    """The signals ``module`` (an elaborated block, not yet a submodule) drives, by name.

    Parameters
    ----------
    module : Module
        The block's elaborated module.

    Returns
    -------
    dict[str, Signal]
        Every signal its statements assign, by name (the first of a name).
    """
    module._flush()
    found = {}
    for statements in module._statements.values():
        for stmt in statements:
            for sig in stmt._lhs_signals():
                found.setdefault(sig.name, sig)
    return found


@contextmanager
def made(*classes):
    """Record, per class, the instances created inside the ``with`` block (in creation order).

    Parameters
    ----------
    *classes : type
        The classes to watch (their ``__init__`` is wrapped for the block's duration).

    Yields
    ------
    dict[type, list]
        Per class, the instances made so far.
    """
    seen = {cls: [] for cls in classes}
    saved = {cls: cls.__init__ for cls in classes}

    def patch(cls):
        original = saved[cls]

        def init(self, *args, **kwargs):
            original(self, *args, **kwargs)
            if type(self) is cls or isinstance(self, cls):
                seen[cls].append(self)

        return init

    for cls in classes:
        cls.__init__ = patch(cls)
    try:
        yield seen
    finally:
        for cls, init in saved.items():
            cls.__init__ = init


def stream_contract(m: Module, valid, ready, payload, name: str):
    """Assume the valid/ready contract of a stream source (``amaranth.lib.stream``, AXI-Stream): once
    ``valid`` is up it stays up, with the same payload, until the cycle ``ready`` takes it.

    Parameters
    ----------
    m : Module
        The wrapper's module.
    valid, ready : Value
        The stream's handshake.
    payload : ValueLike
        The stream's payload.
    name : str
        Prefix of the registers' names.

    Returns
    -------
    Signal
        The register that remembers a pending offer (for covers and invariants).
    """
    waiting = Signal(name=f"{name}_waiting")
    payload = Value.cast(payload)
    held = Signal(len(payload), name=f"{name}_held")
    m.d.sync += [waiting.eq(valid & ~ready), held.eq(payload)]
    m.d.comb += Assume(~waiting | (valid & (payload == held)))
    return waiting


def no_reset(m: Module) -> None:
    """Assume the sync domain's reset stays low: the proofs start from the initial state (the base case),
    which is what a reset gives, and the properties speak of one run of the design after it.

    Parameters
    ----------
    m : Module
        The wrapper's module.
    """
    m.d.comb += Assume(~ResetSignal())


def ring_distance(a, b, size: int):
    """How many memory words pointer ``b`` is ahead of pointer ``a``, both wrapping at ``size`` (the
    input buffer's pointers, :class:`~equimesh.rtl.packet_router.InputBuffer`).

    Parameters
    ----------
    a, b : Value
        Pointers, ``0 .. size - 1``.
    size : int
        The memory's depth.

    Returns
    -------
    Value
        ``(b - a) mod size``.
    """
    return Mux(b >= a, b - a, b + size - a)


def apart(a, b, n, size: int):
    """Pointer ``b`` is ``n`` words (``0 .. size``) after pointer ``a`` in a memory of ``size`` words:
    with ``n == size`` (every word between them) the two are equal.

    Parameters
    ----------
    a, b : Value
        Pointers, ``0 .. size - 1``.
    n : Value
        The words from ``a`` up to ``b``.
    size : int
        The memory's depth.

    Returns
    -------
    Value
        One bit: they are that far apart.
    """
    return Mux(n == size, a == b, ring_distance(a, b, size) == n)
