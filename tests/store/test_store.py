"""store/store.py: the Store is plain composition (no mixins, no forwards): ``Store(path)`` opens a store and holds
its parts, and a caller names the part that answers (``store.reads.units()``, ``store.writes.write_unit(...)``,
``store.merging.ingest(...)``, ``store.connection.query(...)``)."""

from pathlib import Path

from ccq_eval.store import Store
from ccq_eval.store.connection import Connection
from ccq_eval.store.ingest import Ingest
from ccq_eval.store.reads import Reads
from ccq_eval.store.writes import Writes

ROOT = Path(__file__).resolve().parents[2]
PARTS = {"connection": Connection, "reads": Reads, "writes": Writes, "merging": Ingest}


def test_the_store_holds_its_parts_and_nothing_else(tmp_path):
    assert Store.__mro__ == (Store, object)
    store = Store(tmp_path / "s.db")
    assert {name: type(getattr(store, name)) for name in PARTS} == PARTS
    members = {n for n in dir(store) if not n.startswith("_")}
    assert members == {*PARTS, "path", "close"}, members
    assert store.path == str(tmp_path / "s.db") or Path(store.path) == tmp_path / "s.db"
    store.close()


def test_no_module_outside_the_store_calls_a_forward():
    """What the parts offer is reached through them: a call such as ``store.units(`` or ``self.store.write_unit(``
    (a Store's method that is its part's) appears nowhere outside store/."""
    import re

    offered = {n for part in PARTS.values() for n in vars(part) if not n.startswith("_")} - {"close", "path"}
    call = re.compile(r"\b(?:store|self\.store|narrowed|target|source|other|read|old|migrated)\.(\w+)\(")
    found = []
    for folder in ("ccq_eval", "benchmarks"):  # the product (a test calling one fails by itself: there is none)
        for path in (ROOT / folder).rglob("*.py"):
            if "store" in path.relative_to(ROOT).parts[1:2] and folder == "ccq_eval":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                found += [f"{path.relative_to(ROOT)}:{number}: {m}" for m in call.findall(line) if m in offered]
    assert found == [], found[:20]
