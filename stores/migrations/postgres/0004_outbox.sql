-- The transactional outbox (ADR-25): a controller writes its state change and the event in one
-- transaction; the relay (`sco outbox relay`) publishes committed rows to JetStream with
-- Nats-Msg-Id = event_id and marks them sent. Capacity actions also go to the audit sink.
CREATE TABLE IF NOT EXISTS outbox (
    id              bigserial PRIMARY KEY,
    event_id        uuid NOT NULL UNIQUE,
    subject         text NOT NULL,
    payload         bytea NOT NULL,              -- the event as JSON (contracts.events.Event.to_json())
    action          text,                        -- launch | terminate | fallback | approval ...: audited
    actor           text,                        -- the identity that caused the action
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz,
    audited_at      timestamptz,
    attempts        integer NOT NULL DEFAULT 0,
    last_error      text
);
CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_unaudited ON outbox (id) WHERE action IS NOT NULL AND audited_at IS NULL;
