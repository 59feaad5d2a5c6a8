"""A fitted binary ``HistGradientBoostingClassifier``'s P(class 1), every tree walked at once with numpy.

Why: scikit-learn 1.9.1's ``predict_proba`` calls its Cython ``TreePredictor.predict`` once per tree, about 20 µs of
overhead each; on a region's ~231 rows a horizon's 100 trees cost ~4 ms, almost all of it that overhead, and the
replay forecasts every five replayed minutes of a month. Here a model's trees are flattened once into one set of
node arrays, and every (tree, row) lane steps one level down per numpy operation until all stand on a leaf.

The floats are scikit-learn's, bit for bit: the same decisions as ``_predictor.pyx`` (NaN goes by
``missing_go_to_left``, else ``x <= num_threshold`` goes left), the leaf values added to the baseline one tree at a
time in iteration order in float64, as ``_raw_predict`` and ``_predict_iterations`` add them, and the model's own
``_loss.predict_proba`` for the link. A model the walk does not cover (categorical features, more than one tree an
iteration, not a ``HistGradientBoostingClassifier``) and an input it does not take (not a non-empty float64 matrix
of the fitted width) go to the model's ``predict_proba``. ``tests/orchestration/forecast/test_forest.py`` compares
the two with ``np.array_equal``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Forest", "compile_forest"]


@dataclass(frozen=True)
class _Nodes:
    """Every tree's nodes, concatenated in iteration order (a node's index: its tree's start plus its own)."""

    feature: np.ndarray      # the feature a node splits on (0 on a leaf, read and never decisive)
    threshold: np.ndarray    # ``num_threshold``: x <= it goes left
    missing_left: np.ndarray  # where NaN goes
    child: np.ndarray        # child[2 i + goes_left]: node i's right then left child; a leaf's both are itself
    value: np.ndarray        # a leaf's value
    roots: np.ndarray        # the trees' roots, deepest tree first
    order: np.ndarray        # order[j]: the iteration of the j-th tree walked
    active: tuple[int, ...]  # per level: how many trees (the deepest, first) have a node below it


class Forest:
    """One model's trees, compiled: ``predict_proba1(x)`` is ``model.predict_proba(x)[:, 1]``, faster."""

    def __init__(self, model: Any, nodes: _Nodes | None) -> None:
        self.model = model
        self._nodes = nodes

    @property
    def vectorised(self) -> bool:
        """Whether the numpy walk serves this model (otherwise its own ``predict_proba`` does)."""
        return self._nodes is not None

    def predict_proba1(self, x: np.ndarray) -> np.ndarray:
        """P(class 1) per row of ``x``, the floats ``model.predict_proba(x)[:, 1]`` returns."""
        nodes, model = self._nodes, self.model
        if (nodes is None or not isinstance(x, np.ndarray) or x.dtype != np.float64 or x.ndim != 2 or not len(x)
                or x.shape[1] != model.n_features_in_):
            return np.asarray(model.predict_proba(x)[:, 1])   # scikit-learn's own conversions and errors
        leaves = _walk(nodes, x)
        # as _raw_predict: zeros plus the baseline, then one float64 addition per tree in iteration order
        raw = np.zeros((len(x), 1), dtype=model._baseline_prediction.dtype, order="F")
        raw += model._baseline_prediction
        column = raw[:, 0]
        for values in leaves:
            column += values
        return np.asarray(model._loss.predict_proba(raw)[:, 1])


def compile_forest(model: Any) -> Forest:
    """``model`` (a fitted ``HistGradientBoostingClassifier``) compiled once for ``Forest.predict_proba1``."""
    return Forest(model, _flatten(model._predictors) if _covered(model) else None)


def _covered(model: Any) -> bool:
    """Whether the walk gives ``model``'s floats: a fitted binary classifier of numeric splits only."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    predictors: Any = getattr(model, "_predictors", None)
    return (type(model) is HistGradientBoostingClassifier and bool(predictors)
            and getattr(model, "_preprocessor", None) is None   # categorical features are encoded and reordered
            and model.n_trees_per_iteration_ == 1
            and all(len(trees) == 1 and not trees[0].nodes["is_categorical"].any() for trees in predictors))


def _flatten(predictors: list[list[Any]]) -> _Nodes:
    trees = [iteration[0].nodes for iteration in predictors]
    sizes = np.array([len(t) for t in trees], dtype=np.intp)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)
    nodes = np.concatenate(trees)
    leaf = nodes["is_leaf"].astype(bool)
    here = np.arange(len(nodes), dtype=np.intp)
    shift = np.repeat(starts, sizes)   # a tree's children are numbered within it
    left = np.where(leaf, here, nodes["left"].astype(np.intp) + shift)
    right = np.where(leaf, here, nodes["right"].astype(np.intp) + shift)
    # the deepest trees first: at each level the trees still walking are a prefix, a view and no copy
    depth = np.array([int(t["depth"].max()) for t in trees], dtype=np.intp)
    order = np.argsort(-depth, kind="stable")
    return _Nodes(feature=np.where(leaf, 0, nodes["feature_idx"]).astype(np.intp),
                  threshold=nodes["num_threshold"].astype(np.float64),
                  missing_left=nodes["missing_go_to_left"].astype(bool),
                  child=np.stack([right, left], axis=1).ravel(), value=nodes["value"].astype(np.float64),
                  roots=starts[order], order=order,
                  active=tuple(int((depth > level).sum()) for level in range(int(depth.max()))))


def _walk(nodes: _Nodes, x: np.ndarray) -> np.ndarray:
    """The leaf value each tree gives each row, shape (trees in iteration order, rows)."""
    n, width = x.shape
    flat = np.ascontiguousarray(x).ravel()
    row_start = np.arange(n, dtype=np.intp) * width
    at = np.repeat(nodes.roots[:, None], n, axis=1)   # (tree, row): the node the lane stands on
    nan = bool(np.isnan(flat).any())   # once a call: a level's NaN test only when some value is missing
    for active in nodes.active:
        lanes = at[:active]
        v = flat.take(row_start + nodes.feature.take(lanes))
        goes_left = v <= nodes.threshold.take(lanes)   # False for NaN, which goes by missing_go_to_left
        if nan:
            goes_left |= np.isnan(v) & nodes.missing_left.take(lanes)
        lanes[...] = nodes.child.take(2 * lanes + goes_left)
    leaves = np.empty(at.shape, dtype=np.float64)
    leaves[nodes.order] = nodes.value.take(at)
    return leaves
