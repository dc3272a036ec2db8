"""store/store.py: the Store is plain composition (no mixins), and every public operation of its parts is one of its
own methods, answered by that part."""

import inspect

from ccq_eval.store import Store
from ccq_eval.store.ingest import Ingest
from ccq_eval.store.reads import Reads
from ccq_eval.store.writes import Writes

PARTS = {"reads": Reads, "writes": Writes, "merging": Ingest}
INTERNAL = {"insert", "computed_for_key", "reuse_or_hold"}  # what the merging part uses of the writes


def public(cls) -> set[str]:
    return {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}


def test_the_store_is_composed_not_inherited():
    assert Store.__mro__ == (Store, object)
    for part in PARTS.values():
        assert public(part) - INTERNAL <= public(Store), part.__name__


def test_each_method_is_answered_by_its_part(tmp_path, monkeypatch):
    store = Store(tmp_path / "s.db")
    calls = []
    for attribute, part in PARTS.items():
        for name in public(part) - INTERNAL:
            monkeypatch.setattr(getattr(store, attribute), name, lambda *a, _n=name, **k: calls.append(_n))
    for name in sorted(set().union(*(public(p) for p in PARTS.values())) - INTERNAL):
        params = [p for p in inspect.signature(getattr(Store, name)).parameters.values()
                  if p.name != "self" and p.default is inspect.Parameter.empty]
        getattr(store, name)(*[None] * len(params))
        assert calls[-1] == name

