-- Answers to fallback approval requests (ADR-23, ADR-30). `sco fallback approve|deny` inserts a signed
-- decision (its role may insert here and read the requests, nothing else); the controller's arbiter verifies
-- and judges it and writes the verdict, and on acceptance the request's state and granted amount. Idempotent.
ALTER TABLE approval_requests ADD COLUMN IF NOT EXISTS raised_by text;
ALTER TABLE approval_requests ADD COLUMN IF NOT EXISTS decided_by text;
ALTER TABLE approval_requests DROP CONSTRAINT IF EXISTS approval_requests_state_check;
ALTER TABLE approval_requests ADD CONSTRAINT approval_requests_state_check
    CHECK (state IN ('pending', 'granted', 'denied', 'expired'));

CREATE TABLE IF NOT EXISTS approval_decisions (
    decision_id      uuid PRIMARY KEY,
    request_id       uuid NOT NULL REFERENCES approval_requests (request_id),
    approver         text NOT NULL,
    decision         text NOT NULL CHECK (decision IN ('grant', 'deny')),
    amount_eur       numeric(18, 6) NOT NULL DEFAULT 0 CHECK (amount_eur >= 0),
    signed           jsonb NOT NULL,                 -- contracts.approvals.SignedDecision
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    verdict_code     text,                           -- APR000 accepted, APR001..APR008 refused; NULL: not judged
    verdict_message  text,
    judged_at        timestamptz
);
CREATE INDEX IF NOT EXISTS approval_decisions_unjudged ON approval_decisions (request_id) WHERE verdict_code IS NULL;
