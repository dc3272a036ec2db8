"""``--model ORG/NAME[@REVISION]``: a checkpoint on the Hugging Face Hub, fetched with huggingface_hub's
``snapshot_download`` (config, tokenizer and safetensors only; pickled weights only with --allow-pickle)
into the HF cache, or read from that cache when ``HF_HUB_OFFLINE=1``. The resolved commit is part of the
run's provenance."""

from __future__ import annotations

import contextlib
import logging
import re
from pathlib import Path

from ccq_eval.data.hub import COMMIT, HubError, hub_errors
from ccq_eval.models.file_limits import is_plain_file_name, oversized

HUB_SPEC = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?")
CONFIG_AND_TOKENIZER = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                        "special_tokens_map.json", "added_tokens.json", "tokenizer.model", "vocab.json", "merges.txt")
SAFETENSORS = ("*.safetensors", "model.safetensors.index.json")
PICKLE = ("pytorch_model*.bin", "pytorch_model.bin.index.json")


@contextlib.contextmanager
def _quiet_when_offline(offline: bool):
    """Offline, huggingface_hub says it "could not reach the Hub" and draws a progress bar over files it only finds
    in its cache: expected there, and two more lines above any error; silenced for the block."""
    if not offline:
        yield
        return
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    hub_log = logging.getLogger("huggingface_hub")
    level, bars = hub_log.level, not are_progress_bars_disabled()
    hub_log.setLevel(logging.ERROR)
    disable_progress_bars()
    try:
        yield
    finally:
        hub_log.setLevel(level)
        if bars:
            enable_progress_bars()


def is_hub_spec(spec: str) -> bool:
    """ORG/NAME[@REV] that is not a path here (a folder of that name wins)."""
    local = Path(spec.split("@")[0]).expanduser()
    return (not spec.startswith((".", "/", "~")) and HUB_SPEC.fullmatch(spec) is not None
            and not local.exists() and not local.is_symlink())  # a link here, even a broken one, is a local path


def snapshot(spec: str, allow_pickle: bool) -> tuple[Path, dict]:
    """(the snapshot folder in the HF cache, {repo, revision, commit}) for ORG/NAME[@REV]."""
    import huggingface_hub.constants as constants
    from huggingface_hub import HfApi, snapshot_download

    match = HUB_SPEC.fullmatch(spec)
    repo, revision = match["repo"], match["revision"] or "main"
    patterns = [*CONFIG_AND_TOKENIZER, *SAFETENSORS, *(PICKLE if allow_pickle else ())]
    with hub_errors("model", repo, revision):
        # the commit names a folder of the HF cache (snapshots/<commit>): it is checked before any path is
        # built from it (the hub's answer, or the cache's refs file when offline)
        with _quiet_when_offline(constants.HF_HUB_OFFLINE):
            resolved = HfApi().resolve_revision(repo, revision=revision)
        if not COMMIT.fullmatch(resolved.resolved or ""):
            raise HubError(f"model {repo}@{revision}: the hub gave {str(resolved.resolved)[:60]!r} as its commit, not a "
                           "40-digit hex sha; nothing was downloaded; check HF_ENDPOINT and any proxy in between")
        if not constants.HF_HUB_OFFLINE:  # metadata files are read whole: sizes checked before any download
            planned = snapshot_download(repo, revision=resolved, allow_patterns=patterns, dry_run=True)
            outside = next((f.filename for f in planned if not is_plain_file_name(f.filename)), None)
            if outside is not None:  # a name such as ../../x.safetensors would be written outside the snapshot
                raise HubError(f"model {repo}@{revision}: the repository lists {outside!r}, a file outside its own "
                               "folder; nothing was downloaded; is it the repository you meant?")
            said = next((s for f in planned if (s := oversized(f.filename, f.file_size))), None)
            if said is not None:
                raise HubError(f"model {repo}@{revision}: {said}; nothing was downloaded; is it a causal-LM checkpoint?")
        with _quiet_when_offline(constants.HF_HUB_OFFLINE):
            folder = Path(snapshot_download(repo, revision=resolved, allow_patterns=patterns))
    return folder, {"repo": repo, "revision": revision, "commit": folder.name,
                    "offline": bool(constants.HF_HUB_OFFLINE), "endpoint": constants.ENDPOINT}
