"""The package's shape: no import cycle (function-level imports included), a CLI that loads no
heavy library, one error base every input error derives from, a runner that knows only the suite
interface, and LongBench YAMLs that equal the ones generated from the task table."""

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ccq_eval"
REPO = PACKAGE.parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the ccq_eval modules it imports anywhere in its body (lazy imports count too)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        edges = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in files}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                for alias in node.names:  # `from pkg import submodule` depends on the submodule
                    target = f"{base}.{alias.name}"
                    edges.add(target if target in files else base)
        # importing a.b.c runs a/__init__.py and a/b/__init__.py first: a cycle through a package's __init__ counts
        parents = {".".join(e.split(".")[:i]) for e in edges for i in range(2, e.count(".") + 1)}
        graph[name] = {e for e in edges | parents if e in files and e != name and not name.startswith(e + ".")}
    return graph


def find_cycle(graph):
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_anywhere_in_the_package():
    graph = import_graph()
    assert len(graph) > 40 and "ccq_eval.suites.sniah.driver" in graph  # the walk saw the whole tree
    assert "ccq_eval.generation.text" in graph["ccq_eval.lm.wrapper"]  # and lazy imports count
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def modules_below_the_suites(graph) -> set[str]:
    """Every module a suite imports, directly or through others, outside suites/ itself."""
    suites = {m for m in graph if m.startswith("ccq_eval.suites")}
    below, todo = set(), [m for s in suites for m in graph[s] if m not in suites]
    while todo:
        module = todo.pop()
        if module not in below:
            below.add(module)
            todo += [m for m in graph[module] if m not in suites]
    return below


def arrows_back_up(graph) -> dict[str, set[str]]:
    """module below the suites -> the suites' modules it imports: an arrow that runs back up."""
    below = modules_below_the_suites(graph)
    return {m: up for m in below if (up := {t for t in graph[m] if t.startswith("ccq_eval.suites")})}


def test_no_module_the_suites_import_imports_a_suite():
    """report/ is a kit below the suites (Table, formats, the results snapshot, the label conventions) and a
    catalogue above them (catalogue/, view/): no arrow runs back up."""
    graph = import_graph()
    below = modules_below_the_suites(graph)
    assert {"ccq_eval.report.table", "ccq_eval.report.entries", "ccq_eval.report.labels", "ccq_eval.lm.harness"} <= below
    assert not below & {m for m in graph if m.startswith(("ccq_eval.catalogue", "ccq_eval.view"))}
    assert arrows_back_up(graph) == {}


def folder_graph(graph) -> dict[str, set[str]]:
    """The package's top-level folders (and modules) -> those their modules import: what a folder-level picture of
    the package draws."""
    def folder(module: str) -> str:
        return module.split(".")[1] if "." in module else module

    folders = {folder(m): set() for m in graph}
    for module, targets in graph.items():
        folders[folder(module)] |= {folder(t) for t in targets} - {folder(module)}
    return folders


def test_no_circle_between_the_packages_folders():
    """Every folder sits above or below another, never both: report's catalogue and viewer live above the suites
    (catalogue/, view/), the lm-eval results importer beside the runner (run/), and three roles for a family: models/
    (how a checkpoint loads and CCQ attaches) above ops/ (how reads compute: torch, Triton, naive) above families/
    (what the harness knows: plain rows)."""
    folders = folder_graph(import_graph())
    assert {"suites", "report", "catalogue", "view", "models", "families", "ops", "run"} <= set(folders)
    assert "family_models" not in folders
    assert find_cycle(folders) is None, " -> ".join(find_cycle(folders))
    assert "suites" in folders["catalogue"] and "report" in folders["suites"]
    assert "ops" in folders["models"] and "families" in folders["ops"] and "models" not in folders["ops"]
    assert find_cycle(folder_graph({"ccq_eval.a.x": {"ccq_eval.b.y"}, "ccq_eval.b.y": {"ccq_eval.a.z"},
                                    "ccq_eval.a.z": set()})) == ["a", "b", "a"]


def test_the_layering_check_finds_an_arrow_back_up():
    graph = {"ccq_eval.suites.a": {"ccq_eval.report.kit"}, "ccq_eval.report.kit": {"ccq_eval.report.deeper"},
             "ccq_eval.report.deeper": {"ccq_eval.suites.b"}, "ccq_eval.suites.b": set()}
    assert arrows_back_up(graph) == {"ccq_eval.report.deeper": {"ccq_eval.suites.b"}}


