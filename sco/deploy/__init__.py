"""What ``deploy/`` is generated from and what ``sco deploy`` writes: the Prometheus operator's objects from the
one rules file (``monitoring``), a region's whole install (``render``)."""
