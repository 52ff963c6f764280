"""The testbed's supervisor: one long-running process per testbed (``python -m testbed.agent NAME``).

``up`` prepares users, keys and config files and starts this agent; the agent then builds
the network, starts every daemon (as its own children, so it reaps them), and runs:

- the provider API (token auth) on the controller, port 8000: list / provision / release
  nodes, report a node faulty (break-fix), inject faults;
- the log query service on the controller's loopback, port 3100, reached only through nginx;
- the operator loop, which applies the profile's remediation policy;
- the flaky loop, which drops node links at the profile's rate;
- BMC-like listeners when the profile makes them reachable.

Every pid it starts is written to the state file, so ``down`` can remove them even if the
agent dies. The agent's own sockets are created inside the controller's (or a node's)
network namespace with setns(2) on one thread, so it serves there while it runs in the
host namespace, where it can manage links.

One module per job, each a layer over the one before:

- ``base``: the agent's state and bookkeeping (save, events, spawn and reap children);
- ``nodes``: a node's life: reserve a slot, boot its namespace and daemons, tear it down;
- ``provider_api``: the provider's HTTP token API and the actions behind it (faults, break-fix);
- ``log_service``: the tenants' log query API;
- ``operator_loops``: the operator (drain / replace after X s / never) and flaky-link loops;
- ``supervisor``: the controller's daemons, the main loop and shutdown, and ``main``.
"""

from testbed.agent.base import HOST_ONLY, kernel_newer
from testbed.agent.log_service import LogHandler, received_at
from testbed.agent.operator_loops import BAD_FLAGS, slurm_state_is_bad
from testbed.agent.provider_api import FAULT_KINDS, ApiHandler
from testbed.agent.supervisor import TICK_S, Agent, main

__all__ = [
    "BAD_FLAGS",
    "FAULT_KINDS",
    "HOST_ONLY",
    "TICK_S",
    "Agent",
    "ApiHandler",
    "LogHandler",
    "kernel_newer",
    "main",
    "received_at",
    "slurm_state_is_bad",
]