def test_each_rule_of_the_read_model_is_written_once():
    """The latest unit of a cell, the latest run of a label and the backbone pairing: one place each."""
    texts = {str(p.relative_to(REPO)): p.read_text() for p in PACKAGE.rglob("*.py")}
    rules = {r"\((?:u|unit)\.finished or \"\"\, (?:u|unit)\.id\)|\.seq is not None|ORDER BY (?:u\.)?seq|"
             r"sort_values\(\[\"finished\", \"unit_id\"\]\)\.groupby":
             "ccq_eval/report/results.py",
             r"latest run of a label wins": "ccq_eval/report/results.py",
             r"TRAINED_PREFIX\):\]": "ccq_eval/report/labels.py"}
    for pattern, home in rules.items():
        assert [path for path, text in texts.items() if re.search(pattern, text)] == [home], pattern


def test_drivers_are_given_what_they_need_as_arguments():
    """A driver reads its DriverInputs and the tokenizer or model it is handed, never the run's request or a plan
    that reaches back to the runner."""
    reaching = re.compile(r"\bplan\.|\.request\.|\bself\.plan\b")
    found = {str(p.relative_to(REPO)): reaching.search(p.read_text()).group()
             for p in (PACKAGE / "suites").rglob("*.py") if reaching.search(p.read_text())}
    assert found == {}
    assert reaching.search("data_dir = plan.request.data_dir") and not reaching.search("self.inputs.data_dir")


def test_the_runner_and_the_cli_know_suites_only_through_the_interface():
    graph = import_graph()
    users = ["ccq_eval.run.runner", "ccq_eval.catalogue", "ccq_eval.run.lm_eval_results",
             *(m for m in graph if m.startswith("ccq_eval.cli"))]
    assert len(users) > 10  # every command module
    for user in users:
        reached = {m for m in graph[user] if m.startswith("ccq_eval.suites.")}
        allowed = {"ccq_eval.suites.base", "ccq_eval.suites.outcomes", "ccq_eval.suites.driver"}
        assert reached <= allowed, (user, reached - allowed)  # flags, data fetch, tables: all through the registry


def test_the_lm_eval_adapter_knows_no_suite():
    """lm/ is generic: what one suite needs of decoding comes with its requests (generation/text.py), and nothing in
    lm/ imports a suite, names one, or replaces an lm-eval function."""
    graph = import_graph()
    for module in [m for m in graph if m.startswith("ccq_eval.lm")]:
        assert not {m for m in graph[module] if m.startswith("ccq_eval.suites")}, module
    words = re.compile(r"sniah|s-niah|longbench|longppl|samsum|needle|ruler", re.IGNORECASE)
    for path in (REPO / "ccq_eval" / "lm").glob("*.py"):
        text = path.read_text()
        assert not words.search(text), (path.name, words.search(text).group())
        assert not re.search(r"^\s*(hf|huggingface|lm_eval\.\w+)\.\w+\s*=", text, re.MULTILINE), path.name


