"""Whether a notice is plausible enough to act on (pure), and the bounds that keep a flood of them cheap.

The agent drains its node on a notice, so a notice is acted on only when it is

* **well formed**: the raw message is at most ``MAX_NOTICE_BYTES`` (the metadata document at most
  ``MAX_METADATA_BYTES``), its JSON nests no deeper than ``MAX_JSON_DEPTH`` (checked on the bytes, before
  ``json.loads`` could recurse) and it parses as the provider contract's ``Notice`` / ``Advisory``;
* **for this node**: its ``instance_id`` is this node's instance and its ``region``, when given, this node's;
* **within the provider contract's window** (ADR-05, hard notices only): both ``issued_at`` and
  ``terminate_at`` are given and ``issued_at + 0 s <= terminate_at <= issued_at + 2 × PROMISED_LEAD_S``. Both
  times are the provider's, so the check does not depend on the node's clock;
* **of a known cause**: one of ``KNOWN_CAUSES``.

Anything else gets a :class:`Refusal` with a stable ``reason`` (the label of
``sco_agent_notices_refused_total``) and a message naming the field, the value and what was expected. An
advisory's ``expected_at`` is a forecast, not a deadline: it has no window to check.

:class:`RefusalLog` lets the caller log each reason at most once a minute, and :class:`FloodBound` caps the
events recorded for notices that change nothing (a second notice while draining, an advisory only
recorded): the first ``MAX_RECORDED_NOTICES`` get an event each, later ones only a counter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..model import NodeIdentity
from .messages import Notice

__all__ = ["KNOWN_CAUSES", "MAX_JSON_DEPTH", "MAX_METADATA_BYTES", "MAX_NOTICE_BYTES", "MAX_RECORDED_NOTICES",
           "PROMISED_LEAD_S", "REASONS", "FloodBound", "Refusal", "RefusalLog", "check_notice", "check_raw",
           "json_depth"]

PROMISED_LEAD_S = 120.0  # the provider contract's notice lead (ADR-05; contracts.settings notice_s)
MAX_NOTICE_BYTES = 4096  # one notice on NATS; the provider's is ~250 bytes
MAX_METADATA_BYTES = 16384  # the metadata document: a notice and an advisory, with room to spare
MAX_JSON_DEPTH = 4  # a notice is one flat object; the metadata document nests object → list → object
MAX_RECORDED_NOTICES = 16  # events for notices that change nothing; later ones are only counted
LOG_EVERY_S = 60.0  # a refusal reason is logged at most once per this many seconds

# the causes a provider sets (controllers/simregion: reclaimed, hall-reclaim, drill; "reclaim" is the default)
KNOWN_CAUSES = frozenset({"reclaim", "reclaimed", "hall-reclaim", "drill"})

# every reason a notice can be refused for, the label values of sco_agent_notices_refused_total
REASONS = ("oversize", "too-deep", "malformed", "other-instance", "other-region", "no-window", "window-early",
           "window-late", "unknown-cause")

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)  # possessive; unterminated: to the end
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_OPEN = frozenset(b"[{")
_PAIR = re.compile(rb"\{\}|\[\]")


@dataclass(frozen=True)
class Refusal:
    """Why a notice is not acted on: a stable ``reason`` (one of ``REASONS``) and a message with the fix."""

    reason: str
    message: str


def json_depth(data: bytes, stop_above: int | None = None) -> int:
    """The deepest nesting of objects and arrays in ``data``, counted on the bytes (strings skipped).

    With ``stop_above``, counting stops as soon as the nesting exceeds it (the result is then ``stop_above + 1``).
    """
    opened = data.count(b"{") + data.count(b"[")
    if opened <= 1:  # the provider's notice: one flat object, nothing to scan
        return opened
    depth = deepest = 0
    for byte in _brackets(data):
        if byte in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
            if stop_above is not None and deepest > stop_above:
                break
        else:
            depth -= 1
    return deepest


def _brackets(data: bytes) -> bytes:
    return _STRING.sub(b"", data).translate(None, _NOT_BRACKET)


def _nests_within(data: bytes, max_depth: int) -> bool:
    """Whether ``data`` nests at most ``max_depth`` deep: innermost pairs removed ``max_depth`` times (C speed)."""
    if data.count(b"{") + data.count(b"[") <= 1:
        return True
    brackets = _brackets(data)
    for _ in range(max_depth):
        if not brackets:
            return True
        brackets = _PAIR.sub(b"", brackets)
    return not brackets or json_depth(data, max_depth) <= max_depth  # unbalanced but shallow: json refuses it


def check_raw(data: bytes, channel: str, limit: int = MAX_NOTICE_BYTES,
              max_depth: int = MAX_JSON_DEPTH) -> Refusal | None:
    """Refuse a raw message larger than ``limit`` bytes or nested deeper than ``max_depth``, before parsing."""
    if len(data) > limit:
        return Refusal("oversize", f"{channel} notice of {len(data)} bytes refused: at most {limit} bytes "
                                   "are accepted (a provider notice is one small JSON object)")
    if not _nests_within(data, max_depth):
        return Refusal("too-deep", f"{channel} notice nesting more than {max_depth} levels deep refused (a "
                                   "provider notice is one flat JSON object)")
    return None


def check_notice(notice: Notice, node: NodeIdentity, lead_s: float = PROMISED_LEAD_S) -> Refusal | None:
    """None when ``notice`` may be acted on by ``node``; else the first :class:`Refusal` that applies."""
    refusal = _refusal(notice, node, lead_s)
    if refusal is None:
        return None
    reason, detail = refusal
    return Refusal(reason, f"{notice.channel} {notice.kind} {_short(notice.notice_id)}: {detail}")


def _refusal(notice: Notice, node: NodeIdentity, lead_s: float) -> tuple[str, str] | None:
    """The reason and what is wrong (the message's tail, built only for a refusal), or None."""
    if notice.instance != node.instance:
        return "other-instance", f"instance_id {_short(notice.instance)} is not this node's {node.instance!r}"
    if notice.region is not None and notice.region != node.region:
        return "other-region", f"region {_short(notice.region)} is not this node's {node.region!r}"
    if notice.cause not in KNOWN_CAUSES:
        return "unknown-cause", f"cause {_short(notice.cause)} is not one of {sorted(KNOWN_CAUSES)}"
    if notice.kind != "notice":
        return None  # an advisory's expected_at is a forecast: no window
    if notice.issued_at is None or notice.terminate_at is None:
        return "no-window", "a hard notice needs both issued_at and terminate_at (the provider contract's Notice)"
    window = (notice.terminate_at - notice.issued_at).total_seconds()
    if window < 0:
        return "window-early", (f"terminate_at {notice.terminate_at.isoformat()} is before "
                                f"issued_at {notice.issued_at.isoformat()}")
    if window > 2 * lead_s:
        return "window-late", (f"terminate_at is {window:.0f} s after issued_at; the contract's lead is "
                               f"{lead_s:.0f} s, at most {2 * lead_s:.0f} s is plausible")
    return None


def _short(value: str) -> str:
    """A value from the message, quoted and cut to 80 characters: a refusal names it, it does not echo it."""
    return repr(value[:80]) + ("…" if len(value) > 80 else "")


class RefusalLog:
    """Log each refusal reason at most once per ``every_s`` seconds of the injected monotonic clock."""

    def __init__(self, every_s: float = LOG_EVERY_S) -> None:
        """Start with no reason logged."""
        self.every_s = every_s
        self._last: dict[str, float] = {}
        self.suppressed: dict[str, int] = {}

    def due(self, reason: str, now: float) -> bool:
        """True when ``reason`` was not logged in the last ``every_s`` seconds (and marks it logged)."""
        last = self._last.get(reason)
        if last is not None and now - last < self.every_s:
            self.suppressed[reason] = self.suppressed.get(reason, 0) + 1
            return False
        self._last[reason] = now
        return True


class FloodBound:
    """The first ``bound`` notices that change nothing get an event; later ones are only counted."""

    def __init__(self, bound: int = MAX_RECORDED_NOTICES) -> None:
        """Start with nothing recorded."""
        self.bound = bound
        self.recorded = 0

    def record(self) -> bool:
        """True while fewer than ``bound`` such notices were recorded (and counts this one)."""
        if self.recorded >= self.bound:
            return False
        self.recorded += 1
        return True
