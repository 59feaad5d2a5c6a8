"""NATS: only the region's relay publishes notices; an agent's credential reaches only its own instance."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
import pytest

from contracts.subjects import agent_inbox_prefix, event_subject, notice_subject, user_inbox_prefix
from tests.support.wait import until

from .conftest import INSTANCE, OTHER, REGION, Probed, SecuredStack

pytestmark = pytest.mark.services
COMPONENTS = ("controller", "ingest", "relay", "region", "watcher")


def _own_inbox(stack: SecuredStack, url: str) -> str:
    """The reply inbox a credential may use: the agent's per instance, a component's per user."""
    if url == stack.agent_url:
        return agent_inbox_prefix(INSTANCE)
    return next(user_inbox_prefix(c) for c in COMPONENTS if stack.url(c, "nats") == url)


async def _client(url: str, errors: list[str], **options: Any) -> Any:
    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    return await nats.connect(url, error_cb=on_error, allow_reconnect=False, max_reconnect_attempts=0, **options)


async def _listen(url: str, subject: str, **options: Any) -> tuple[Any, list[bytes], list[str]]:
    errors: list[str] = []
    got: list[bytes] = []
    nc = await _client(url, errors, **options)

    async def on_msg(msg: Any) -> None:
        got.append(msg.data)

    await nc.subscribe(subject, cb=on_msg)
    await nc.flush(timeout=5)
    return nc, got, errors


async def _errors_in(errors: list[str]) -> None:
    """Wait until the server's -ERR has reached ``errors`` (60 s at most, then the caller's assert says what is
    missing): the client's error callback runs in a task of its own, which a busy machine may not have run by the
    time the flush's PONG is back."""
    await until(lambda: bool(errors))


async def _publish(url: str, subject: str, refused: bool = True, **options: Any) -> list[str]:
    errors: list[str] = []
    nc = await _client(url, errors, **options)
    try:
        await nc.publish(subject, b'{"spoofed": true}')
        await nc.flush(timeout=5)
        if refused:  # the server's -ERR arrives soon after the flush's PONG; its callback may run much later
            await _errors_in(errors)
    finally:
        await nc.close()
    return errors


def test_an_unauthenticated_publisher_of_a_notice_is_refused(probed: Probed) -> None:
    probed.refused("nats_anonymous_notice", "Authorization Violation")
    probed.refused("nats_guessed_relay_password", "Authorization Violation")
    assert probed.after == probed.before


def test_a_spoofed_notice_gets_a_permissions_violation_and_the_agent_sees_nothing_while_the_relays_arrives(
        secured_stack: SecuredStack) -> None:
    stack, subject = secured_stack, notice_subject(REGION, INSTANCE)

    async def scenario() -> tuple[list[bytes], dict[str, list[str]]]:
        agent, got, _ = await _listen(stack.agent_url, subject, inbox_prefix=agent_inbox_prefix(INSTANCE))
        try:
            refused = {who: await _publish(url, subject) for who, url in (
                ("controller", stack.url("controller", "nats")), ("ingest", stack.url("ingest", "nats")),
                ("watcher", stack.url("watcher", "nats")), ("the agent itself", stack.agent_url))}
            await asyncio.sleep(0.2)  # the window in which a spoofed notice would have reached the agent
            spoofed = list(got)
            assert await _publish(stack.url("region", "nats"), subject, refused=False) == []  # the real relay
            await until(lambda: len(got) > len(spoofed))  # a loaded machine delivers it late, not never
            return [*spoofed, b"--relay--", *got[len(spoofed):]], refused
        finally:
            await agent.close()

    got, refused = asyncio.run(scenario())
    for who, errors in refused.items():
        assert any(f'permissions violation for publish to "{subject}"' in e for e in errors), (who, errors)
    assert got == [b"--relay--", b'{"spoofed": true}'], got  # nothing before the relay's own notice


def test_an_agent_credential_cannot_read_another_instances_subjects(secured_stack: SecuredStack) -> None:
    stack = secured_stack

    async def scenario() -> tuple[list[bytes], list[str], list[str]]:
        agent, got, errors = await _listen(stack.agent_url, notice_subject(REGION, OTHER),
                                           inbox_prefix=agent_inbox_prefix(INSTANCE))
        try:
            await _publish(stack.url("region", "nats"), notice_subject(REGION, OTHER), refused=False)
            sniff, sniffed, sniff_errors = await _listen(stack.agent_url, "_INBOX.>")  # others' replies
            await _errors_in(sniff_errors)  # nats-py runs its error callback in a task of its own
            await sniff.close()
            await _errors_in(errors)  # the agent's own refusal too, however late its callback runs
            await asyncio.sleep(0.3)  # the window in which the other instance's notice would have reached it
            return list(got), errors, sniff_errors + sniffed  # type: ignore[operator]
        finally:
            await agent.close()

    got, errors, sniff = asyncio.run(scenario())
    assert got == []
    assert any(f'permissions violation for subscription to "{notice_subject(REGION, OTHER)}"' in e for e in errors)
    assert any('permissions violation for subscription to "_inbox.>"' in str(e).lower() for e in sniff), sniff