def test_importing_the_cli_loads_no_heavy_library():
    code = ("import sys, ccq_eval.cli, ccq_eval.suites, ccq_eval.run.runner; "
            "print(sorted(m for m in ('torch', 'fla', 'transformers', 'lm_eval', 'datasets', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_every_input_error_derives_from_the_one_base():
    from ccq_eval.errors import BadInput, StoreWriteFailure

    errors = {"ccq_eval.suites.base": "SuiteError", "ccq_eval.store": "StoreError",
              "ccq_eval.models.loading": "ModelLoadError", "ccq_eval.suites.sniah.haystack": "HaystackError",
              "ccq_eval.suites.sniah.data": "SniahError", "ccq_eval.suites.longppl.corpora": "CorpusError",
              "ccq_eval.suites.longbench.data": "LongBenchError", "ccq_eval.suites.lm.data": "LmDataError"}
    for module, name in errors.items():
        assert issubclass(getattr(importlib.import_module(module), name), BadInput), name
    from ccq_eval.store import StoreWriteError

    assert issubclass(StoreWriteError, StoreWriteFailure) and not issubclass(StoreWriteError, BadInput)


def test_a_new_suites_own_error_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    """The CLI catches the base, not a list: an error class it has never heard of still gets the contract."""
    from ccq_eval.cli import main
    from ccq_eval.errors import BadInput
    from ccq_eval.suites import SUITES
    from ccq_eval.suites.sniah import SniahSuite

    class BrandNewSuiteError(BadInput):
        pass

    class Failing:
        def __init__(self, inputs):
            pass

        def check_inputs(self):
            raise BrandNewSuiteError("--data-dir: the frobnicator data is missing; run `make frob`")

    monkeypatch.setitem(SUITES, "sniah", SniahSuite(**{**SUITES["sniah"].__dict__}))
    monkeypatch.setattr(SniahSuite, "driver", lambda self, inputs: Failing(inputs))
    store = tmp_path / "s.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "ccq-eval: error: --data-dir: the frobnicator data is missing; run `make frob`"
    assert not store.exists()


def test_an_unknown_suite_is_refused_not_mapped_to_another():
    from ccq_eval.suites import SuiteError, get_suite

    with pytest.raises(SuiteError, match="unknown suite; available: lm, sniah, multi_niah, ruler, recall, babilong, longppl, "
                                         "longbench, efficiency, all"):
        get_suite("niah")


def test_a_suite_registered_through_the_interface_runs_end_to_end(monkeypatch, tmp_path):
    """The runner needs nothing but the interface: a toy suite with its own driver lands in the store."""
    from ccq_eval.run import RunRequest, run_suite
    from ccq_eval.store import Store
    from ccq_eval.suites import SUITES
    from tests.oracle import oracle_loader, scripted_suite

    monkeypatch.setitem(SUITES, "toy", scripted_suite("toy", ("toy_a", "toy_b"), (8, 16)))
    store = tmp_path / "s.db"
    request = RunRequest(model="oracle", suite="toy", store=str(store), label="toy")
    assert run_suite(request, oracle_loader(tmp_path), out=lambda *_: None) == 0
    rows = Store(store, readonly=True).connection.query("SELECT task, context_length, value FROM metrics ORDER BY task, context_length")
    assert [tuple(r) for r in rows] == [("toy_a", 8, 8.0), ("toy_a", 16, 16.0), ("toy_b", 8, 8.0), ("toy_b", 16, 16.0)]


def suites_with_task_files() -> list[str]:
    from ccq_eval.suites import SUITES

    return [name for name, suite in SUITES.items() if suite.task_files()]


def test_every_task_folder_belongs_to_a_suite_that_generates_it():
    folders = sorted(p.name for p in (REPO / "tasks").iterdir() if p.is_dir() and not p.name.startswith("__"))
    assert folders == sorted(suites_with_task_files()) and len(folders) == 7


@pytest.mark.parametrize("suite", suites_with_task_files())
def test_committed_task_yamls_equal_the_generated_ones(suite):
    """tasks/<suite>/ holds the shared _<suite>_yaml, utils.py and exactly the YAMLs the suite's table generates: one a
    task it runs, or the tasks it names as its plugins'."""
    from ccq_eval.suites import get_suite

    expected = get_suite(suite).task_files()
    carried = get_suite(suite).plugin_tasks or get_suite(suite).all_tasks
    assert set(expected) == {f"{task}.yaml" for task in carried}
    committed = {p.name: p.read_text() for p in (REPO / "tasks" / suite).glob("*.yaml")}
    assert committed == expected


def test_the_generated_yaml_carries_the_tables_values():
    """A change to a table shows up in its YAML (the comparison above can fail)."""
    import dataclasses

    from ccq_eval.suites import get_suite
    from ccq_eval.suites.longbench import tasks as longbench_tasks

    changed = dataclasses.replace(longbench_tasks.TASKS["qasper"], max_gen=999)
    assert "max_gen_toks: 999" in longbench_tasks.generation_yaml(changed)
    yaml = get_suite("longbench").task_files()["longbench_qasper.yaml"]
    assert "max_gen_toks: 128\n" in yaml and "longbench_key: qasper\n" in yaml
    assert "sniah_task: sniah_3\n" in get_suite("sniah").task_files()["sniah_3.yaml"]
    assert "corpus: essays\n" in get_suite("longppl").task_files()["longppl_essays.yaml"]


def test_a_scoped_environment_variable_is_restored_set_or_unset(monkeypatch):
    import os

    from ccq_eval.scoped_env import scoped_environ

    monkeypatch.setenv("CCQ_TEST_SET", "before")
    monkeypatch.delenv("CCQ_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError):
        with scoped_environ(CCQ_TEST_SET="inside", CCQ_TEST_UNSET="inside"):
            assert os.environ["CCQ_TEST_SET"] == os.environ["CCQ_TEST_UNSET"] == "inside"
            raise RuntimeError
    assert os.environ["CCQ_TEST_SET"] == "before" and "CCQ_TEST_UNSET" not in os.environ


SQL = re.compile(r"\b(SELECT\s+[\w*]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX|UNIQUE)|"
                 r"PRAGMA\s+\w)")  # SQL is written in capitals here; prose ("select the latest run") is not


def test_sql_is_written_only_in_the_store_package():
    """Everything else reads through the store's named reads (store/reads.py)."""
    outside = {str(p.relative_to(REPO)): SQL.search(p.read_text()).group() for p in PACKAGE.rglob("*.py")
               if "store" not in p.relative_to(PACKAGE).parts[:1] and SQL.search(p.read_text())}
    assert outside == {}
    assert SQL.search((PACKAGE / "store" / "reads.py").read_text())  # the pattern finds what the store writes
    assert SQL.search('rows = store.query("SELECT r.id FROM runs r")') and not SQL.search("select the latest run")


def long_functions(limit: int) -> list[str]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= limit:
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)")
    return found


def test_no_function_in_the_package_is_longer_than_60_lines():
    assert long_functions(60) == []
    assert long_functions(25)  # the measure sees functions (some are longer than 25 lines)


STAND_IN_TELLS = re.compile(r"hasattr\(\s*\w*lm\w*\s*,|isinstance\([^)]*CCQEvalLM|getattr\([^)]*\blm\b[^)]*,\s*[\"'](rank|world_size|budget)"
                            r"|CCQ_EVAL_RANK_LOG|scripted|stand-in|test LM|tests?\.oracle", re.IGNORECASE)


def test_no_production_module_asks_what_kind_of_model_it_holds():
    """A driver asks the evaluand's interfaces (generation/generator.py, lm/adapter.py), never whether the model is the real adapter or
    a test's stand-in; the tests' stand-ins implement the same interface (tests/oracle.py)."""
    told = {str(p.relative_to(REPO)): STAND_IN_TELLS.search(p.read_text()).group() for p in PACKAGE.rglob("*.py")
            if STAND_IN_TELLS.search(p.read_text())}
    assert told == {}
    for tell in ('scripted = not hasattr(lm, "budget")', "if not isinstance(lm, CCQEvalLM):",
                 'getattr(plan.evaluand.lm, "rank", 0)', 'os.environ.get("CCQ_EVAL_RANK_LOG")'):
        assert STAND_IN_TELLS.search(tell), tell


def test_the_stand_ins_and_the_real_adapter_implement_the_interfaces(tmp_path):
    from ccq_eval.generation.generator import EngineGenerator, Generator
    from ccq_eval.lm.adapter import ModelAdapter
    from tests.oracle import OracleLM

    assert isinstance(OracleLM(), ModelAdapter) and isinstance(OracleLM(), Generator) and not OracleLM().scores_text
    assert not isinstance(object(), ModelAdapter) and not isinstance(object(), Generator)
    from ccq_eval.lm.wrapper import CCQEvalLM

    assert all(hasattr(CCQEvalLM, member) for member in ("budget", "rank", "world_size"))
    assert not hasattr(CCQEvalLM, "generate")  # the engine is reached through the evaluand, not lm-eval's class
    assert EngineGenerator.scores_text


def test_the_lm_eval_bridge_imports_only_the_engines_types():
    """lm/ is lm-eval's side alone: of generation/ it knows the request and text types, and the engine reaches it as
    a function it is handed (run/evaluand.py builds both)."""
    graph = import_graph()
    reached = {t for m in graph if m.startswith("ccq_eval.lm") for t in graph[m] if t.startswith("ccq_eval.generation")}
    assert reached <= {"ccq_eval.generation", "ccq_eval.generation.request", "ccq_eval.generation.text"}, reached
    assert "ccq_eval.generation.text" in reached  # the check sees lm/'s imports


def test_each_protocol_number_is_one_constant():
    """The lm window and S-NIAH's generation budget are stated once (their protocol.py) and read from there: by
    the drivers, the lm-eval ingest, the generated task YAMLs and the CLI's help."""
    from ccq_eval.suites import get_suite
    from ccq_eval.suites.lm.protocol import WINDOW
    from ccq_eval.suites.sniah.protocol import TOKENS_TO_GENERATE

    bare = {"2048": re.compile(r"(?<![\w.])2048(?![\w.])"), "128": re.compile(r"(?<![\w.])128(?![\w.])")}
    where = {"2048": ["suites/lm", "interchange"], "128": ["suites/sniah", "cli"]}
    for number, folders in where.items():
        for folder in folders:
            for path in (PACKAGE / folder).rglob("*.py"):
                if path.name == "protocol.py":
                    continue
                code = "\n".join(line.split("#")[0] for line in path.read_text().splitlines())  # comments may say it
                code = code.replace("getrandbits(128)", "")  # a UUID's bits, not the budget
                assert not bare[number].search(code), (path.name, number)
    assert get_suite("lm").default_lengths == (WINDOW,)
    assert f"max_gen_toks: {TOKENS_TO_GENERATE}\n" in get_suite("sniah").task_files()["sniah_1.yaml"]
    assert "max_gen_toks" not in (REPO / "tasks" / "sniah" / "_sniah_yaml").read_text()
    assert f"prompt + {TOKENS_TO_GENERATE} generated tokens" in get_suite("sniah").length_means
