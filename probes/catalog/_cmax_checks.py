"""Uploaded next to the cmax venv and run with its Python: cmax's own per-check verdicts as JSON.

Not imported by Opgrade (it needs the ``cmax`` package, which lives only in the venv the
clustermax_audit probe installs on the login node). It asks cmax to grade its own
``audit.values.json`` exactly as ``cmax`` renders its report (``cmax.audit_report.evaluate``),
so Opgrade stores ClusterMAX's verdict per check rather than re-deriving it.

Usage: python _cmax_checks.py AUDIT_VALUES_JSON [HARNESS]
"""

import json
import sys
from pathlib import Path


def main() -> int:
    from cmax.audit_report import evaluate
    from cmax.security import find_runtime_root

    values = json.loads(Path(sys.argv[1]).read_text())
    harness = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else None
    checks = evaluate(values, find_runtime_root(), harness=harness)
    out = [
        {
            "id": c.key,
            "title": c.title,
            "category": c.category,
            "status": c.status,
            "observed": str(c.observed)[:200],
        }
        for c in checks
    ]
    print(json.dumps({"checks": out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
