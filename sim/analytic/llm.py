"""End-to-end LLM training time on the 8x8 network (seed 000, Section V-C, Table I, Fig. 9).

Seed 000 trains GPT-NeoX-20B, OPT-30B, Qwen3-32B and Llama-3-70B with SP + TP over all
nodes of the 8x8 array (Table I: a 512x512 32-bit MAC array at 1 GHz per node; links of
128 GB/s and 20 ns per hop) and reports forward and backward speedups of EquiMesh + XTree
over the mesh algorithms. The paper gives neither the sequence length nor the micro-batch,
nor its overlap of computation and communication; this model states its own choices:

* **Parallelism.** Megatron-LM tensor parallelism with sequence parallelism (Shoeybi et al.
  2020; Korthikanti et al. 2022) over all ``N`` nodes: each layer has an attention block
  and an MLP block; each block starts with an AllGather of the sequence-sharded
  activations (``T h`` elements, ``T = s b`` tokens; each node contributes ``T h / N``)
  and ends with a ReduceScatter of the block's output (each node reduces ``T h``
  elements). There is no AllReduce: SP turns TP's AllReduce into this pair.
* **Computation.** Only the GEMMs, at the MAC array's peak (2 flops per MAC), divided
  evenly over the nodes (heads and KV heads are not rounded to whole nodes):
  QKV ``2 T h (q + 2 kv)``, scores and weighted sum ``2 * 2 b s^2 q``, output projection
  ``2 T q h``, MLP ``2 T h f`` times 2 (plain) or 3 (gated), with ``q`` = heads x head_dim
  and ``kv`` = KV heads x head_dim. Elementwise work, norms and softmax are left out.
* **Forward block** = AllGather + GEMMs + ReduceScatter, in sequence (each needs the
  previous one's data).
* **Backward block** (Megatron-SP's schedule): the AllGather of the output gradient
  (blocking), then the input-gradient GEMMs overlapped with the re-gather of the block's
  input (SP does not keep the gathered input), then the weight-gradient GEMMs overlapped
  with the ReduceScatter of the input gradient:
  ``t_AG + max(dgrad, t_AG) + max(wgrad, t_RS)``, with dgrad = the linear layers'
  forward flops + twice the attention core's, wgrad = the linear layers' forward flops.
* **Collectives** are the alpha-beta simulator's times (:mod:`.alphabeta`) of the actual
  schedules (synthesized and verified by :func:`.evaluate.run_curve`), each algorithm at
  its best chunk count for each message size.
* 32-bit elements (Table I's MAC width).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...schedules.jsonfile import JsonFileError, read_json
from ...schedules.topology import build
from .alphabeta import LinkModel
from .evaluate import ALGORITHMS, run_curve

__all__ = [
    "CLOCK_HZ",
    "DEFAULT_MICRO_BATCH",
    "DEFAULT_SEQ_LEN",
    "ELEMENT_BYTES",
    "FIELDS",
    "LayerWork",
    "MAC_COLS",
    "MAC_ROWS",
    "MLP_GEMMS",
    "MODELS_FILE",
    "ModelFileError",
    "ModelShape",
    "PEAK_FLOPS",
    "PROPOSED",
    "collective_times",
    "evaluate_models",
    "geomean",
    "layer_work",
    "load_models",
    "mesh_baselines",
    "pass_times",
    "plot_fig9",
]

MODELS_FILE = Path(__file__).with_name("data") / "llm_models.json"
FIELDS = {
    "name": str,
    "layers": int,
    "hidden": int,
    "heads": int,
    "kv_heads": int,
    "head_dim": int,
    "ffn": int,
    "mlp": str,
    "source": str,
}
MLP_GEMMS = {"plain": 2, "gated": 3}
# seed 000, Table I
MAC_ROWS = MAC_COLS = 512
CLOCK_HZ = 1e9
PEAK_FLOPS = 2 * MAC_ROWS * MAC_COLS * CLOCK_HZ
ELEMENT_BYTES = 4
DEFAULT_SEQ_LEN = 2048  # the training context of GPT-NeoX-20B and OPT-30B
DEFAULT_MICRO_BATCH = 1
PROPOSED = "equimesh-xtree"


class ModelFileError(ValueError):
    """A model data file that is missing, unreadable or lacks a field; the message is one line."""


@dataclass(frozen=True)
class ModelShape:
    """A transformer's shape, one entry of the model file (seed 000 Section V-C trains GPT-NeoX-20B, OPT-30B,
    Qwen3-32B and Llama-3-70B).

    Attributes
    ----------
    name : str
        The model's name.
    layers : int
        Transformer layers.
    hidden : int
        Hidden size h.
    heads, kv_heads : int
        Attention heads and key/value heads (grouped-query attention when fewer).
    head_dim : int
        Dimension per head.
    ffn : int
        The MLP's inner size f.
    mlp : str
        ``"plain"`` (2 GEMMs) or ``"gated"`` (3 GEMMs), a key of :data:`MLP_GEMMS`.
    source : str
        Where the shape comes from (its model card or configuration).
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    mlp: str
    source: str


