"""nguyen's real data (nguyen Fig. 2, §5.2; Fig. 3, §5.2; docs/nguyen.md, Experiments as run): LSAT rebuilt from its pattern counts, the UCI
student, Three Grades and MovieLens loaders with their binarisations, the stand-ins, the
NMF, and one-line UsageErrors for bad files."""

from __future__ import annotations

import numpy as np
import pytest

from dpsim.datasets import (
    ResponseData,
    load_three_grades,
    load_uci_student,
    lsat,
    movielens_responses,
    ratings_responses,
    three_grades,
    uci_student,
)
from dpsim.datasets.movielens import load_ratings
from dpsim.datasets.responses import LSAT_PATTERN_COUNTS, binarise_scores, nmf_multiplicative
from dpsim.errors import UsageError


def test_lsat_pattern_totals():
    """1000 × 5; per-item numbers correct 924, 709, 553, 763, 870 (the item totals of R
    ltm's ``LSAT``, an independent source); the cumulative pattern counts of docs/nguyen.md, Experiments as run."""
    d = lsat()
    assert isinstance(d, ResponseData) and d.x.shape == (1000, 5) and d.observed.all()
    assert list(d.x.sum(axis=0)) == [924, 709, 553, 763, 870]
    codes = d.x.astype(int) @ (2 ** np.arange(4, -1, -1))
    counts = np.bincount(codes, minlength=32)
    assert tuple(counts) == LSAT_PATTERN_COUNTS
    assert list(np.cumsum(counts)) == [
        3,
        9,
        11,
        22,
        23,
        24,
        27,
        31,
        32,
        40,
        40,
        56,
        56,
        59,
        61,
        76,
        86,
        115,
        129,
        210,
        213,
        241,
        256,
        336,
        352,
        408,
        429,
        602,
        613,
        674,
        702,
        1000,
    ]
    assert "LSAT" in d.source


ARFF = """% UCI Student Academic Performance (excerpt)
@relation Sapfile1
@attribute ge {M,F}
@attribute cst {G,ST,SC,OBC,MOBC}
@attribute tnp {Best,Vg,Good,Pass,Fail}
@attribute twp {Best,Vg,Good,Pass,Fail}
@attribute iap {Best,Vg,Good,Pass,Fail}
@attribute esp {Best,Vg,Good,Pass,Fail}
@attribute arr {Y,N}
@data
F,G,Good,Good,Vg,Good,Y
M,OBC,Vg,Vg,Vg,Vg,N
F,ST,Best,Pass,Fail,?,Y
"""


def test_uci_loader_binarises_best_and_vg(tmp_path):
    path = tmp_path / "Sapfile1.arff"
    path.write_text(ARFF)
    d = load_uci_student(path)
    assert d.items == ("tnp", "twp", "iap", "esp") and d.source == str(path)
    np.testing.assert_array_equal(d.x, [[0, 0, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]])
    np.testing.assert_array_equal(d.observed, [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0]])
    assert uci_student(path).x.shape == (3, 4)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a,b,c\n1,2,3\n", "is not an ARFF file"),
        (ARFF.replace("@attribute iap", "@attribute xyz"), "no attribute 'iap'"),
        (ARFF.replace("Best,Pass", "Top,Pass"), "grade 'Top'"),
        (ARFF.replace("F,G,Good,Good,Vg,Good,Y", "F,G,Good"), "data row 1 has 3 fields"),
        (ARFF.split("@data")[0] + "@data\n", "holds no data rows"),
    ],
)
def test_uci_loader_refuses_wrong_layout(tmp_path, text, message):
    path = tmp_path / "bad.arff"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_uci_student(path)


POR = """"school";"sex";"age";"G1";"G2";"G3"
"GP";"F";18;0;11;11
"GP";"F";17;9;11;11
"GP";"F";15;12;13;12
"GP";"F";15;14;14;14
"GP";"F";16;11;13;13
"""


