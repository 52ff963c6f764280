"""The testbed's SSH host CA and the compute nodes' sshd access rule (issue 18).

Real providers sign their nodes' host keys with a host certificate authority, so a customer who
trusts the CA once trusts every node the operator adds later, replacements included, without
pinning each new key. The testbed does the same: ``up`` makes one CA per testbed
(``ssh/host_ca``, root-only; the public half is ``TestbedInfo.host_ca_public_key`` and
``python -m testbed host-ca NAME``), and every node boot (first boot, replacement or API-provisioned
node) signs that node's host key with ``ssh-keygen -s -h`` for the principals NAME and ADDRESS, and
starts sshd with ``HostCertificate``.

``ssh.restrict_to_jobs`` makes the compute nodes' sshd admit a tenant only while the tenant has
a running job on that node, as ``pam_slurm_adopt`` does on managed Slurm clusters: sshd's
``AuthorizedKeysCommand`` prints the tenant's authorized keys only when ``squeue`` lists one of
the tenant's jobs on this node, and no authorized_keys file is read on compute nodes. The
login node is unaffected, and so is ``srun`` (slurmd starts job steps, sshd is not involved).

Imports no app and no Django (testbed rule).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from testbed import runtime

#: How long a node's certificate is valid from its boot (a node lives for a test session).
CERT_VALIDITY = "-5m:+30d"


def ca_create(ssh_dir: Path, testbed: str) -> Path:
    """Make the testbed's host CA key pair (once); returns the private key's path."""
    ca = ssh_dir / "host_ca"
    if not ca.exists():
        runtime.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"host-ca.{testbed}", "-f", str(ca)])
        os.chmod(ca, 0o600)
    return ca


def ca_public_key(ssh_dir: Path) -> str:
    """The CA's public key line ("" for a testbed made before the CA existed)."""
    pub = ssh_dir / "host_ca.pub"
    return pub.read_text().strip() if pub.exists() else ""


def host_cert_sign(ssh_dir: Path, host_key: Path, *, name: str, address: str) -> Path:
    """Sign a node's host key (a fresh certificate at every boot); returns the certificate's path."""
    ca = ca_create(ssh_dir, ssh_dir.parent.name)  # a testbed made before the CA existed gets one now
    runtime.run(
        [
            "ssh-keygen", "-q", "-s", str(ca), "-h", "-I", f"{name}.{ssh_dir.parent.name}",
            "-n", f"{name},{address}", "-V", CERT_VALIDITY, f"{host_key}.pub",
        ]
    )  # fmt: skip
    return host_key.parent / f"{host_key.name}-cert.pub"


def job_check_script(slurm_conf: Path) -> str:
    """The compute nodes' ``AuthorizedKeysCommand``: USER NODE -> the user's keys, only while the
    user has a running job on NODE. Anything unexpected prints nothing (no key: refused)."""
    conf = shlex.quote(str(slurm_conf))
    return f"""#!/bin/sh
# opgrade testbed (generated): SSH to a compute node only for a tenant with a job there
# (like pam_slurm_adopt). sshd runs this as root with USER NODE; printing no key refuses the login.
user="$1"; node="$2"
case "$user$node" in ''|*[!A-Za-z0-9_.-]*) exit 0 ;; esac
jobs=$(SLURM_CONF={conf} squeue -h -w "$node" -u "$user" -t RUNNING -o %i 2>/dev/null) || exit 0
[ -n "$jobs" ] || exit 0
home=$(getent passwd "$user" | cut -d: -f6)
[ -n "$home" ] && cat "$home/.ssh/authorized_keys" 2>/dev/null
exit 0
"""


def job_check_write(root: Path, slurm_conf: Path) -> Path:
    """Write the check where sshd accepts it (root-owned, not group/world writable)."""
    path = root / "bin" / "ssh-job-check.sh"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(job_check_script(slurm_conf))
    os.chmod(path, 0o755)  # noqa: S103 - sshd runs it as root; tenants may read it
    return path


def node_sshd_options(root: Path, *, name: str, cert: Path, restrict_to_jobs: bool) -> list[str]:
    """The ``-o`` options of a compute node's sshd: its certificate, and the job rule when on."""
    options = ["-o", f"HostCertificate={cert}"]
    if restrict_to_jobs:
        check = root / "bin" / "ssh-job-check.sh"
        options += [
            "-o", "AuthorizedKeysFile=none",
            "-o", f"AuthorizedKeysCommand={check} %u {name}",
            "-o", "AuthorizedKeysCommandUser=root",
        ]  # fmt: skip
    return options
