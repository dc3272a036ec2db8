"""One home per model family: the README's and docs' model tables are the ones the homes generate, a family added as
one module shows in the registry, the tables and the cache count, and the registry reads no heavy library."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ccq_eval import families
from ccq_eval.families import tables

REPO = Path(__file__).resolve().parents[2]

NEW_FAMILY = '''
from ccq_eval.families.base import Family, Patch


def cache_bytes(config, length, dtype, ccq):
    return config["num_hidden_layers"] * 1000 + (1 if ccq else 0)


FAMILY = Family(model_type="toy_linear", name="ToyLinear", cpu=True, ccq="ccq_toy_linear", ccq_name="CCQ-Toy",
                training_free=True, cache_bytes=cache_bytes, doc_note="a toy",
                patches=(Patch("fla.layers.toy", "chunk_toy", "ccq_eval.ops.shared_cpu_forms:swish"),))
'''


@pytest.mark.parametrize("name", sorted(tables.TABLES))
def test_the_committed_model_tables_are_the_generated_ones(name):
    path = REPO / "README.md" if name == "README.md" else REPO / "docs" / name
    text = path.read_text()
    assert tables.with_table(text, tables.markdown(tables.TABLES[name]()), name) == text


def test_a_table_without_markers_is_refused():
    with pytest.raises(ValueError, match="no generated families table"):
        tables.with_table("# nothing here\n", "| a |\n", "x.md")


def test_a_family_is_one_module(tmp_path, monkeypatch):
    (tmp_path / "toy_linear.py").write_text(textwrap.dedent(NEW_FAMILY))
    monkeypatch.setattr(families, "__path__", [*families.__path__, str(tmp_path)])
    families.fla_families.cache_clear()
    families.ccq_families.cache_clear()
    try:
        assert list(families.fla_families())[-1] == "toy_linear"
        assert families.family("ccq_toy_linear").name == "CCQ-Toy"
        assert families.family_name({"model_type": "toy_linear"}) == "ToyLinear"
        assert families.cache_bytes({"model_type": "ccq_toy_linear", "num_hidden_layers": 3}, 8, "float32") == 3001
        assert "| ToyLinear (`toy_linear`) | ccq-eval's torch backend | fla's kernels | training-free: " \
               "`ccq_toy_linear` (a toy) |" in tables.markdown(tables.docs_rows())
        assert "`ccq_toy_linear`" in tables.markdown(tables.readme_rows())
        assert any(p.symbol == "chunk_toy" for p in families.cpu_patches())
    finally:
        monkeypatch.undo()
        families.fla_families.cache_clear()
        families.ccq_families.cache_clear()
        sys.modules.pop("ccq_eval.families.toy_linear", None)
    assert "toy_linear" not in families.fla_families()


def test_the_registry_loads_no_heavy_library():
    code = ("import sys; from ccq_eval import families; families.fla_families(); families.cache_bytes("
            "{'model_type': 'gla', 'num_hidden_layers': 1, 'hidden_size': 8, 'num_heads': 2, 'expand_k': 1, "
            "'expand_v': 1}, 16, 'float32'); print(sorted(m for m in ('torch', 'fla', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_attention_models_count_keys_and_values_whoever_defines_them():
    config = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2}
    expected = 2 * 2 * 2 * 16 * 100 * 2  # layers x (k, v) x kv heads x head_dim x length x bf16
    for model_type in ("transformer", "llama", "qwen3", "gpt_neox"):
        assert families.cache_bytes({**config, "model_type": model_type}, 100, "bfloat16") == expected
    assert families.cache_bytes({"model_type": "gpt2", "n_layer": 2}, 100, "bfloat16") is None  # fields it lacks
    assert families.cache_bytes({**config, "model_type": "llama", "attn": {"layers": [0]}}, 100, "bfloat16") is None


@pytest.mark.parametrize("kind,layout,chunks", [("gla", "packed", True), ("ccq_gated_deltanet", "packed", True),
                                                ("mamba2", "separate", False), ("gdn_hybrid", "padded", True),
                                                ("transformer", "padded", True), ("llama", "padded", True)])
def test_a_models_cache_facts_are_its_familys(kind, layout, chunks):
    """generation's layout and perplexity's chunking read the family's row (a hybrid's attention layers pad it)."""
    from ccq_eval.generation.layouts import layout_name
    from ccq_eval.models.capabilities import takes_cached_chunks
    from tests.helpers import tiny_model

    model = tiny_model(kind)
    assert layout_name(model) == layout and takes_cached_chunks(model) is chunks


def test_a_family_that_states_nothing_gets_the_safe_paths_with_a_note(monkeypatch, caplog):
    import dataclasses
    import logging

    from ccq_eval.generation import layouts
    from ccq_eval.models.capabilities import takes_cached_chunks
    from tests.helpers import tiny_model

    model = tiny_model("gla")
    silent = dataclasses.replace(families.family("gla"), cache_layout="", cached_chunks=None)
    monkeypatch.setattr(families, "family_of", lambda m: silent)
    monkeypatch.setattr(layouts, "_noted", set())
    with caplog.at_level(logging.WARNING):
        assert layouts.layout_name(model) == "padded" and layouts.layout_name(model) == "padded"
        assert takes_cached_chunks(model) is False
    notes = [r.getMessage() for r in caplog.records]
    assert sum("states no cache layout" in n for n in notes) == 1  # once a model_type
    assert any("set Family.cached_chunks" in n for n in notes)
    monkeypatch.setattr(families, "family_of", lambda m: dataclasses.replace(silent, cache_layout="stacked"))
    with pytest.raises(ValueError, match="cache_layout 'stacked' is not one of"):
        layouts.layout_name(model)


@pytest.mark.parametrize("kind", ["gla", "transformer"])
def test_layout_for_resolves_the_family_once(kind, monkeypatch):
    import ccq_eval.families as families
    from ccq_eval.generation.layouts import layout_for
    from tests.helpers import tiny_model

    model = tiny_model(kind)
    asked = []
    resolve = families.family_of
    monkeypatch.setattr(families, "family_of", lambda m: (asked.append(m), resolve(m))[1])
    layout_for(model)
    assert len(asked) == 1
