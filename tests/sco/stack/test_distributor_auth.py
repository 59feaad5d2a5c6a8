"""The distributor's authenticator on the stack's credentials: each minted agent is scoped to the partition its
mint named, else to its region; the controller is unscoped."""

from __future__ import annotations

import base64
from pathlib import Path

from sco.stack import credentials
from sco.stack.distributor_auth import stack_authenticator


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_an_agent_is_scoped_to_the_partition_its_mint_named_else_its_region(tmp_path: Path) -> None:
    creds = credentials.load_or_create(tmp_path)
    doc = credentials.Credentials(creds.postgres, creds.nats, creds.clickhouse,
                                  agents={"r1/i-1": "pw-1", "r1/i-2": "pw-2"}, region=creds.region,
                                  agent_partitions={"r1/i-1": "r1/slurm-hpc"})
    credentials.write_private(tmp_path / credentials.CREDENTIALS_FILE, doc.to_json())
    auth = stack_authenticator(tmp_path)
    one, two = auth.authenticate(_basic("agent.r1.i-1", "pw-1")), auth.authenticate(_basic("agent.r1.i-2", "pw-2"))
    assert one is not None and (one.role, one.scope) == ("agent", "r1/slurm-hpc")
    assert two is not None and (two.role, two.scope) == ("agent", "r1")
    controller = auth.authenticate(f"Bearer {creds.nats['controller']}")
    assert controller is not None and (controller.role, controller.scope) == ("controller", None)
