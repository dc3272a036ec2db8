"""Load a checkpoint folder into (model, tokenizer, provenance), refusing anything unsafe or mismatched.

Safetensors only unless the caller opts in to pickle; ``trust_remote_code`` stays off (the model
families are registered by ccq_eval itself). Every user mistake is a ``ModelLoadError`` with a
one-line message that names the input and the fix.
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
import os
from typing import Any, NamedTuple

import torch

from ccq_eval.data.cache import file_sha256
from ccq_eval.families import Family, family, family_name, fla_families
from ccq_eval.models.capabilities import learned_positions
from ccq_eval.models.file_limits import first_oversized, is_plain_file_name
from ccq_eval.models.load_errors import ModelLoadError
from ccq_eval.models.weight_shapes import check_config_against_weights


ZOO_DIR = Path(__file__).resolve().parent.parent / "zoo"  # the shipped zoo; $CCQ_EVAL_ZOO points elsewhere


def zoo_dir() -> Path:
    return Path(os.environ["CCQ_EVAL_ZOO"]) if os.environ.get("CCQ_EVAL_ZOO") else ZOO_DIR
SAFETENSORS_FILES = ("model.safetensors", "model.safetensors.index.json")
PICKLE_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
# config fields that are sizes: each must be a positive integer where present
SIZE_FIELDS = ("hidden_size", "num_hidden_layers", "num_heads", "num_attention_heads", "num_key_value_heads",
               "head_dim", "intermediate_size", "vocab_size", "max_position_embeddings")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16, "float64": torch.float64}




class LoadedModel(NamedTuple):
    model: torch.nn.Module
    tokenizer: Any
    provenance: dict


def resolve_spec(spec: str, allow_pickle: bool = False) -> tuple[Path, dict | None]:
    """(folder, hub record or None): a checkpoint folder, ``zoo:<name>`` for a model shipped in
    ``ccq_eval/zoo/``, or ``ORG/NAME[@REVISION]`` on the Hugging Face Hub (hub_checkpoint.py)."""
    from ccq_eval.models.hub_checkpoint import is_hub_spec, snapshot

    if spec.startswith("zoo:"):
        name, folder = spec[4:], zoo_dir()
        if folder.exists() and not folder.is_dir():
            raise ModelLoadError(f"model {spec!r}: the zoo folder {str(folder)!r} (CCQ_EVAL_ZOO) is a file; point "
                                 "CCQ_EVAL_ZOO at a folder of zoo models, or unset it")
        available = sorted(p.name for p in folder.iterdir() if (p / "config.json").is_file()) if folder.exists() else []
        if name not in available:
            raise ModelLoadError(f"model {spec!r}: no zoo model of that name; available: {', '.join(available) or 'none'}")
        return folder / name, None
    if is_hub_spec(spec):
        folder, record = snapshot(spec, allow_pickle)
        if not (folder / "config.json").is_file():
            raise ModelLoadError(f"model {spec!r}: the repository has no config.json at {record['commit'][:12]}; "
                                 "is it a causal-LM checkpoint?")
        if not allow_pickle and not any(folder.glob("*.safetensors")):
            raise ModelLoadError(f"model {spec!r}: the repository has no safetensors weights at {record['commit'][:12]}; "
                                 "if it has pytorch_model.bin, pass --allow-pickle (it runs pickle code: only for "
                                 "repositories you trust)")
        return folder, record
    path = Path(spec).expanduser()
    if path.is_symlink() and not path.exists():
        raise ModelLoadError(f"model {spec!r}: a symbolic link to {os.readlink(path)!r}, which does not exist; point "
                             "it at the checkpoint folder (or remove it to mean the hub repository of that name)")
    if not path.exists():
        raise ModelLoadError(f"model {spec!r}: no such path; pass a checkpoint folder containing config.json, "
                             "zoo:<name>, or ORG/NAME[@REVISION] on the Hugging Face Hub")
    if not path.is_dir():
        raise ModelLoadError(f"model {spec!r}: is a file; pass the checkpoint folder that contains config.json")
    return path, None


def _read_config(path: Path) -> dict:
    config_file = path / "config.json"
    if not config_file.is_file():
        raise ModelLoadError(f"model {str(path)!r}: no config.json; a checkpoint folder needs config.json next to its weights")
    try:
        config = json.loads(config_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"model {str(path)!r}: config.json is not valid JSON ({exc.__class__.__name__}); re-save the checkpoint") from exc
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str) or not model_type:
        raise ModelLoadError(f"model {str(path)!r}: config.json has no model_type; re-save the checkpoint with save_pretrained")
    for key in SIZE_FIELDS:  # a zero or negative size would fail deep inside the model's constructor
        value = config.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ModelLoadError(f"model {str(path)!r}: config.json has {key} = {value!r}; it must be a positive "
                                 "integer (re-save the checkpoint's config)")
    return config


def _read_index(path: Path, name: str) -> list[str]:
    """The shard files a *.index.json lists, each inside the checkpoint folder."""
    try:
        weight_map = json.loads((path / name).read_text())["weight_map"]
        shards = sorted(set(weight_map.values()))
    except (ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError) as exc:
        raise ModelLoadError(f"model {str(path)!r}: {name} is not a weight index (JSON with a 'weight_map' of "
                             f"tensor -> shard file; {exc.__class__.__name__}); re-download the checkpoint") from exc
    for shard in shards:
        if not is_plain_file_name(shard):
            raise ModelLoadError(f"model {str(path)!r}: {name} names a shard outside the checkpoint folder "
                                 f"({shard!r}); refusing to read it")
    return shards


def weight_files(path: Path, allow_pickle: bool) -> list[Path]:
    for names, is_pickle in ((SAFETENSORS_FILES, False), (PICKLE_FILES, True)):
        for name in names:
            if not (path / name).exists():
                continue
            if is_pickle and not allow_pickle:
                raise ModelLoadError(f"model {str(path)!r}: weights are pickle ({name}), which can run code; convert them to "
                                     "safetensors, or opt in with allow_pickle=True (--allow-pickle) if you trust the file")
            if name.endswith(".index.json"):
                shards = _read_index(path, name)
                missing = [s for s in shards if not (path / s).exists()]
                if missing:
                    raise ModelLoadError(f"model {str(path)!r}: weight shard {missing[0]} listed in {name} is missing; re-download the checkpoint")
                files = [path / s for s in shards]
            else:
                files = [path / name]
            odd = [f.name for f in files if not f.is_file()]  # a folder or a device where a weights file belongs
            if odd:
                raise ModelLoadError(f"model {str(path)!r}: {odd[0]} is not a regular file; re-download or re-save "
                                     "the checkpoint")
            return files
    raise ModelLoadError(f"model {str(path)!r}: no weights (model.safetensors); save the model with save_pretrained")


PROBE_TEXT = "The special magic number for quiet-river is 4417."


def check_tokenizer(tokenizer, where: str) -> None:
    """What every suite's length fitting relies on, refused up front in one line: text becomes tokens (a
    tokenizer that encodes everything to nothing would make every length search run forever), and there is
    a BOS or EOS token (each scored sequence starts with one; batches pad with EOS when there is no PAD)."""
    try:
        ids = tokenizer(PROBE_TEXT, add_special_tokens=False)["input_ids"]
    except Exception as exc:  # noqa: BLE001 - a broken tokenizer raises anything
        raise ModelLoadError(f"model {where!r}: the tokenizer cannot encode text ({exc.__class__.__name__}); save a "
                             "working tokenizer with the checkpoint") from exc
    if len(ids) == 0:
        raise ModelLoadError(f"model {where!r}: the tokenizer encodes text to no tokens; save the tokenizer the "
                             "model was trained with")
    if tokenizer.bos_token_id is None and tokenizer.eos_token_id is None:
        raise ModelLoadError(f"model {where!r}: the tokenizer has neither a BOS nor an EOS token; set eos_token in "
                             "tokenizer_config.json (scored sequences start with one, batches pad with it)")


def _unreadable_pickle(files: list[Path]) -> tuple[str, str] | None:
    """(file name, why) for the first pickle weights file torch cannot read, or None (safetensors, or readable)."""
    for file in files:
        if file.suffix != ".bin":
            continue
        try:
            torch.load(file, map_location="meta", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - torch raises several types for a file that is no pickle
            text = str(exc).strip()
            return file.name, text.splitlines()[0] if text else exc.__class__.__name__
    return None


def weights_sha256(files: list[Path]) -> str:
    """One digest over every weight file, in order (a sharded checkpoint: its shards' bytes as one)."""
    return file_sha256(*files)


def _pick_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as exc:
        raise ModelLoadError(f"device {device!r}: not a torch device; use auto, cpu or cuda") from exc
    if resolved.type not in ("cpu", "cuda"):  # fla's kernels and the CPU backend cover these two
        raise ModelLoadError(f"device {device!r}: not supported (fla's kernels run on CUDA, the torch backend on "
                             "the CPU); use auto, cpu or cuda[:N]")
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"device {device!r}: CUDA is not available on this machine; use --device cpu")
    return resolved


