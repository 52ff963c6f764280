"""Configuration files for the testbed's daemons, rendered from a layout and a profile.

Pure: each function takes the layout, the resolved knobs and the tenants and returns text.
Ports inside the controller namespace are fixed (each namespace has its own loopback),
so two testbeds never collide: Prometheus 19090 (shared) or 19091+i (tenant i), Pushgateway
19190 / 19191+i, the log service 3100, the provider API 8000, nginx 80.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from testbed.layout import Layout

API_PORT = 8000
LOG_PORT = 3100
NGINX_PORT = 80
SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SLURMDBD_PORT = 6819
NODE_EXPORTER_PORT = 9100


def prom_port(index: int | None) -> int:
    """Port of the shared Prometheus (``None``) or of tenant number ``index``'s."""
    return 19090 if index is None else 19091 + index


def push_port(index: int | None) -> int:
    return 19190 if index is None else 19191 + index


def slurm_conf(lay: Layout, knobs: dict[str, Any]) -> str:
    s = knobs["slurm"]
    pool = knobs["nodes"]["pool_size"]
    root = lay.root
    lines = [
        f"# slurm.conf of testbed {lay.name} (generated; profile {knobs['name']})",
        f"ClusterName={lay.name}",
        f"SlurmctldHost=ctl({lay.ctl_addr})",
        f"SlurmctldPort={SLURMCTLD_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={lay.munge_socket}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={root}/slurm/ctld",
        f"SlurmdSpoolDir={root}/slurm/spool/%n",
        f"SlurmctldPidFile={root}/run/slurmctld.pid",
        # a private tmpfs per node (see runtime.wrap_in_node): %n does not expand here
        f"SlurmdPidFile={root}/noderun/slurmd.pid",
        f"SlurmctldLogFile={root}/logs/slurmctld.log",
        f"SlurmdLogFile={root}/logs/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "ReturnToService=2",
        f"SlurmdTimeout={int(s['slurmd_timeout_s'])}",
        "MessageTimeout=5",
        "TCPTimeout=2",
        "MpiDefault=none",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={root}/slurm/jobcomp/jobcomp.txt",
        "JobAcctGatherType=jobacct_gather/none",
    ]
    if s["accounting"]:
        lines += [
            "AccountingStorageType=accounting_storage/slurmdbd",
            f"AccountingStorageHost={lay.ctl_addr}",
            f"AccountingStoragePort={SLURMDBD_PORT}",
            # the munge socket for slurmdbd connections (AuthInfo only covers the cluster's own)
            f"AccountingStoragePass={lay.munge_socket}",
            "AccountingStorageEnforce=associations",
        ]
    else:
        lines.append("AccountingStorageType=accounting_storage/none")
    if s["private_data"]:
        lines.append("PrivateData=jobs,usage,users")
    if s["health_check"]:
        lines += [
            f"HealthCheckProgram={root}/bin/healthcheck.sh",
            f"HealthCheckInterval={int(s['health_check_interval_s'])}",
            "HealthCheckNodeState=ANY",
        ]
    n = knobs["nodes"]
    for slot in range(1, pool + 1):
        lines.append(
            f"NodeName={lay.node_name(slot)} NodeAddr={lay.node_addr(slot)} CPUs={n['cpus']} "
            f"RealMemory={n['memory_mb']} State=FUTURE"
        )
    lines.append(f"PartitionName=gpu Nodes=node[1-{pool}] Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def accounting_db(lay: Layout) -> str:
    """The MariaDB database of the testbed's slurmdbd (the name is validated: [a-z0-9])."""
    return f"opgtb_{lay.name}"


def slurmdbd_conf(lay: Layout, knobs: dict[str, Any]) -> str:
    root = lay.root
    lines = [
        f"# slurmdbd.conf of testbed {lay.name} (generated): its own database on the local MariaDB",
        "AuthType=auth/munge",
        f"AuthInfo=socket={lay.munge_socket}",
        "DbdHost=ctl",
        f"DbdAddr={lay.ctl_addr}",
        f"DbdPort={SLURMDBD_PORT}",
        "SlurmUser=root",
        f"LogFile={root}/logs/slurmdbd.log",
        f"PidFile={root}/run/slurmdbd.pid",
        "StorageType=accounting_storage/mysql",
        "StorageHost=localhost",  # the MariaDB unix socket, shared through the filesystem
        f"StorageLoc={accounting_db(lay)}",
        "StorageUser=root",
    ]
    if knobs["slurm"]["accounting_private_data"]:
        lines.append("PrivateData=jobs,usage,users,accounts")
    return "\n".join(lines) + "\n"


def healthcheck_script(lay: Layout) -> str:
    return f"""#!/bin/sh
# HealthCheckProgram of testbed {lay.name}: slurmd runs it inside the node's namespaces.
# A node is bad when a fault marker {lay.faults}/<node>.unhealthy exists (inject-fault
# ... unhealthy writes it; it stands for an XID error or a failed GPU check).
export SLURM_CONF={lay.slurm_conf}
node=$(hostname)
marker={lay.faults}/$node.unhealthy
if [ -f "$marker" ]; then
    /usr/bin/scontrol update nodename="$node" state=drain reason="healthcheck: $(head -c 60 "$marker")"
fi
exit 0
"""


def sshd_config(lay: Layout, users: list[str], *, pam: bool = False) -> str:
    """``pam``: sessions go through the testbed's own PAM stack (:func:`pam_sshd`), whose
    pam_namespace gives each user a private /tmp, /var/tmp and /dev/shm (``fs.private_tmp``)."""
    return f"""# sshd_config shared by the login and compute nodes of testbed {lay.name} (generated)
Port 22
PidFile none
UsePAM {"yes" if pam else "no"}
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin no
AllowUsers {" ".join(users)}
AuthorizedKeysFile .ssh/authorized_keys
StrictModes yes
SetEnv SLURM_CONF={lay.slurm_conf}
X11Forwarding no
PrintMotd no
MaxStartups 50:30:100
LogLevel ERROR
Subsystem sftp internal-sftp
"""


def pam_sshd() -> str:
    """The PAM stack of the testbed's sshd (bind-mounted over /etc/pam.d/sshd inside the node's
    mount namespace only): keys are checked by sshd itself, sessions get per-user temp dirs."""
    return """# PAM for the testbed's sshd (generated; fs.private_tmp): authentication is sshd's
# public-key check, the session gets per-user polyinstantiated /tmp, /var/tmp and /dev/shm
auth     required pam_permit.so
account  required pam_permit.so
password required pam_deny.so
session  required pam_namespace.so
"""


def pam_namespace_conf() -> str:
    """pam_namespace: one instance of each shared temp directory per user (``<dir>/.inst/<user>``)."""
    from testbed.runtime import PRIVATE_TMP_DIRS

    return "".join(f"{d} {d}/.inst/ user root\n" for d in PRIVATE_TMP_DIRS)


def nginx_log_dir(lay: Layout, knobs: dict[str, Any]) -> Any:
    """Where nginx writes its access and error logs: a root-only directory
    (``logs.nginx_access_log_private``), else the world-readable ``logs/`` (every tenant reads
    every request URL and login name)."""
    return lay.root / "logs" / ("daemons" if knobs["logs"].get("nginx_access_log_private") else "")


def htpasswd_line(user: str, password: str, salt: bytes) -> str:
    # nginx's {SSHA} scheme; the passwords are 144-bit random tokens, so a salted SHA-1 is not the weak point
    digest = hashlib.sha1(password.encode() + salt).digest()  # noqa: S324
    return f"{user}:{{SSHA}}{base64.b64encode(digest + salt).decode()}"


def nginx_conf(lay: Layout, knobs: dict[str, Any], tenants: list[dict[str, Any]], proxy_secret: str) -> str:
    root = lay.root
    metrics_isolated = knobs["metrics"]["isolation"]
    logs_isolated = knobs["logs"]["isolation"]
    prom_map = push_map = tenant_map = forged_map = ""
    for i, t in enumerate(tenants):
        user = t["user"]
        prom = prom_port(i if metrics_isolated else None)
        push = push_port(i if metrics_isolated else None)
        prom_map += f'        "{user}" 127.0.0.1:{prom};\n'
        push_map += f'        "{user}" 127.0.0.1:{push};\n'
        tenant_map += f'        "{user}" "{user}";\n'
        forged_map += f'        "{user}:{user}" 0;\n'
    if logs_isolated:
        log_block = """            # exemplary: the tenant comes from the login, a different claimed tenant is refused
            if ($tb_forged) { return 403 "tenant header does not match your credentials\\n"; }
            proxy_set_header X-Scope-OrgID $tb_tenant;"""
    else:
        log_block = """            # leaky: a tenant header sent by the client is passed on as it is
            proxy_set_header X-Scope-OrgID $http_x_scope_orgid;"""
    logs = str(nginx_log_dir(lay, knobs)).rstrip("/")
    return f"""# nginx of testbed {lay.name} (generated): per-tenant basic auth in front of
# Prometheus, the Pushgateway and the log service.
user www-data;
worker_processes 1;
daemon off;
pid {root}/run/nginx.pid;
error_log {logs}/nginx-error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {logs}/nginx-access.log;
    client_body_temp_path {root}/run/nginx/body;
    proxy_temp_path {root}/run/nginx/proxy;
    fastcgi_temp_path {root}/run/nginx/fastcgi;
    uwsgi_temp_path {root}/run/nginx/uwsgi;
    scgi_temp_path {root}/run/nginx/scgi;
    default_type text/plain;
    map $remote_user $tb_prom {{
        default "";
{prom_map}    }}
    map $remote_user $tb_push {{
        default "";
{push_map}    }}
    map $remote_user $tb_tenant {{
        default "";
{tenant_map}    }}
    map "$http_x_scope_orgid:$remote_user" $tb_forged {{
        default 1;
        "~^:" 0;
{forged_map}    }}
    server {{
        listen {lay.ctl_addr}:{NGINX_PORT};
        auth_basic "testbed {lay.name}";
        auth_basic_user_file {root}/nginx/htpasswd;
        # also the upload sink of metrics_freshness: any body is read and discarded
        location = /healthz {{ auth_basic off; client_max_body_size 0; return 200 "ok\\n"; }}
        location /prometheus/ {{
            rewrite ^/prometheus/(.*)$ /$1 break;
            proxy_pass http://$tb_prom;
        }}
        location /pushgateway/ {{
            rewrite ^/pushgateway/(.*)$ /$1 break;
            proxy_pass http://$tb_push;
        }}
        location /logs/ {{
{log_block}
            proxy_set_header X-Testbed-Proxy {proxy_secret};
            proxy_pass http://127.0.0.1:{LOG_PORT};
        }}
    }}
}}
"""


def prometheus_yml(lay: Layout, knobs: dict[str, Any], *, push: int, tenant: str | None) -> str:
    """Scrape config: the tenant's (or the shared) Pushgateway every 3 s, and the node exporters
    listed in ``nodes.json`` every ``metrics.scrape_interval_s`` (how stale node metrics may be)."""
    node_interval = int(knobs["metrics"]["scrape_interval_s"])
    relabel = ""
    if tenant:
        relabel = f"""
    metric_relabel_configs:
      - target_label: tenant
        replacement: "{tenant}\""""
    return f"""# Prometheus of testbed {lay.name} ({"tenant " + tenant if tenant else "shared by all tenants"})
global:
  scrape_interval: 3s
  evaluation_interval: 15s
scrape_configs:
  - job_name: pushgateway
    honor_labels: true
    static_configs:
      - targets: ["127.0.0.1:{push}"]{relabel}
  - job_name: node
    scrape_interval: {node_interval}s
    scrape_timeout: {min(node_interval, 10)}s
    file_sd_configs:
      - files: ["{lay.root}/prometheus/nodes.json"]
        refresh_interval: 3s
"""


def node_targets(lay: Layout, nodes: dict[str, dict[str, Any]], *, scrape_all: bool = True) -> str:
    """File-SD targets of the node-exporter job: every live node, or (``metrics.scrape_all_nodes``
    off) only every other one in slot order (node2, node4, ...), as a provider whose scrape config
    misses half its fleet. The exporters of the others still run; nothing scrapes them."""
    live = sorted(
        ((name, n) for name, n in nodes.items() if n["status"] in ("booting", "ready", "faulty")),
        key=lambda kv: int(kv[1].get("slot", 0)),
    )
    if not scrape_all:
        live = live[1::2]
    targets = [
        {"targets": [f"{n['address']}:{NODE_EXPORTER_PORT}"], "labels": {"node": name}} for name, n in live
    ]
    return json.dumps(targets)


def rsyslog_conf(lay: Layout, tenants: list[dict[str, Any]]) -> str:
    root = lay.root
    rules = ""
    for t in tenants:
        rules += f"""if $programname == "{t["user"]}" then {{
    action(type="omfile" file="{lay.tenant_log_dir(t["user"])}/messages.log" template="tb")
    stop
}}
"""
    return f"""# rsyslog of testbed {lay.name} (generated). Nodes send with `logger -n {lay.ctl_addr}`;
# a line tagged with a tenant's user name (logger's default tag) goes to that tenant's file.
global(workDirectory="{root}/run/rsyslog")
module(load="imudp")
module(load="imtcp")
input(type="imudp" address="{lay.ctl_addr}" port="514")
input(type="imtcp" address="{lay.ctl_addr}" port="514")
template(name="tb" type="string" string="%timegenerated:::date-rfc3339% %hostname% %programname%:%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n")
{rules}*.* action(type="omfile" file="{root}/logs/system/messages.log" template="tb")
"""
