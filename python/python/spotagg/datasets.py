"""Data shipped in the package, so that the examples download nothing.

``data/digits.csv.gz`` is scikit-learn's copy of the UCI ML hand-written digits data set
(1797 images of 8x8 pixels, values 0..16, and their labels), copied unchanged from
scikit-learn 1.9.1 (``sklearn/datasets/data/digits.csv.gz``, BSD-3-Clause; the data set is by
E. Alpaydin and C. Kaynak, UCI Machine Learning Repository). Each line: 64 pixel values then
the label.
"""

import gzip
from importlib import resources

import numpy as np


def load_digits():
    """Returns ``(images, labels)``: float32 array (1797, 64) of pixel values 0..16 and an
    int64 array (1797,) of digits 0..9, the same as ``sklearn.datasets.load_digits()``'s
    ``data`` and ``target``."""
    with resources.files(__package__).joinpath("data/digits.csv.gz").open("rb") as raw:
        with gzip.open(raw, "rt") as f:
            table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    if table.shape != (1797, 65):
        raise ValueError(f"spotagg/data/digits.csv.gz: expected 1797 rows of 65 values, got {table.shape}")
    return table[:, :64], table[:, 64].astype(np.int64)
