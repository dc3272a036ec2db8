"""`ccq-eval wheelhouse`: the wheels a machine without network needs to run ccq-eval (ccq_eval/wheelhouse.py), made
here, where the registry is reachable, for the target's Python; the target's torch and triton stay its own."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.errors import BadInput
from ccq_eval.output_paths import check_output_folder

NAME = "wheelhouse"


def add(subparsers) -> None:
    command = subparsers.add_parser(NAME, help="download the wheels a machine without network needs to run ccq-eval "
                                               "(its torch and triton stay its own)")
    command.add_argument("--out", required=True, help="a new folder for the wheels")
    command.add_argument("--python", default="3.12", help="the target's Python, major.minor (default 3.12)")
    command.add_argument("--machine", default="x86_64", choices=("x86_64", "aarch64"),
                         help="the target's processor (default x86_64)")
    command.add_argument("--have", help="the target's `pip list --format=freeze` saved to a file: what it holds at a "
                                        "version ccq-eval admits is not carried (default: carry everything)")


def handle(args) -> int:
    from ccq_eval.wheelhouse import Target, build, parse_have, parse_target_python, plan, runtime_closure

    target = Target(python=parse_target_python(args.python).python, machine=args.machine)
    check_output_folder(Path(args.out), "--out")
    have = parse_have(_read(args.have), f"--have {args.have}") if args.have else {}
    chosen = plan(runtime_closure(target), have)
    for name, reason in chosen.reasons.items():
        print(f"carrying {name}: {reason}")
    print(f"{len(chosen.carry)} wheels for Python {target.python} on {target.machine}; kept from the target: "
          f"{', '.join(chosen.kept)}", flush=True)
    wheels = build(chosen.carry, target, Path(args.out))
    megabytes = sum(wheel.stat().st_size for wheel in wheels) / 2**20
    print(f"wrote {len(wheels)} wheels ({megabytes:.1f} MiB) to {args.out}; on the target:\n"
          f"    python -m pip install --no-index --no-deps {args.out}/*.whl")
    return 0


def _read(path: str) -> str:
    """The file as text: UTF-8 (a BOM allowed), or UTF-16 with its BOM (what Windows PowerShell's `>` writes)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise BadInput(f"--have {path}: {exc.strerror}; save the target's `pip list --format=freeze` there") from exc
    encoding = "utf-16" if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else "utf-8-sig"
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        raise BadInput(f"--have {path}: not UTF-8 or UTF-16 text; save the target's `pip list --format=freeze` there "
                       "as UTF-8 (PowerShell: `pip list --format=freeze | Out-File -Encoding utf8 FILE`)")
    return text
