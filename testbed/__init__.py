"""Cluster-in-a-box: real Slurm, OpenSSH, Prometheus, nginx and rsyslog in network namespaces.

One testbed stands for one GPU-cloud provider. It is a Linux bridge with a private /24,
a network namespace for the controller, one for the login node and one per compute node,
and the same daemons a real provider runs, configured by a YAML *profile* whose knobs make
the provider a good or a bad operator (see testbed/README.md).

This is a plain package, not a Django app: it imports nothing from the project. Use it from
the command line (``python -m testbed up exemplary --name a``) or from Python::

    from testbed import api
    info = api.up("exemplary", name="a", nodes=2)
    ...
    api.down("a")
"""