def _pick_dtype(dtype, device: torch.device) -> torch.dtype:
    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32  # CPU bf16 is slow and lossy
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise ModelLoadError(f"dtype {dtype!r}: unknown; use one of {', '.join(sorted(DTYPES))}")
    return DTYPES[dtype]


def model_family(path: Path, raw: dict, device: torch.device, dtype: torch.dtype, ccq_overrides: dict | None) -> Family:
    """The checkpoint's family (ccq_eval/families/), after refusing what cannot run as asked: a model_type
    neither fla nor transformers defines (remote code is never run), one without a causal-LM class,
    an fla family whose ops the CPU backend lacks, CCQ options where CCQ has no read to attach to."""
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    import fla  # noqa: F401 - registers fla's families with transformers' Auto classes

    from ccq_eval.models.generate_cache import install_generate_cache_names
    from ccq_eval.models.registration import register_ccq_models

    register_ccq_models()
    install_generate_cache_names()  # transformers >= 5.24 hands fla's models their cache under another name
    model_type, where = raw["model_type"], f"model {str(path)!r}"
    if model_type not in CONFIG_MAPPING:
        raise ModelLoadError(f"{where}: unknown model_type {model_type!r}: neither fla nor transformers "
                             f"{transformers_version()} defines it (ccq-eval never runs a checkpoint's own code); "
                             "upgrade transformers / flash-linear-attention if it is newer")
    config_class = CONFIG_MAPPING[model_type]
    if config_class not in AutoModelForCausalLM._model_mapping:
        raise ModelLoadError(f"{where}: model_type {model_type!r} has no causal-LM class in transformers; "
                             "ccq-eval evaluates causal language models")
    origin = "fla" if config_class.__module__.startswith("fla.") else "transformers"
    found = family(model_type, origin)
    if device.type == "cpu" and not found.cpu:
        raise ModelLoadError(f"{where}: fla's {model_type!r} runs only on fla's Triton kernels (ccq-eval's CPU "
                             "backend has no torch version of its ops); use --device cuda")
    if device.type == "cuda" and found.cuda_refuses_fp32 and dtype == torch.float32:
        raise ModelLoadError(f"{where}: {found.cuda_refuses_fp32} refuses float32 on CUDA; use "
                             "--dtype bfloat16, or --device cpu for float32")
    if ccq_overrides and found.ccq is None:
        reason = found.no_ccq or "it has no linear-attention read"
        raise ModelLoadError(f"{where}: CCQ options do not apply to {found.name} ({reason}); they attach to "
                             f"{', '.join(f.name for f in fla_families().values() if f.ccq)}; drop the --ccq-* "
                             "options for this model")
    return found


