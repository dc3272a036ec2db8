"""A folder of wheels for a machine without network (a GPU node behind a firewall): ccq-eval and every package it
needs at run time that the target environment lacks, for the target's Python and platform. The accelerator stack
(torch, triton) is always the target's own, never carried: a wheel from here would replace a CUDA build.

On the target: ``python -m pip install --no-index --no-deps DIR/*.whl``. Nothing there is resolved again, so
what is carried is decided here, from this environment's installed metadata and the target's ``pip list``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ccq_eval.errors import BadInput

ROOT = "ccq-eval"
# the environment's accelerator stack: kept, and not walked (their own needs are the environment's)
ENVIRONMENT_OWN = frozenset({"torch", "triton"})
# pip matches a manylinux tag exactly: every glibc a current Linux machine may have
GLIBC_MINORS = range(17, 40)


@dataclass(frozen=True)
class Target:
    python: str = "3.12"  # major.minor
    machine: str = "x86_64"

    def markers(self, extra: str = "") -> dict:
        return {"python_version": self.python, "python_full_version": f"{self.python}.0", "os_name": "posix",
                "sys_platform": "linux", "platform_system": "Linux", "platform_machine": self.machine,
                "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": extra}

    def platforms(self) -> list[str]:
        return [*(f"manylinux_2_{minor}_{self.machine}" for minor in GLIBC_MINORS),
                f"manylinux2014_{self.machine}", f"manylinux1_{self.machine}", f"linux_{self.machine}"]


@dataclass
class Needed:
    """A package the target needs: the version installed here (None where it is not), every requirement on it."""
    name: str
    installed: str | None
    requirements: list[Requirement] = field(default_factory=list)

    def pin(self) -> str:
        if self.installed:
            return f"{self.name}=={self.installed}"
        return f"{self.name}{','.join(str(r.specifier) for r in self.requirements if r.specifier)}"

    def admits(self, version: str) -> bool:
        try:
            parsed = Version(version)
        except InvalidVersion:
            return False
        return all(r.specifier.contains(parsed, prereleases=True) for r in self.requirements)


def parse_target_python(text: str) -> Target:
    if not re.fullmatch(r"3\.\d{1,2}", text):
        raise BadInput(f"--python {text!r}: give the target's Python as major.minor, for example 3.12")
    return Target(python=text)


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _requirements(name: str, extras: frozenset, target: Target) -> list[Requirement]:
    found = []
    for text in metadata.distribution(name).requires or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate(target.markers(extra)) for extra in (extras or {""})):
            found.append(requirement)
    return found


def runtime_closure(target: Target) -> dict[str, Needed]:
    """Every package ccq-eval needs at run time on ``target`` (its extras' too; not its tests'), from the metadata
    installed here, each with every requirement on it. The environment's own stack is listed, not walked."""
    needed: dict[str, Needed] = {}
    walked: dict[str, frozenset] = {}
    pending = [(ROOT, frozenset())]
    while pending:
        name, extras = pending.pop()
        key = canonicalize_name(name)
        if key in walked and extras <= walked[key]:
            continue
        walked[key] = walked.get(key, frozenset()) | extras
        if key in ENVIRONMENT_OWN or _installed(name) is None:
            continue  # not here: carried at the newest release its requirements admit
        for requirement in _requirements(name, extras, target):
            dependency = canonicalize_name(requirement.name)
            needed.setdefault(dependency, Needed(dependency, _installed(dependency))).requirements.append(requirement)
            pending.append((dependency, frozenset(requirement.extras)))
    needed[ROOT] = Needed(ROOT, _installed(ROOT))
    return needed


_ENTRY = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:(?:==|\s)\s*([^\s,;]+)|@.*)?")


