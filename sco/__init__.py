"""SCO's composition root: the ``sco`` CLI, the embedded stack manager and the shared store clients."""

__all__: list[str] = []
