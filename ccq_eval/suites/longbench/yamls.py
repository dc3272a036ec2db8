"""The 14 task YAMLs of tasks/longbench, generated from the task table (lm-eval's own
``_generate_config.py`` habit). A test checks that the committed files equal these.

    python -m ccq_eval.suites.longbench.yamls tasks/longbench     # rewrite them after editing tasks.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from ccq_eval.suites.longbench.tasks import TASKS, LongBenchTask

HEADER = "# Generated from ccq_eval/suites/longbench/tasks.py by yamls.py; edit the table, not this file.\n"


def task_yaml(task: LongBenchTask) -> str:
    return (f"{HEADER}include: _longbench_yaml\n"
            f"task: longbench_{task.key}\n"
            "custom_dataset: !function utils.dataset\n"
            "dataset_kwargs:\n"
            f"  longbench_key: {task.key}\n"
            "generation_kwargs:\n"
            f"  max_gen_toks: {task.max_gen}\n"
            "  do_sample: false\n"
            "  temperature: 0.0\n"
            "  until: []\n"
            + ('  eos_strings: ["\\n"]\n' if task.stop_at_newline else "")
            + "metadata:\n"
            f"  version: {task.version}\n")


def generated() -> dict[str, str]:
    """file name -> content, for every task in the table."""
    return {f"longbench_{task.key}.yaml": task_yaml(task) for task in TASKS.values()}


def write(folder: Path) -> list[Path]:
    paths = []
    for name, text in generated().items():
        (folder / name).write_text(text)
        paths.append(folder / name)
    return paths


if __name__ == "__main__":
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "tasks/longbench")):
        print(path)
