"""``bitmap-overhead``: what the destination bitmap costs a MultiWrite when it travels in flits of its
own (seed 004, Section 6.4, "Metadata overhead")."""

from __future__ import annotations

import json

from .args import count, items
from .errors import UsageError
from .rtl.packet import FLIT_BITS, PacketError, PacketFormat, bitmap_overhead

__all__ = ["SEED_FIGURE", "cmd_bitmap_overhead", "overhead_rows", "register"]

SEED_FIGURE = 0.0313  # seed 004 Section 6.4: 1,024 bits of a 4,096-byte payload


def overhead_rows(nodes: int, payloads: list[int], flit_bits: int) -> list[dict]:
    """Per payload size in bytes: the bitmap's share of the payload (the seed's measure) and of the packet's
    flits (header, ``ceil(nodes / flit_bits)`` bitmap flits, ``payload_bytes * 8 / flit_bits`` payload flits).

    Parameters
    ----------
    nodes : int
        The nodes the destination bitmap names (one bit each; seed 004 Section 6.4).
    payloads : list of int
        Payload sizes in bytes, each a whole number of flits.
    flit_bits : int
        The flit width in bits.

    Returns
    -------
    list of dict
        Per payload: ``payload_bytes``, ``bitmap_bits``, ``bitmap_flits``, ``packet_flits``, ``share_of_payload``
        and ``share_of_flits``.
    """
    rows = []
    for size in payloads:
        if size * 8 % flit_bits:
            raise UsageError(f"a {size}-byte payload is not a whole number of {flit_bits}-bit flits")
        fmt = PacketFormat(nodes, size * 8 // flit_bits, flit_bits)
        rows.append(
            {
                "payload_bytes": size,
                "bitmap_bits": nodes,
                "bitmap_flits": fmt.bitmap_flits,
                "packet_flits": fmt.packet_flits,
                "share_of_payload": bitmap_overhead(nodes, size),
                "share_of_flits": fmt.bitmap_flits / fmt.packet_flits,
            }
        )
    return rows


def cmd_bitmap_overhead(args) -> int:
    """``equimesh bitmap-overhead``: the MultiWrite destination bitmap's share of the payload and of the
    packet's flits per payload size, beside seed 004 Section 6.4's figure (:func:`overhead_rows`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of ``equimesh bitmap-overhead`` (:func:`register`).

    Returns
    -------
    int
        The exit status: 0; bad input raises :class:`UsageError` or :class:`InputError` (one line).
    """
    payloads = []
    for x in items(args.payloads, "--payloads"):
        try:
            payloads.append(int(x))
        except ValueError:
            raise UsageError(f"--payloads entries must be integers (got {x!r})") from None
        if payloads[-1] < 1:
            raise UsageError(f"--payloads entries must be positive (got {payloads[-1]})")
    try:
        rows = overhead_rows(args.nodes, payloads, args.flit_bits)
    except PacketError as e:
        raise UsageError(str(e)) from None
    if args.json:
        print(
            json.dumps(
                {"nodes": args.nodes, "flit_bits": args.flit_bits, "seed_figure": SEED_FIGURE, "rows": rows}, indent=2
            )
        )
        return 0
    print(
        f"MultiWrite to {args.nodes} nodes, {args.flit_bits}-bit flits: the bitmap is {rows[0]['bitmap_flits']} "
        f"flits (seed 004 Section 6.4: {SEED_FIGURE:.2%} of a 4,096-byte payload at 1,024 nodes)"
    )
    print(f"  {'payload':>9} {'of payload':>11} {'of flits':>9}  packet flits")
    for r in rows:
        print(
            f"  {r['payload_bytes']:>7} B {r['share_of_payload']:>11.3%} {r['share_of_flits']:>9.3%}  "
            f"{r['packet_flits']}"
        )
    return 0


def register(sub) -> None:
    """Add ``equimesh bitmap-overhead`` (:func:`cmd_bitmap_overhead`).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``equimesh`` subcommands, as :func:`equimesh.cli.make_parser` makes them.
    """
    p = sub.add_parser(
        "bitmap-overhead",
        help="the destination bitmap's share of a MultiWrite's payload and flits (seed 004 Section 6.4)",
    )
    p.add_argument("--nodes", type=int, default=1024, help="nodes the bitmap names (default 1024)")
    p.add_argument("--payloads", default="256,512,1024,2048,4096", help="payload sizes in bytes (default 256..4096)")
    p.add_argument("--flit-bits", type=count(1, 1 << 16), default=FLIT_BITS, help=f"flit width (default {FLIT_BITS})")
    p.add_argument("--json", action="store_true", help="machine-readable rows")
    p.set_defaults(func=cmd_bitmap_overhead)
