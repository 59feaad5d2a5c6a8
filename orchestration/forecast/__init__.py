"""The reclaim forecast (ADR-07): per pool, the probability that an instance placed now is reclaimed within the
horizons the contracts care about, with notice and without; features on polars (``features``), a scikit-learn
model fitted on labelled history and versioned (``model``), scored against baselines on held-out days
(``evaluate``)."""