def transformers_version() -> str:
    import transformers

    return transformers.__version__


def _build_config(path: Path, raw: dict, ccq_overrides: dict | None, found: Family):
    from transformers import AutoConfig

    try:  # a config its class cannot take (a llama config over GLA fields, a wrong type) is the checkpoint's fault
        if not ccq_overrides:
            return AutoConfig.from_pretrained(path, trust_remote_code=False)
        fields = {k: v for k, v in raw.items() if k not in ("model_type", "architectures", "auto_map")}
        return AutoConfig.for_model(found.ccq, **{**fields, **ccq_overrides})
    except Exception as exc:  # noqa: BLE001 - transformers raises ValueError, TypeError, AttributeError, ...
        first_line = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc.__class__.__name__
        raise ModelLoadError(f"model {str(path)!r}: config.json cannot be read as a {raw.get('model_type')!r} config "
                             f"({first_line}); re-save the checkpoint's config") from exc


@contextmanager
def _quiet_transformers():
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


@dataclass
class _Checked:
    """A checkpoint resolved and checked, ready to build: everything load_model decided before allocating."""

    spec: str
    path: Path
    hub: dict | None
    files: list[Path]
    device: torch.device
    dtype: torch.dtype
    family: Family
    raw_config: dict


def _resolve_and_check(spec: str, device: str, dtype, allow_pickle: bool, ccq_overrides: dict | None) -> _Checked:
    """Where the checkpoint is, and everything that can be refused before the model is built: oversized
    metadata, the config, the weight files, device and dtype, the tokenizer files, the family."""
    path, hub = resolve_spec(spec, allow_pickle)
    if (said := first_oversized(path)) is not None:  # read whole below: refused before it exhausts memory
        raise ModelLoadError(f"model {str(path)!r}: {said}; this is not a checkpoint's metadata, check the folder")
    raw = _read_config(path)
    files = weight_files(path, allow_pickle)
    if dtype in ("float64", torch.float64) and (device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())):
        # fla's Triton kernels accumulate in float32: float64 weights would go in, float32 numbers come out
        raise ModelLoadError(f"dtype float64 on {device}: fla's CUDA kernels compute in float32; use float32 or "
                             "bfloat16 on CUDA, or float64 with --device cpu")
    target = _pick_device(device)
    torch_dtype = _pick_dtype(dtype, target)
    if not any((path / name).exists() for name in TOKENIZER_FILES):
        raise ModelLoadError(f"model {str(path)!r}: no tokenizer files ({', '.join(TOKENIZER_FILES[:2])}); save the tokenizer into the checkpoint folder")
    found = model_family(path, raw, target, torch_dtype, ccq_overrides)
    check_config_against_weights(path, raw, files)  # from the headers: refused before anything is allocated
    return _Checked(spec, path, hub, files, target, torch_dtype, found, raw)