def parse_have(text: str, source: str = "--have") -> dict[str, str | None]:
    """The target's packages from ``pip list --format=freeze``, plain ``pip list``, or names alone (a version where
    one is given). Headers and comments are skipped."""
    have: dict[str, str | None] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "Package ", "---", "-e ")):  # an editable install has no version to check
            continue
        for entry in (line.split(",") if "," in line and "==" not in line else [line]):
            entry = entry.strip().rstrip(".")
            if not entry:
                continue
            match = _ENTRY.fullmatch(entry)
            if match is None:
                raise BadInput(f"{source}: cannot read {entry!r}; give `pip list --format=freeze` from the target")
            have[canonicalize_name(match.group(1))] = match.group(2)
    return have


@dataclass
class Plan:
    carry: list[Needed]
    kept: list[str]
    reasons: dict[str, str]


def plan(needed: dict[str, Needed], have: dict[str, str | None]) -> Plan:
    """What to carry: ccq-eval, and each needed package the target lacks or holds at a version a requirement
    refuses. The target's accelerator stack is kept whatever its version."""
    carry, kept, reasons = [], [], {}
    for name in sorted(needed):
        package = needed[name]
        if name in ENVIRONMENT_OWN:
            kept.append(name)
        elif name == ROOT or name not in have:
            carry.append(package)
        elif have[name] is None or package.admits(have[name]):
            kept.append(name)
        else:
            carry.append(package)
            wanted = "; ".join(str(requirement) for requirement in package.requirements)
            reasons[name] = f"the target has {have[name]}; needed: {wanted}"
    return Plan(carry, kept, reasons)


def _pip(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def source_checkout() -> Path:
    """The source tree this ccq-eval runs from (its wheel is built from it)."""
    import ccq_eval

    folder = Path(ccq_eval.__file__).resolve().parent.parent
    if not (folder / "pyproject.toml").is_file():
        raise BadInput(f"ccq-eval runs from {folder}, not a source checkout: run `ccq-eval wheelhouse` from a clone "
                       "of the repository (pip install -e .)")
    return folder


def _fetch(package: Needed, target: Target, folder: Path, pip: Callable) -> None:
    """The target's wheel from the registry; failing that, a wheel built here from the source release, accepted
    only when it is pure Python (one built here for another Python or machine would not load there)."""
    platforms = [option for tag in target.platforms() for option in ("--platform", tag)]
    fetched = pip(["download", "-q", "--no-deps", "--only-binary=:all:", "--python-version", target.python,
                   "--implementation", "cp", *platforms, "-d", str(folder), package.pin()])
    if fetched.returncode == 0:
        return
    with tempfile.TemporaryDirectory() as scratch:
        built = pip(["wheel", "-q", "--no-deps", "-w", scratch, package.pin()])
        wheels = list(Path(scratch).glob("*.whl"))
        if built.returncode != 0 or not wheels:
            raise BadInput(f"{package.pin()}: no wheel for Python {target.python} on {target.machine}, and its "
                           f"source did not build here: {_last_line(fetched.stderr + built.stderr)}")
        if not all(wheel.name.endswith("-none-any.whl") for wheel in wheels):
            raise BadInput(f"{package.pin()}: no wheel for Python {target.python} on {target.machine}, and it "
                           "compiles code: build it on the target's Python and add it to the folder")
        for wheel in wheels:
            shutil.move(str(wheel), folder / wheel.name)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "pip said nothing"


def build(carry: list[Needed], target: Target, out: Path,
          pip: Callable[[list[str]], subprocess.CompletedProcess] = _pip) -> list[Path]:
    """Every wheel of ``carry`` into ``out``, which appears whole or not at all."""
    if out.exists() and any(out.iterdir()):
        raise BadInput(f"--out {out}: the folder exists and is not empty; name a new one")
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for package in carry:
            if package.name == ROOT:
                made = pip(["wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(scratch),
                            str(source_checkout())])
                if made.returncode != 0:
                    raise BadInput(f"ccq-eval's own wheel did not build: {_last_line(made.stderr)}")
            else:
                _fetch(package, target, scratch, pip)
        if out.exists():
            out.rmdir()
        scratch.rename(out)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return sorted(out.glob("*.whl"))