def load_models(path: str | Path = MODELS_FILE) -> list[ModelShape]:
    """The model shapes of a data file like ``sim/analytic/data/llm_models.json``; every problem is one line.

    Parameters
    ----------
    path : str or pathlib.Path
        The JSON file (default :data:`MODELS_FILE`, the four models of Fig. 9).

    Returns
    -------
    list of ModelShape
        The models in file order.

    Raises
    ------
    ModelFileError
        If the file is missing, unreadable, or a model lacks a field or has a bad value.
    """
    p = Path(path)
    try:
        d = read_json(p)
    except JsonFileError as e:
        raise ModelFileError(str(e)) from None
    if not isinstance(d, dict) or not isinstance(d.get("models"), list) or not d["models"]:
        raise ModelFileError(f"{p}: needs a non-empty list 'models'")
    out = []
    for i, m in enumerate(d["models"]):
        if not isinstance(m, dict):
            raise ModelFileError(f"{p}: model {i} is not an object")
        label = m.get("name", f"model {i}")
        for f, typ in FIELDS.items():
            if f not in m:
                raise ModelFileError(f"{p}: {label}: missing field {f!r}")
            v = m[f]
            if typ is int and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise ModelFileError(f"{p}: {label}: field {f!r} must be an integer >= 1 (got {v!r})")
            if typ is str and not isinstance(v, str):
                raise ModelFileError(f"{p}: {label}: field {f!r} must be a string")
        if m["mlp"] not in MLP_GEMMS:
            raise ModelFileError(f"{p}: {label}: field 'mlp' must be one of {', '.join(MLP_GEMMS)} (got {m['mlp']!r})")
        out.append(ModelShape(**{f: m[f] for f in FIELDS}))
    return out


@dataclass(frozen=True)
class LayerWork:
    """Per node and per layer: flops of each block and the collective message sizes (bytes).

    Attributes
    ----------
    attn_linear : float
        Flops of the attention block's linear layers (QKV and output projection).
    attn_core : float
        Flops of the attention core (scores and weighted sum).
    mlp_linear : float
        Flops of the MLP's GEMMs.
    ag_bytes : float
        The AllGather's bytes each node contributes (``T h / N`` elements).
    rs_bytes : float
        The ReduceScatter's bytes of the vector each node reduces (``T h`` elements).
    """

    attn_linear: float
    attn_core: float
    mlp_linear: float
    ag_bytes: float  # AllGather: bytes each node contributes
    rs_bytes: float  # ReduceScatter: bytes of the vector each node reduces


def layer_work(m: ModelShape, seq_len: int, micro_batch: int, nodes: int) -> LayerWork:
    """The per-node GEMM flops and collective message sizes of one layer under SP + TP over all nodes (the
    module docstring gives the formulas).

    Parameters
    ----------
    m : ModelShape
        The model.
    seq_len : int
        Sequence length s.
    micro_batch : int
        Micro-batch size b (``T = s b`` tokens).
    nodes : int
        N, the nodes the layer is split over.

    Returns
    -------
    LayerWork
        Flops per node and the message sizes in bytes.
    """
    t = seq_len * micro_batch
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    attn_linear = 2 * t * m.hidden * (q + 2 * kv) + 2 * t * q * m.hidden
    attn_core = 2 * 2 * micro_batch * seq_len**2 * q
    mlp_linear = 2 * t * m.hidden * m.ffn * MLP_GEMMS[m.mlp]
    act = t * m.hidden * ELEMENT_BYTES
    return LayerWork(attn_linear / nodes, attn_core / nodes, mlp_linear / nodes, act / nodes, act)


