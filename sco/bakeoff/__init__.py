"""The placement bake-off: one seed × strategy replayed through the production controller (``month``), and the
``sco bakeoff`` command that runs one (for a Dagster partition's pod) or prints the comparison the dbt model holds."""
