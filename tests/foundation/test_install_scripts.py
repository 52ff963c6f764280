"""`make test` installs what its tests need (issue 24 item 11), checked on copies of the scripts
with stand-in programs, so nothing here installs, builds or runs the suite:

- scripts/install.sh fetches the clustermax wheels (clustermax_audit works after a plain install),
  and a second run asks nobody;
- apt_install_missing runs `apt-get update` once for all the steps of a run, and names the missing
  packages instead of installing them when not root;
- scripts/test.sh installs first, builds the LLM server beside the full suite and fails when that
  build fails; with ARGS it runs one pytest and builds nothing; the full suite refuses non-root;
- .ci/run is thin: it runs `make test`, which runs scripts/test.sh.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _exe(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _copy(tree: Path, *scripts: str) -> None:
    for rel in scripts:
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, tree / rel)


def _run(
    argv: list[str], cwd: Path, path_prefix: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    path = f"{path_prefix}:{os.environ['PATH']}" if path_prefix else os.environ["PATH"]
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": path, **env}
    )


def test_install_fetches_the_clustermax_wheels_once(tmp_path: Path) -> None:
    _copy(tmp_path, "scripts/install.sh", "scripts/fetch-cmax-wheels.sh")
    for name in ("requirements.txt", "requirements-nodeps.txt"):
        (tmp_path / name).write_text("")
    # the requirements are installed already (install.sh's stamp matches): only the wheels remain
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv/.requirements.sha256").write_text(hashlib.sha256(b"").hexdigest() + "\n")
    calls = tmp_path / "python-calls.log"
    _exe(
        tmp_path / ".venv/bin/python",
        f"""echo "$*" >> {calls}