def test_three_grades_loader_splits_at_the_median(tmp_path):
    """Per item, > median → 1 (medians 11, 13, 12 here); the first rows of the authors'
    notebook read the same way (nguyen Fig. 2, §5.2)."""
    path = tmp_path / "student-por.csv"
    path.write_text(POR)
    d = load_three_grades(path)
    assert d.items == ("G1", "G2", "G3")
    np.testing.assert_array_equal(d.x, [[0, 0, 0], [0, 0, 0], [1, 0, 0], [1, 1, 1], [0, 0, 1]])
    comma = tmp_path / "comma.csv"
    comma.write_text(POR.replace(";", ","))
    np.testing.assert_array_equal(load_three_grades(comma).x, d.x)


@pytest.mark.parametrize(
    "text, message",
    [
        ('"school";"G1";"G2"\n"GP";1;2\n', "no column 'G3'"),
        ('"G1";"G2";"G3"\n', "holds no students"),
        ('"G1";"G2";"G3"\n1;x;3\n', "malformed row"),
        ('"G1";"G2";"G3"\n1;25;3\n', "integers in 0–20"),
        ("", "is empty"),
    ],
)
def test_three_grades_loader_refuses_wrong_layout(tmp_path, text, message):
    path = tmp_path / "student-por.csv"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        load_three_grades(path)


@pytest.mark.parametrize("loader", [load_uci_student, load_three_grades])
def test_missing_and_binary_files(tmp_path, loader):
    with pytest.raises(UsageError, match="cannot read"):
        loader(tmp_path / "nope")
    path = tmp_path / "bin"
    path.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(UsageError, match="not a text file"):
        loader(path)


def test_stand_ins_have_the_papers_shapes_and_say_so():
    for d, shape in ((uci_student(), (131, 4)), (three_grades(), (649, 3))):
        assert d.x.shape == shape and d.observed.all() and "stand-in" in d.source
        assert 0.1 < d.x.mean() < 0.9
    a, b = three_grades(seed=3), three_grades(seed=3)
    np.testing.assert_array_equal(a.x, b.x)


def test_nmf_recovers_a_low_rank_matrix_and_is_deterministic():
    rng = np.random.default_rng(0)
    V = rng.uniform(size=(40, 3)) @ rng.uniform(size=(3, 60))
    W, H = nmf_multiplicative(V, rank=3, max_iter=500, seed=1)
    assert np.all(W >= 0) and np.all(H >= 0)
    assert np.linalg.norm(W @ H - V) / np.linalg.norm(V) < 0.02
    W2, H2 = nmf_multiplicative(V, rank=3, max_iter=500, seed=1)
    np.testing.assert_array_equal(W, W2)
    with pytest.raises(ValueError):
        nmf_multiplicative(-V)


def test_binarise_scores_per_user_mean():
    scores = np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    np.testing.assert_array_equal(binarise_scores(scores), [[1, 1, 0], [1, 1, 1]])  # above mean → 0


def test_movielens_pipeline_on_a_file_and_the_stand_in(tmp_path):
    rng = np.random.default_rng(1)
    lines = ["userId,movieId,rating,timestamp"]
    for u in range(1, 31):
        for mv in range(1, 41):
            if rng.uniform() < 0.5:
                lines.append(f"{u},{mv},{rng.integers(1, 11) / 2},0")
    path = tmp_path / "ratings.csv"
    path.write_text("\n".join(lines) + "\n")
    d = ratings_responses(load_ratings(path), 10, rank=5)
    assert d.x.shape == (30, 10) and str(path) in d.source
    d2 = movielens_responses(10, path=path)
    assert d2.x.shape == (30, 10)
    stand = movielens_responses(25)
    assert stand.x.shape == (610, 25) and "stand-in" in stand.source
    np.testing.assert_array_equal(stand.x, movielens_responses(25).x)
    with pytest.raises(UsageError, match="n_items=500"):
        ratings_responses(load_ratings(path), 500)
    with pytest.raises(UsageError, match="cannot read MovieLens"):
        movielens_responses(10, path=tmp_path / "missing.csv")
