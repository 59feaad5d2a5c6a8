"""What the tests and the benches share: real servers on free ports (PostgreSQL, NATS, the ClickHouse front end),
doubles (the ESPHome plug, a JSON HTTP server), the event soak's plan, run and reconciliation, the notice harness,
the ledger oracle and a few builders. Never imported by a source package; imports nothing from ``tests``."""
