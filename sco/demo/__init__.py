"""The demo of the whole system (issue 10): ``sco demo`` / ``make demo``."""

__all__: list[str] = []
