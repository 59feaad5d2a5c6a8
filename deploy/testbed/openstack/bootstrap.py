"""Keystone, Nova and Glance resources of the OpenStack test bed (called by ``up``; idempotent).

    bootstrap.py services   service users, roles, services and endpoints (before Nova starts: it caches the catalog)
    bootstrap.py resources  compute hosts → availability zones and aggregates, flavours, image, the orchestrator's
                            project, quota and application credential → $STATE/clouds.yaml
    bootstrap.py check      exit 0 when the orchestrator's credential lists servers and both compute hosts are up
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import openstack
import yaml

STATE = Path(os.environ.get("STATE", "/var/lib/sco-testbed/openstack"))
KS = "http://127.0.0.1:5000/v3"
ADMINPASS = "sco_testbed_admin"
SVCPASS = "sco_testbed_service"
PROJECT = "sco-orchestrator"
USER = "sco-controller"
QUOTA_INSTANCES = 20
ENDPOINTS = {
    "compute": ("nova", "http://127.0.0.1:8774/v2.1"),
    "placement": ("placement", "http://127.0.0.1:8778"),
    "image": ("glance", "http://127.0.0.1:9292"),
    "network": ("neutron", "http://127.0.0.1:9696"),
}
HALLS = {"sco-compute-1": ("hall-a", "agg-a1"), "sco-compute-2": ("hall-b", "agg-b1")}
# name: vcpu, ram MiB, SKU family, size, guaranteed rate EUR/h, reclaimable rate EUR/h
FLAVOURS = {
    "gp.small": (1, 512, "gp", "small", "0.040", "0.012"),
    "gp.medium": (2, 1024, "gp", "medium", "0.080", "0.024"),
    "mem.large": (4, 4096, "mem", "large", "0.200", "0.070"),
}


def admin() -> openstack.connection.Connection:
    return openstack.connect(auth_url=KS, username="admin", password=ADMINPASS, project_name="admin",
                             user_domain_name="Default", project_domain_name="Default", region_name="RegionOne",
                             compute_api_version="2.90", identity_interface="public")


def services() -> None:
    conn = admin()
    service_project = conn.identity.find_project("service") or conn.identity.create_project(
        name="service", domain_id="default")
    admin_role = conn.identity.find_role("admin")
    roles = {r.name: r for r in conn.identity.roles()}
    if "service" not in roles:
        roles["service"] = conn.identity.create_role(name="service")
    for user in ("nova", "placement", "glance"):
        u = conn.identity.find_user(user, domain_id="default") or conn.identity.create_user(
            name=user, password=SVCPASS, domain_id="default")
        conn.identity.update_user(u, password=SVCPASS)
        conn.identity.assign_project_role_to_user(service_project, u, admin_role)
        conn.identity.assign_project_role_to_user(service_project, u, roles["service"])
    for kind, (name, url) in ENDPOINTS.items():
        svc = conn.identity.find_service(name) or conn.identity.create_service(name=name, type=kind)
        have = {e.interface for e in conn.identity.endpoints(service_id=svc.id)}
        for interface in ("public", "internal", "admin"):
            if interface not in have:
                conn.identity.create_endpoint(service_id=svc.id, interface=interface, url=url,
                                              region_id="RegionOne")


def _wait_hosts(conn: openstack.connection.Connection) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        up = {s.host for s in conn.compute.services(binary="nova-compute") if s.state == "up"}
        hyp = {h.name for h in conn.compute.hypervisors()}
        if set(HALLS) <= up and set(HALLS) <= hyp:
            return
        time.sleep(1)
    raise SystemExit(f"compute hosts {sorted(HALLS)} did not come up (see {STATE}/log)")


def resources() -> None:
    conn = admin()
    _wait_hosts(conn)
    for host, (zone, name) in HALLS.items():
        agg = next((a for a in conn.compute.aggregates() if a.name == name), None)
        if agg is None:
            agg = conn.compute.create_aggregate(name=name, availability_zone=zone)
        if host not in (agg.hosts or []):
            conn.compute.add_host_to_aggregate(agg, host)
        conn.compute.set_aggregate_metadata(agg, {"sco_hall": zone, "sco_aggregate": name})
    for name, (vcpu, ram, family, size, grate, rate) in FLAVOURS.items():
        flavor = conn.compute.find_flavor(name) or conn.compute.create_flavor(
            name=name, vcpus=vcpu, ram=ram, disk=1, is_public=True)
        conn.compute.create_flavor_extra_specs(flavor, {
            "sco:sku_family": family, "sco:size": size, "sco:purchase_model": "reclaimable",
            "sco:guaranteed_rate_eur_h": grate, "sco:rate_eur_h": rate})
    if conn.image.find_image("sco-tiny") is None:
        conn.image.create_image(name="sco-tiny", data=b"\0" * 1024, disk_format="raw", container_format="bare",
                                visibility="public", allow_duplicates=False)
    project = conn.identity.find_project(PROJECT, domain_id="default") or conn.identity.create_project(
        name=PROJECT, domain_id="default", description="SCO orchestrator: reclaimable capacity (ADR-29)")
    password = "sco_testbed_controller"
    user = conn.identity.find_user(USER, domain_id="default") or conn.identity.create_user(
        name=USER, password=password, domain_id="default", default_project_id=project.id)
    conn.identity.update_user(user, password=password)
    conn.identity.assign_project_role_to_user(project, user, conn.identity.find_role("member"))
    conn.compute.update_quota_set(project.id, instances=QUOTA_INSTANCES, cores=200, ram=200 * 1024)
    me = openstack.connect(auth_url=KS, username=USER, password=password, project_name=PROJECT,
                           user_domain_name="Default", project_domain_name="Default", region_name="RegionOne")
    uid = me.current_user_id
    for cred in list(me.identity.application_credentials(user=uid)):
        if cred.name == "sco-orchestrator":
            me.identity.delete_application_credential(uid, cred)
    cred = me.identity.create_application_credential(uid, name="sco-orchestrator",
                                                     description="SCO test bed controller credential")
    clouds = {"clouds": {
        "sco-testbed": {
            "auth_type": "v3applicationcredential",
            "auth": {"auth_url": KS, "application_credential_id": cred.id,
                     "application_credential_secret": cred.secret},
            "region_name": "RegionOne", "compute_api_version": "2.90", "identity_api_version": 3,
        },
        # the orchestrator user's own authority, as OpenBao's plugin or a rotation job holds it: it issues the
        # controller's expiring application credentials (ADR-29; controllers.providers.appcred)
        "sco-testbed-issuer": {
            "auth": {"auth_url": KS, "username": USER, "password": password, "project_name": PROJECT,
                     "user_domain_name": "Default", "project_domain_name": "Default"},
            "region_name": "RegionOne", "compute_api_version": "2.90", "identity_api_version": 3,
        },
        "sco-testbed-admin": {
            "auth": {"auth_url": KS, "username": "admin", "password": ADMINPASS, "project_name": "admin",
                     "user_domain_name": "Default", "project_domain_name": "Default"},
            "region_name": "RegionOne", "compute_api_version": "2.90", "identity_api_version": 3,
        },
    }, "sco": {"project": PROJECT, "project_id": project.id, "quota_instances": QUOTA_INSTANCES,
               "image": "sco-tiny", "halls": {z: a for z, a in HALLS.values()}}}
    path = STATE / "clouds.yaml"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(clouds, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)


def check() -> None:
    clouds = yaml.safe_load((STATE / "clouds.yaml").read_text())["clouds"]
    conf = clouds["sco-testbed"]
    if "sco-testbed-issuer" not in clouds:
        raise SystemExit("clouds.yaml predates the credential issuer entry: set up again")
    conn = openstack.connect(**conf)
    list(conn.compute.servers())
    _wait_hosts(admin())


if __name__ == "__main__":
    {"services": services, "resources": resources, "check": check}[sys.argv[1]]()
