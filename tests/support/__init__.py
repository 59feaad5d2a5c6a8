"""Helpers the tests share, as plain modules (a test never imports a conftest)."""
