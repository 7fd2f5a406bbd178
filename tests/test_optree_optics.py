"""Seed 002's optics (Eqs. 4-9), its torus extension and radices that do not divide N."""

import math

import pytest

from equimesh.cli import main
from equimesh.schedules import optree as ot
from equimesh.schedules import optree_optics as op


def test_eq4_by_hand_and_against_the_built_tree():
    # N = 64, k = 3: m = 4, L_max = 1 + (4 - 1) * 64^(2/3) = 1 + 3 * 16 = 49 nodes (node 1 of G_1 to node 1 of G_4)
    assert op.l_max(64, 3) == pytest.approx(49.0)
    # the built tree (radices 4, 4, 4) sends stage 1 over the shorter fiber: positions 16, 32, 48 apart,
    # so at most 32 hops = 33 nodes, fewer than Eq. 4's one-way path
    sched = ot.build(64, 8, (4, 4, 4))
    assert op.built_path_nodes(sched) == 33


def test_eq5_eq6_eq7_eq8_by_hand():
    assert op.insertion_loss(49, 1.0, 0.01) == pytest.approx(1.49)
    assert op.power_ok(1.49, 10.0, 3.0) and not op.power_ok(1.49, 4.0, 3.0)
    assert op.crosstalk_power(49, 1e-5, 1e-4) == pytest.approx(49e-5 + 1e-4)
    assert op.snr_db(1.0, 0.0009, 0.0001) == pytest.approx(30.0)


def test_eq9_and_the_printed_ber_limit():
    # BER = 1/2 exp(-SNR/4) = 1e-9 at SNR = 4 ln(5e8) = 80.12 (dB value as printed, or linear ratio)
    snr = 4 * math.log(5e8)
    assert op.ber(snr, snr_in_db=True) == pytest.approx(op.BER_LIMIT)
    assert op.ber(10 * math.log10(snr)) == pytest.approx(op.BER_LIMIT)
    assert op.BER_LIMIT == 1e-9


def test_torus_extension_by_hand():
    # 16 x 16 torus, w = 4, k = 2: Theorem 1 per ring ceil(3 * 16^1.5 / 32) = 6, rows then columns = 12 steps;
    # column items are 16 d: time 6 d/B + 6 * 16 d/B = 102 d/B
    t = op.torus_steps(16, 4, 2)
    assert (t["row_steps"], t["theorem1_total"], t["time_in_d_over_B"]) == (6, 12, 102)


def test_radices_that_divide_are_built_and_others_refused():
    op.check_radices(12, (3, 4))
    ot.verify(ot.build(12, 4, (3, 4)))
    with pytest.raises(ot.OpTreeError, match="children of 4 and a last one of 2"):
        op.check_radices(10, (3, 4))
    with pytest.raises(ot.OpTreeError, match="radix must be >= 2"):
        op.check_radices(10, (1, 10))


@pytest.mark.parametrize(
    "argv,text",
    [
        (["optree", "--nodes", "10", "--wavelengths", "4", "--radices", "1,10"], "every radix must be >= 2"),
        (["optree", "--nodes", "10", "--wavelengths", "0"], "--wavelengths must be >= 1 (got 0)"),
        (["optree", "--nodes", "10", "--wavelengths", "4", "--radices", "3,4"], "radix 3 does not divide"),
        (["optree", "--nodes", "10", "--wavelengths", "4", "--radices", "a"], "--radices must be comma-separated"),
        (
            [
                "optree",
                "--nodes",
                "8",
                "--wavelengths",
                "4",
                "--p-signal",
                "0",
                "--p-rx",
                "1",
                "--p-tx",
                "1",
                "--p-other",
                "1",
            ],
            "P_S must be > 0",
        ),
        (["optree", "--nodes", "8", "--wavelengths", "4", "--p-mod", "-1", "--p-pass", "1"], "must be >= 0 dB"),
    ],
)
def test_out_of_domain_parameters_one_line(capsys, argv, text):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("equimesh: ") and err.count("\n") == 1 and text in err, err
