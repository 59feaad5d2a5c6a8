"""``sco controller run --agent-nats-url stack --agent-credentials stack``: the real controller process launches
into the simulated region with the cloud-config and mints each launched instance's own NATS user in the stack
(``$SCO_HOME/credentials.json`` and the running nats-server); with ``--distributor-url`` it refreshes the agent
bundle its launches carry from the distributor, as the stack's controller."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from contracts.bundle import publish
from contracts.signing import KeyPair, generate_keypair, load_private_key
from controllers.providers.simulated import SimulatedProvider
from sco.stack import natsserver
from sco.stack.distributor_auth import stack_authenticator
from testkit.builders import PARTITION, base
from testkit.paths import REPO
from tests.agent.helpers import make_bundle, workload_entry, write_bundle_dir
from tests.contracts.helpers import compile_doc
from tests.controllers.controller.test_process_faults import region_url  # noqa: F401 (a fixture)
from tests.distributor.test_server import Running


def _signed(tmp: Path) -> tuple[tuple[Path, Path, Path], KeyPair]:
    """The partition's bundles published with a signing key the test keeps (to sign a newer agent bundle)."""
    signing, governance = generate_keypair(), generate_keypair()
    compiled = []
    for doc in [base("T3", workload="etl", partition=PARTITION, resources={"vcpu": 4, "memory_gib": 16})]:
        w, findings = compile_doc(doc)
        assert w is not None, findings
        compiled.append(w)
    publish(compiled, tmp / "bundles", load_private_key(signing.private_pem), datetime.now(UTC),
            load_private_key(governance.private_pem))
    (tmp / "signing.pub").write_bytes(signing.public_pem)
    (tmp / "governance.pub").write_bytes(governance.public_pem)
    return (tmp / "bundles" / "r1" / "slurm-hpc" / "controller-bundle.json", tmp / "signing.pub",
            tmp / "governance.pub"), signing


def test_the_controller_process_mints_each_launched_instance_its_own_nats_user_and_refreshes_the_agent_bundle(
        tmp_path: Path, region_url: str, pg_migrated_url: str, stack_home: Path) -> None:  # noqa: F811
    bundle, signing = _signed(tmp_path)
    newer = make_bundle(signing, PARTITION, 2, [workload_entry("etl")])
    write_bundle_dir(tmp_path / "dist" / "r1" / "slurm-hpc", *newer)
    distributor = Running(tmp_path / "dist", [datetime.now(UTC)])
    distributor.server.auth = stack_authenticator(stack_home)
    items = [{"source": "slurm", "item_id": f"e{n}", "contract_ref": "etl@1", "vcpu": 4, "memory_gib": 16,
              "state": "pending"} for n in range(8)]
    (tmp_path / "claims.json").write_text(json.dumps(items))
    done = subprocess.run(
        [sys.executable, "-m", "sco", "controller", "run", "--partition", PARTITION, "--bundle", str(bundle[0]),
         "--pubkey", str(bundle[1]), "--governance-key", str(bundle[2]), "--sim-url", region_url,
         "--postgres", pg_migrated_url, "--claims-file", str(tmp_path / "claims.json"), "--interval", "0.2",
         "--recovery-share", "1", "--holder", "controller-agents", "--passes", "12",
         "--agent-nats-url", "stack", "--agent-credentials", "stack",
         "--metadata-url", f"{region_url}/metadata/{{instance}}", "--distributor-url", distributor.url],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "SCO_HOME": str(stack_home), "SCO_DEBUG": "1"})
    distributor.close()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.count("agent bundle refreshed") == 1, done.stdout[-2000:]
    assert distributor.server.responses[200] >= 2 and distributor.server.responses[304] >= 1
    assert distributor.server.responses[401] == 0
    launched = {i.instance_id for i in SimulatedProvider(region_url, region="r1").list_instances() if i.owner}
    assert launched, done.stdout[-2000:]
    agents = json.loads((stack_home / "credentials.json").read_text())["agents"]
    assert {key.split("/", 1)[1] for key in agents if key.startswith("r1/")} == launched
    port = int(json.loads((stack_home / "stack.json").read_text())["services"]["nats"]["port"])
    some = sorted(launched)[0]
    assert natsserver.nats_accepts(port, f"agent.r1.{some}", agents[f"r1/{some}"])