def check_model(spec: str, device: str = "auto", dtype=None, allow_pickle: bool = False) -> tuple[torch.device, torch.dtype]:
    """Everything ``load_model`` refuses before it builds the model (where the checkpoint is, its files, the family,
    the device and the dtype), without building it: (the device, the dtype) it would load on."""
    checked = _resolve_and_check(spec, device, dtype, allow_pickle, None)
    return checked.device, checked.dtype


def _build_model(checked: _Checked, allow_pickle: bool, ccq_overrides: dict | None):
    """(model on its device in eval mode, its config, config fields mapped): the CPU backend installed first on
    the CPU; weights that do not match the config refused in one line."""
    from transformers import AutoModelForCausalLM

    from ccq_eval.ops.cpu_forms import install_cpu_backend
    from ccq_eval.models.kv_cache import install_growing_kv_cache

    path = checked.path
    if checked.device.type == "cpu":
        install_cpu_backend()
    install_growing_kv_cache()  # attention caches append in place (fla's appends copy the cache every step)
    config = _build_config(path, checked.raw_config, ccq_overrides, checked.family)
    mapped = {}
    if getattr(config, "attn_mode", None) == "fused_chunk":
        # fla 0.6 refuses fused_chunk on CUDA; it computes what chunk computes, so both devices run chunk
        config.attn_mode, mapped["attn_mode"] = "chunk", "fused_chunk -> chunk"
    try:
        with _quiet_transformers():  # loading chatter and progress bars; mismatches are checked below
            model, info = AutoModelForCausalLM.from_pretrained(
                path, config=config, dtype=checked.dtype, trust_remote_code=False, use_safetensors=not allow_pickle,
                output_loading_info=True)
    except Exception as exc:  # noqa: BLE001 - a truncated or corrupt file, a config the model cannot be built from
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        if (unreadable := _unreadable_pickle(checked.files)) is not None:
            raise ModelLoadError(f"model {str(path)!r}: {unreadable[0]} is not a readable pickle checkpoint "
                                 f"({unreadable[1][:160]}); re-download it, or convert the weights to safetensors") from exc
        raise ModelLoadError(f"model {str(path)!r}: weights do not match config.json ({first_line[:200]}); "
                             "re-download or re-save the checkpoint (weights and config together)") from exc
    fresh = _check_loading_info(path, info)
    return model.to(checked.device).eval(), config, mapped, fresh