def pass_times(w: LayerWork, t_ag: float, t_rs: float, layers: int, mfu: float = 1.0, overlap: float = 0.0) -> dict:
    """Forward and backward seconds of ``layers`` layers (see the module docstring for the overlap).

    ``mfu``: the achieved fraction of Table I's peak MAC rate (1 = the peak, this model's default);
    ``overlap``: the fraction of a forward block's collectives that may run under its GEMMs
    (0 = none, this model's default; the paper states neither).

    Parameters
    ----------
    w : LayerWork
        One layer's work per node.
    t_ag, t_rs : float
        Seconds of the layer's AllGather and ReduceScatter.
    layers : int
        The model's layers.
    mfu : float
        Achieved fraction of the peak MAC rate, in (0, 1].
    overlap : float
        Fraction of a forward block's collectives hidden under its GEMMs, in [0, 1].

    Returns
    -------
    dict
        ``forward_s``, ``backward_s``, and the forward pass's ``forward_compute_s`` and ``forward_comm_s``.
    """
    blocks = [(w.attn_linear, w.attn_core), (w.mlp_linear, 0.0)]
    fwd = bwd = comp_f = comm_f = 0.0
    rate = PEAK_FLOPS * mfu
    for linear, core in blocks:
        gemm = (linear + core) / rate
        comm = t_ag + t_rs
        fwd += max(gemm, overlap * comm) + (1 - overlap) * comm
        comp_f += gemm
        comm_f += comm
        dgrad, wgrad = (linear + 2 * core) / rate, linear / rate
        bwd += t_ag + max(dgrad, t_ag) + max(wgrad, t_rs)
    return {
        "forward_s": layers * fwd,
        "backward_s": layers * bwd,
        "forward_compute_s": layers * comp_f,
        "forward_comm_s": layers * comm_f,
    }


def collective_times(
    algorithms: list[str], rows: int, cols: int, ag_sizes, rs_sizes, model: LinkModel = LinkModel(), log=lambda s: None
) -> dict:
    """``{algorithm: {"allgather": {bytes: s}, "reducescatter": {bytes: s}}}`` from the alpha-beta simulator.

    Each algorithm runs its actual schedule on its topology (:func:`.evaluate.run_curve`), at its best
    chunk count per message size.

    Parameters
    ----------
    algorithms : list of str
        Names in :data:`.evaluate.ALGORITHMS`.
    rows, cols : int
        The array's size.
    ag_sizes, rs_sizes : iterable of float
        Message sizes in bytes per node for the AllGather and the ReduceScatter.
    model : LinkModel
        The alpha-beta link model (default Table I's).
    log : callable
        ``log(line)`` before each curve.

    Returns
    -------
    dict
        ``{algorithm: {"allgather": {bytes: seconds}, "reducescatter": {bytes: seconds}}}``.
    """
    out = {}
    for name in algorithms:
        algo = ALGORITHMS[name]
        topo = build(algo.kind, rows, cols)
        out[name] = {}
        for coll, sizes in (("allgather", ag_sizes), ("reducescatter", rs_sizes)):
            log(f"{name} {coll} on {topo.name}")
            sizes = np.array(sorted(set(sizes)), dtype=np.float64)
            c = run_curve(algo, topo, coll, sizes, algo.chunk_counts, model)
            out[name][coll] = dict(zip(sizes.tolist(), c.completion.tolist()))
    return out


def mesh_baselines() -> list[str]:
    """Every Section V-A mesh baseline that schedules AllGather and ReduceScatter (SP + TP use no AllReduce).

    Returns
    -------
    list of str
        Their names in :data:`.evaluate.ALGORITHMS`.
    """
    return [n for n, a in ALGORITHMS.items() if a.role == "baseline" and "allgather" in a.collectives]


