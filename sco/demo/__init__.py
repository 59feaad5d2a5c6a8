"""The demo of the whole system: ``sco demo`` / ``make demo``."""

__all__: list[str] = []
