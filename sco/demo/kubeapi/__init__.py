"""A Kubernetes API server double speaking the real wire protocol (``server``): the test suite's and the demo's."""

from .server import ApiError, KubeApiDouble, RecordedRequest

__all__ = ["ApiError", "KubeApiDouble", "RecordedRequest"]
