"""The embedded stack manager behind ``sco up`` / ``sco down`` / ``sco status``."""

from .bootstrap import prepare
from .manager import STORES, ServiceStatus, down, status, up

__all__ = ["STORES", "ServiceStatus", "down", "prepare", "status", "up"]
