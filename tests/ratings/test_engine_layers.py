"""The scoring engine is pure: importing it loads no Django and no Django app's models."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_engine_loads_no_django_and_no_app_models():
    script = (
        "import sys\n"
        "import ratings.engine, ratings.engine.core, ratings.engine.tiering, ratings.engine_types\n"
        "apps = {'probes', 'providers', 'ratings', 'reports', 'reviews', 'rubric', 'quickstart', 'config'}\n"
        "bad = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.')\n"
        "             or (m.split('.')[0] in apps and m.endswith('.models')))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_every_engine_stage_is_its_own_module():
    stages = {p.stem for p in (ROOT / "ratings" / "engine").glob("*.py")}
    assert {"hashing", "validation", "normalisation", "streams", "layout", "sampling", "tiering", "core",
            "serialisation"} <= stages


def test_the_engine_has_one_name_no_re_export_modules():
    """Callers import ``ratings.engine`` (and its stage modules); the old re-export files are gone."""
    assert not (ROOT / "ratings" / "scoring.py").exists()
    assert not (ROOT / "ratings" / "tiering.py").exists()