dest=""; prev=""
for a in "$@"; do [ "$prev" = "--dest" ] && dest=$a; prev=$a; done
[ -n "$dest" ] && touch "$dest/clustermax-0.2.1-py3-none-any.whl"
exit 0
""",
    )
    first = _run(["./scripts/install.sh"], tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (tmp_path / "var/wheels/cmax/clustermax-0.2.1-py3-none-any.whl").is_file()
    downloads = calls.read_text().splitlines()
    assert len(downloads) == 4 and all("pip download" in c and "clustermax==0.2.1" in c for c in downloads)

    second = _run(["./scripts/install.sh"], tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "already fetched" in second.stdout
    assert calls.read_text().splitlines() == downloads  # no second trip to the index


def _fake_apt(bin_dir: Path, log: Path, uid: int) -> None:
    _exe(
        bin_dir / "dpkg-query",
        'for p in "$@"; do [ "$p" = present ] && echo "present install ok installed"; done\nexit 0\n',
    )
    _exe(bin_dir / "apt-get", f'echo "apt-get $*" >> {log}\n')
    _exe(bin_dir / "id", f'[ "$1" = -u ] && echo {uid} && exit 0\nexec /usr/bin/id "$@"\n')


def test_apt_update_runs_once_for_every_step_that_shares_a_run(tmp_path: Path) -> None:
    log, stamp = tmp_path / "apt.log", tmp_path / "stamp"
    stamp.write_text("")
    _fake_apt(tmp_path / "bin", log, uid=0)
    lib = ROOT / "scripts/lib/apt.sh"
    script = f". {lib}; apt_install_missing one present a b; apt_install_missing two c; apt_install_missing three present"
    done = _run(["sh", "-eu", "-c", script], tmp_path, tmp_path / "bin", OPGRADE_APT_STAMP=str(stamp))
    assert done.returncode == 0, done.stdout + done.stderr
    calls = log.read_text().splitlines()
    assert [c for c in calls if c.startswith("apt-get update")] == ["apt-get update -qq"]
    installs = [c.split("--no-install-recommends ")[1] for c in calls if " install " in c]
    assert installs == ["a b", "c"]
    assert "three: all packages present" in done.stdout


def test_apt_names_the_missing_packages_when_not_root(tmp_path: Path) -> None:
    log = tmp_path / "apt.log"
    _fake_apt(tmp_path / "bin", log, uid=1000)
    lib = ROOT / "scripts/lib/apt.sh"
    done = _run(["sh", "-eu", "-c", f". {lib}; apt_install_missing install-browser.sh present chromium"],
                tmp_path, tmp_path / "bin")  # fmt: skip
    assert done.returncode == 1
    assert "install-browser.sh: missing Debian packages: chromium; run as root" in done.stderr
    assert not log.exists()


def _test_tree(tmp_path: Path, llm_rc: int) -> Path:
    """A copy of scripts/test.sh beside stand-ins for the installs, ruff, lint-imports and pytest."""
    _copy(tmp_path, "scripts/test.sh")
    events = tmp_path / "events.log"
    _exe(tmp_path / "scripts/install-all.sh", f"echo install-all >> {events}\n")
    _exe(tmp_path / "scripts/install-llm.sh", f"echo llm-started >> {events}\nsleep 1\nexit {llm_rc}\n")
    for tool in ("ruff", "lint-imports"):
        _exe(tmp_path / f".venv/bin/{tool}", "exit 0\n")
    _exe(
        tmp_path / ".venv/bin/python",
        f'echo "pytest $* wait=${{OPGRADE_LLM_WAIT_S:-}}" >> {events}\necho "3 passed in 0.1s"\n',
    )
    return events


def test_the_full_suite_builds_the_llm_server_beside_it_and_fails_when_the_build_fails(
    tmp_path: Path,
) -> None:
    events = _test_tree(tmp_path, llm_rc=3)
    done = _run(["./scripts/test.sh"], tmp_path, OPGRADE_LLM_WAIT_S="")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "scripts/install-llm.sh failed (exit status 3)" in out
    assert "total: 9 passed, 0 failed, 0 skipped" in out
    lines = events.read_text().splitlines()
    assert lines[0] == "install-all" and "llm-started" in lines
    pytests = [line for line in lines if line.startswith("pytest")]
    assert len(pytests) == 3 and all(line.endswith("wait=2700") for line in pytests)


def test_the_full_suite_passes_when_the_build_and_the_tests_pass(tmp_path: Path) -> None:
    _test_tree(tmp_path, llm_rc=0)
    done = _run(["./scripts/test.sh"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_run_with_args_installs_runs_one_pytest_and_builds_nothing(tmp_path: Path) -> None:
    events = _test_tree(tmp_path, llm_rc=0)
    done = _run(
        ["./scripts/test.sh", "tests/rubric", "-x"],
        tmp_path,
        OPGRADE_LLM_CACHE=str(tmp_path / "no-llm"),
        OPGRADE_LLM_DIR="",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert events.read_text().splitlines()[0] == "install-all"
    assert [line.split(" wait=")[0] for line in events.read_text().splitlines()[1:]] == [
        "pytest -m pytest tests/rubric -x"
    ]
    assert "the LLM server is not built yet" in done.stdout and "scripts/install-llm.sh" in done.stdout


def test_the_full_suite_refuses_to_start_unless_root_and_says_so(tmp_path: Path) -> None:
    events = _test_tree(tmp_path, llm_rc=0)
    _exe(tmp_path / "bin/id", '[ "$1" = -u ] && echo 1000 && exit 0\nexec /usr/bin/id "$@"\n')
    done = _run(["./scripts/test.sh"], tmp_path, tmp_path / "bin")
    assert done.returncode == 1
    assert "run `make test` as root" in done.stderr
    assert not events.exists()  # nothing installed, nothing run


def test_ci_runs_exactly_make_test_and_make_test_runs_the_test_script() -> None:
    ci = (ROOT / ".ci/run").read_text()
    commands = [
        line.strip() for line in ci.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    assert "make test" in commands
    assert not [c for c in commands if "install" in c and "make" not in c and "apt.sh" not in c]
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}  # under make test
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "test", "ARGS=tests/rubric"],
        cwd=ROOT, capture_output=True, text=True, timeout=30, env=env,
    )  # fmt: skip
    assert dry.stdout.split() == ["./scripts/test.sh", "tests/rubric"], dry.stdout + dry.stderr
    assert "./scripts/install-all.sh" in (ROOT / "scripts/test.sh").read_text()
