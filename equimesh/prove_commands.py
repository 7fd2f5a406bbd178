"""``equimesh prove``: formal proofs of the routers' blocks with SymbiYosys (``docs/formal.md``).

Per property it prints PASS (unbounded, by k-induction, with k), PASS up to depth D (the base case
holds to D but the induction step does not close), FAIL (with the counterexample VCD and GTKWave save
file under ``waveforms/``) or UNKNOWN (timeout, or a cover not reached), the covers reached and the
time. Exit 0 when every property passes, 1 otherwise.
"""

from __future__ import annotations

from .args import PAYLOAD_FLITS, SIDE, add_pipeline_arg, count
from .errors import InputError, UsageError

__all__ = ["cmd_prove", "register"]


def cmd_prove(args) -> int:
    """``equimesh prove``: prove each property of the chosen blocks with SymbiYosys (k-induction, then the
    covers) and print one line per property (see the module docstring).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh prove`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0 when every property passes, else 1; bad input raises :class:`UsageError`, a
        missing solver :class:`InputError` (one line).
    """
    from .rtl.formal import BLOCKS, Params, block, prove
    from .rtl.formal.sby import SolverMissing, tools
    from .schedules.topology import KINDS, TopologyError, build

    if args.block != "all" and args.block not in BLOCKS:
        raise UsageError(f"unknown block {args.block!r}; valid blocks: {', '.join(BLOCKS)}, all")
    names = BLOCKS if args.block == "all" else (args.block,)
    if args.property is not None:
        valid = [f"{b}:{p}" if args.block == "all" else p for b in names for p in block(b).PROPERTIES]
        if not any(args.property in block(b).PROPERTIES for b in names):
            raise UsageError(f"unknown property {args.property!r} for block {args.block}; valid: {', '.join(valid)}")
    if args.kind not in KINDS:
        raise UsageError(f"unknown topology kind {args.kind!r}; valid kinds: {', '.join(KINDS)}")
    try:
        build(args.kind, args.rows, args.cols)
    except TopologyError as e:
        raise UsageError(str(e)) from None
    if args.flit_bits % 32:  # the crossbar's and lanes' flits are whole 32-bit words (rtl/flit.py)
        raise UsageError(f"--flit-bits must be a multiple of 32 (got {args.flit_bits})")
    if set(names) & {"input_buffer", "relay", "packet_router"}:
        from .rtl.packet import PacketError, PacketFormat

        try:
            PacketFormat(args.rows * args.cols, args.payload_flits, args.flit_bits)
        except PacketError as e:
            raise UsageError(str(e)) from None
    try:
        tools()
    except SolverMissing as e:
        raise InputError(str(e)) from None
    p = Params(
        kind=args.kind,
        rows=args.rows,
        cols=args.cols,
        pipeline=args.pipeline,
        chunk_flits=args.chunk_flits,
        slots=args.slots,
        table_depth=args.table_depth,
        payload_flits=args.payload_flits,
        flit_bits=args.flit_bits,
    )
    print(f"# {p.describe()}")
    print(f"{'block':13s} {'property':18s} {'result':44s} {'covers':>6s} {'time':>8s}")
    failed = 0
    for b in names:
        mod = block(b)
        for name in mod.PROPERTIES:
            if args.property is not None and name != args.property:
                continue
            v = prove(b, name, p, args.timeout, args.depth)
            failed += v.status != "PASS"
            covers = f"{v.covers[0]}/{v.covers[1]}"
            print(f"{b:13s} {name:18s} {v.describe():44s} {covers:>6s} {v.seconds:7.1f}s", flush=True)
            if v.status == "FAIL":
                print(f"  failed: {v.note}; waveform {v.vcd} (GTKWave: gtkwave {v.gtkw})")
            elif v.note:
                print(f"  {v.note}")
    return 1 if failed else 0


def register(sub) -> None:
    """Add ``equimesh prove`` (:func:`cmd_prove`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands.
    """
    p = sub.add_parser(
        "prove",
        help="formal proofs (SymbiYosys, k-induction) of the crossbar, schedule router, input buffer, relay and "
        "packet router properties",
    )
    p.add_argument("--block", required=True, help="crossbar, router, input_buffer, relay, packet_router, or all")
    p.add_argument("--property", help="one property of the block (default: all of them)")
    p.add_argument("--kind", default="equimesh", help="topology kind (default equimesh): the routers' ports")
    p.add_argument("--rows", type=SIDE, default=4, help="rows (default 4): with --cols the packets' bitmap width")
    p.add_argument("--cols", type=SIDE, default=4, help="columns (default 4)")
    add_pipeline_arg(p)
    p.add_argument(
        "--chunk-flits",
        type=count(1, 64),
        default=2,
        help="schedule router: flits per chunk F (default 2, below MIN_PERIOD)",
    )
    p.add_argument("--slots", type=count(1, 256), default=4, help="schedule router: chunk slots per lane (default 4)")
    p.add_argument(
        "--table-depth",
        type=count(1, 256),
        default=4,
        help="schedule router: table entries; runs of every length up to it are covered (default 4)",
    )
    p.add_argument(
        "--flit-bits",
        type=count(1, 1024),
        default=32,
        help="flit width in bits, a multiple of 32 (default 32); a packet carries ceil(nodes / flit-bits) bitmap "
        "flits (8x8: 2)",
    )
    p.add_argument("--payload-flits", type=PAYLOAD_FLITS, default=2, help="packets: payload flits (default 2)")
    p.add_argument("--depth", type=count(1, 1000), help="induction length tried, or the bound (default: per block)")
    p.add_argument("--timeout", type=count(1, 86400), default=600, help="seconds per property (default 600)")
    p.set_defaults(func=cmd_prove)