def test_no_component_but_the_administrator_may_delete_the_event_stream(
        secured_stack: SecuredStack, probed: Probed) -> None:
    stack = secured_stack

    refusal = 'permissions violation for publish to "$JS.API.STREAM.DELETE.SCO_EVENTS"'.lower()

    async def delete(url: str) -> list[str]:
        errors: list[str] = []
        nc = await _client(url, errors, inbox_prefix=_own_inbox(stack, url))
        try:
            await nc.jetstream(timeout=0.5).delete_stream("SCO_EVENTS")  # refused at once: -ERR, then no reply
            errors.append("deleted")
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            # the request's timeout is not the -ERR's callback: a busy machine may run that later, and a closed
            # client would never run it
            await until(lambda: any(refusal in e.lower() for e in errors))
        finally:
            await nc.close()
        return errors

    async def every() -> list[list[str]]:
        urls = [stack.url(c, "nats") for c in COMPONENTS]
        return list(await asyncio.gather(*(delete(url) for url in [*urls, stack.agent_url])))

    for errors in asyncio.run(every()):
        assert "deleted" not in errors
        assert any(refusal in e.lower() for e in errors), errors
    assert probed.after.stream == probed.before.stream  # the stream and its messages are still there


def test_an_agent_publishes_only_its_own_instances_agent_events(secured_stack: SecuredStack) -> None:
    stack = secured_stack
    own = event_subject(REGION, "drained", INSTANCE)
    forbidden = [event_subject(REGION, "drained", OTHER),     # another instance's drain
                 event_subject(REGION, "excluded"),           # a controller's kind, no instance
                 event_subject(REGION, "drained"),            # the instance-less form a relay may use
                 event_subject(REGION, "placed", INSTANCE)]   # a controller's kind on its own instance

    async def scenario() -> tuple[list[str], dict[str, list[str]]]:
        inbox = agent_inbox_prefix(INSTANCE)
        allowed = await _publish(stack.agent_url, own, refused=False, inbox_prefix=inbox)
        return allowed, {s: await _publish(stack.agent_url, s, inbox_prefix=inbox) for s in forbidden}

    allowed, refused = asyncio.run(scenario())
    assert allowed == []
    for subject, errors in refused.items():
        assert any(f'permissions violation for publish to "{subject}"' in e.lower() for e in errors), (subject, errors)


def test_no_component_can_read_another_components_replies(secured_stack: SecuredStack) -> None:
    stack = secured_stack

    async def scenario() -> dict[tuple[str, str], list[str]]:
        out: dict[tuple[str, str], list[str]] = {}
        for component in COMPONENTS:
            url = stack.url(component, "nats")
            for inbox in ("_INBOX.>", f"{user_inbox_prefix('ingest' if component != 'ingest' else 'relay')}.>",
                          f"{user_inbox_prefix(component)}.>"):
                nc, _, errors = await _listen(url, inbox, inbox_prefix=user_inbox_prefix(component))
                if inbox != f"{user_inbox_prefix(component)}.>":   # a refusal is expected: wait until it is here
                    await _errors_in(errors)
                await asyncio.sleep(0.05)
                await nc.close()
                out[(component, inbox)] = errors
        return out

    for (component, inbox), errors in asyncio.run(scenario()).items():
        refused = any("permissions violation for subscription" in e.lower() for e in errors)
        assert refused == (inbox != f"{user_inbox_prefix(component)}.>"), (component, inbox, errors)


def test_the_nats_configuration_holds_bcrypt_hashes_and_no_password(secured_stack: SecuredStack) -> None:
    import bcrypt

    conf = (secured_stack.home / "nats" / "nats.conf").read_text()
    doc = json.loads((secured_stack.home / "credentials.json").read_text())
    from sco.stack.credentials import NATS_ROUTE_USER

    # the route secret is not a client's: a cluster's routes present it (docs/stack.md); one server has no routes
    route = doc["nats"][NATS_ROUTE_USER]
    secrets = [*(v for k, v in doc["nats"].items() if k != NATS_ROUTE_USER), *doc["agents"].values()]
    assert secrets and not [s for s in [*secrets, route] if s in conf]
    hashes = [line.split('password: "', 1)[1].split('"', 1)[0] for line in conf.splitlines() if "password:" in line]
    assert len(hashes) == len(secrets)
    for secret in secrets:  # every credential still logs in: its hash is in the file
        assert any(bcrypt.checkpw(secret.encode(), h.encode()) for h in hashes), "a credential has no hash"
