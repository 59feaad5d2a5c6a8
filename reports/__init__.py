"""Showback and fleet reports: self-contained HTML pages with inline SVG charts, built from the dbt marts."""

from .pages import fleet_page, showback_page

__all__ = ["fleet_page", "showback_page"]
