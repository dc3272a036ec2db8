"""benchmarks/zoo_levers.py: its documents say what the levers table says they are."""

import importlib.util
import random
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def levers():
    spec = importlib.util.spec_from_file_location("zoo_levers", ROOT / "benchmarks" / "zoo_levers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_pairs_document_asks_keys_it_gave_and_weighs_only_their_values():
    from ccq_eval import zoo_build as zb

    module, batches = levers(), zb.Batches(zb.TrainConfig())
    ids, mask = module.pairs_doc(batches, random.Random(0))
    text = batches.tokenizer.decode(ids[1:])
    given = dict(re.findall(r"^([a-z]+-[a-z]+): (\d{7})$", text.split("\n")[0] + "\n" + "\n".join(text.split("\n")[1:6]),
                            re.M))
    assert len(given) == 6
    answers = batches.tokenizer.decode([t for t, m in zip(ids, mask) if m])
    asked = re.findall(r"([a-z]+-[a-z]+): (\d{7})\.", text)
    assert len(asked) == 3 and answers == "".join(f"{value}." for _, value in asked)
    assert all(given[key] == value for key, value in asked)  # every answer is the value given for that key


def test_a_few_steps_of_each_lever_print_the_result_line(capsys):
    module = levers()
    for data in ("lookup", "pairs"):
        assert module.main(["--data", data, "--steps", "2", "--batch", "2", "--width", '{"num_heads": 2}']) == 0
        line = capsys.readouterr().out.strip().splitlines()[-1]
        assert line.startswith(f"RESULT family=gla data={data}") and "chance=2.015" in line
        assert float(re.search(r"answer_loss_last50=([\d.]+)", line).group(1)) > 2.015  # two steps learn nothing


def test_the_gdn_pairs_lookup_stage_is_the_lever_runs_batch_for_batch():
    """The zoo's GDN pair trains on the lever runs' data order: its lookup batches are theirs, step for step."""
    import torch

    from ccq_eval import zoo_build as zb

    config = zb.ZOO["gdn-tiny"].recipe()
    assert config.data_seed == zb.ZOO["ccq-gdn-tiny"].recipe().data_seed == zb.LEVERS_DATA_ORDER
    batches, module = zb.Batches(config), levers()
    for step in (0, 551, config.lookup_steps - 1):
        zoo_batch = batches.batch(step)
        lever_batch = module.batch(batches, "lookup", step, config.lookup_batch, config.answer_weight)
        assert all(torch.equal(a, b) for a, b in zip(zoo_batch, lever_batch))
    other = zb.Batches(zb.ZOO["gla-tiny"].recipe()).batch(0)
    assert not torch.equal(other[1], batches.batch(0)[1])  # the GLA pairs' order is another