def _check_loading_info(path: Path, info: dict) -> list[str]:
    """The newly initialised CCQ gate parameters (a stock checkpoint turned CCQ); any other missing, unexpected
    or mismatched weight is refused."""
    fresh = sorted(info.get("missing_keys", []))
    not_gate = [key for key in fresh if ".ccq.gate." not in key]
    problems = not_gate or info.get("unexpected_keys") or info.get("mismatched_keys")
    if problems:
        raise ModelLoadError(f"model {str(path)!r}: weights do not match config.json (e.g. {sorted(problems)[0]!s}); "
                             "check that the weights belong to this config")
    if fresh:
        logging.getLogger(__name__).warning("%s: %d CCQ gate parameters are newly initialised (not in the checkpoint)",
                                            path, len(fresh))
    return fresh


def _load_tokenizer(path: Path, config):
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001 - tokenizers raises its own exception types on malformed files
        raise ModelLoadError(f"model {str(path)!r}: tokenizer cannot be loaded ({exc.__class__.__name__}); save a tokenizer with the checkpoint") from exc
    vocab = getattr(config, "vocab_size", None)
    if vocab is not None and len(tokenizer) > vocab:
        raise ModelLoadError(f"model {str(path)!r}: the tokenizer has {len(tokenizer)} tokens but the model's vocabulary "
                             f"is {vocab}; save the tokenizer the model was trained with")
    if vocab is not None and (top := _largest_id(tokenizer)) is not None and top[1] >= vocab:
        raise ModelLoadError(f"model {str(path)!r}: the tokenizer's id {top[1]} ({top[0]!r}) is past the model's "
                             f"{vocab} embedding rows; save the tokenizer the model was trained with")
    check_tokenizer(tokenizer, str(path))
    return tokenizer


def _largest_id(tokenizer) -> tuple[str, int] | None:
    """(token, id) of the tokenizer's largest id, special tokens included: every id it can produce indexes the
    embedding, so one past its rows would fail every unit mid-run (IndexError) instead of here."""
    try:
        vocab = {**tokenizer.get_vocab(), **{t: i for t, i in zip(tokenizer.all_special_tokens,
                                                                   tokenizer.all_special_ids) if i is not None}}
    except (AttributeError, NotImplementedError, TypeError):
        return None
    return max(vocab.items(), key=lambda item: item[1]) if vocab else None


def _provenance(checked: _Checked, model, config, mapped: dict, fresh: list[str], ccq_overrides: dict | None) -> dict:
    return {
        "model_spec": checked.spec,
        "path": str(checked.path.resolve()),
        "hub": checked.hub,
        "model_type": config.model_type,
        "family": family_name(config.to_dict()),
        "weights_sha256": weights_sha256(checked.files),
        "weight_files": [f.name for f in checked.files],
        "config": config.to_dict(),
        "ccq_overrides": dict(ccq_overrides or {}),
        "config_mapped": mapped,
        "newly_initialised": fresh,
        "dtype": str(checked.dtype).replace("torch.", ""),
        "device": str(checked.device),
        "backend": "torch-cpu" if checked.device.type == "cpu" else "fla-triton",
        "learned_positions": learned_positions(model),
    }


def load_model(spec: str, device: str = "auto", dtype=None, allow_pickle: bool = False,
               ccq_overrides: dict | None = None) -> LoadedModel:
    """Load a checkpoint of any fla family or transformers causal LM (ccq_eval/families/ says which run where).

    ``ccq_overrides`` (e.g. ``{"ccq_fixed_lambda": 0.3, "ccq_sigma_scale": "trace"}``) turns a GLA /
    GDN / DeltaNet / RetNet / HGRN2 checkpoint into its CCQ family with those fields. On the CPU the torch backend is installed
    before the model is built. Returns the model in eval mode, its tokenizer and a provenance record.
    """
    import fla  # noqa: F401 - registers fla's model types with transformers' Auto classes

    checked = _resolve_and_check(spec, device, dtype, allow_pickle, ccq_overrides)
    model, config, mapped, fresh = _build_model(checked, allow_pickle, ccq_overrides)
    tokenizer = _load_tokenizer(checked.path, config)
    return LoadedModel(model, tokenizer, _provenance(checked, model, config, mapped, fresh, ccq_overrides))