def evaluate_models(
    models: list[ModelShape],
    rows: int = 8,
    cols: int = 8,
    seq_lens=(DEFAULT_SEQ_LEN,),
    micro_batches=(DEFAULT_MICRO_BATCH,),
    model: LinkModel = LinkModel(),
    log=lambda s: None,
    mfu: float = 1.0,
    overlap: float = 0.0,
) -> list[dict]:
    """One row per model, sequence length and micro-batch: times of every algorithm and the speedups.

    ``forward_speedup`` / ``backward_speedup``: the best (fastest) mesh baseline's time over
    EquiMesh + XTree's.

    Parameters
    ----------
    models : list of ModelShape
        The models to time.
    rows, cols : int
        The array's size (default 8x8, seed 000's).
    seq_lens, micro_batches : iterable of int
        Sequence lengths and micro-batch sizes; every combination is a row.
    model : LinkModel
        The alpha-beta link model (default Table I's).
    log : callable
        ``log(line)`` for progress.
    mfu : float
        Achieved fraction of the peak MAC rate, in (0, 1].
    overlap : float
        Fraction of a forward block's collectives hidden under its GEMMs, in [0, 1].

    Returns
    -------
    list of dict
        Per row: the model, its sizes, the message bytes, both speedups and best baselines, the forward
        communication share per algorithm, and ``algorithms``: :func:`pass_times` and the collective times
        per algorithm.
    """
    nodes = rows * cols
    algos = [PROPOSED] + mesh_baselines()
    cases = [(m, s, b, layer_work(m, s, b, nodes)) for m in models for s in seq_lens for b in micro_batches]
    times = collective_times(
        algos, rows, cols, [w.ag_bytes for *_, w in cases], [w.rs_bytes for *_, w in cases], model, log
    )
    rows_out = []
    for m, s, b, w in cases:
        per = {
            a: pass_times(
                w, times[a]["allgather"][w.ag_bytes], times[a]["reducescatter"][w.rs_bytes], m.layers, mfu, overlap
            )
            | {
                "allgather_s": times[a]["allgather"][w.ag_bytes],
                "reducescatter_s": times[a]["reducescatter"][w.rs_bytes],
            }
            for a in algos
        }
        base = [a for a in algos if a != PROPOSED]
        best_f = min(base, key=lambda a: per[a]["forward_s"])
        best_b = min(base, key=lambda a: per[a]["backward_s"])
        rows_out.append(
            {
                "name": m.name,
                "seq_len": s,
                "micro_batch": b,
                "layers": m.layers,
                "allgather_bytes_per_node": w.ag_bytes,
                "reducescatter_bytes_per_node": w.rs_bytes,
                "forward_speedup": per[best_f]["forward_s"] / per[PROPOSED]["forward_s"],
                "backward_speedup": per[best_b]["backward_s"] / per[PROPOSED]["backward_s"],
                "best_baseline_forward": best_f,
                "best_baseline_backward": best_b,
                "comm_share_forward": {a: per[a]["forward_comm_s"] / per[a]["forward_s"] for a in algos},
                "algorithms": per,
            }
        )
    return rows_out


def geomean(values) -> float:
    """The geometric mean (``equimesh llm`` averages the speedups over the models with it).

    Parameters
    ----------
    values : iterable of float
        Positive values.

    Returns
    -------
    float
        ``exp(mean(log(values)))``.
    """
    return float(np.exp(np.mean(np.log(np.asarray(values, dtype=np.float64)))))


def plot_fig9(results: list[dict], path: str, title: str) -> None:
    """Fig. 9: per model, each algorithm's forward and backward performance, normalized to the best mesh baseline.

    Parameters
    ----------
    results : list of dict
        Rows of :func:`evaluate_models`.
    path : str
        The PNG to write.
    title : str
        The figure's title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .evaluate import STYLE

    algos = list(results[0]["algorithms"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), dpi=100, sharey=True)
    width = 0.8 / len(algos)
    for ax, pass_, key in zip(axes, ("forward", "backward"), ("best_baseline_forward", "best_baseline_backward")):
        x = np.arange(len(results))
        for i, a in enumerate(algos):
            perf = [r["algorithms"][r[key]][f"{pass_}_s"] / r["algorithms"][a][f"{pass_}_s"] for r in results]
            ax.bar(x + (i - (len(algos) - 1) / 2) * width, perf, width, label=a, color=STYLE.get(a, (None,))[0])
            if a == PROPOSED:
                for xi, v in zip(x, perf):
                    ax.text(xi + (i - (len(algos) - 1) / 2) * width, v + 0.02, f"{v:.2f}", ha="center", fontsize=7)
        ax.set_xticks(x, [r["name"] for r in results], fontsize=8)
        ax.set_title(f"LLM {pass_} performance", fontsize=10)
        ax.axhline(1.0, color="0.4", lw=0.8, ls="--")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("performance / best mesh baseline")
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
