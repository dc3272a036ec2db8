"""Named files from the Hugging Face Hub, through huggingface_hub, at a commit, checked by sha256.

A ``HubFile`` names one file of one repository at one commit. The file goes into the HF cache with
``hf_hub_download`` (resumable; huggingface_hub writes ``.incomplete`` files and renames them only when
complete), then its sha256 is computed and compared with the pinned value and with the hub's own LFS
record (the ETag of an LFS file is its sha256). A mismatch deletes the download and fails in one line:
nothing is frozen from it. Every hub failure (no such repository, revision or file, no network, offline
mode) is a ``HubError`` with one line naming the input and the fix.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import math
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ccq_eval.data.cache import file_sha256
from ccq_eval.errors import BadInput

COMMIT = re.compile(r"[0-9a-f]{40}")
SHA256 = re.compile(r"[0-9a-f]{64}")


class HubError(BadInput):
    """A hub download that failed or could not be trusted; the message names it and the fix."""


@dataclass(frozen=True)
class HubFile:
    repo: str
    filename: str  # a path in the repository, or a glob whose first match in name order is taken
    commit: str | None  # the pinned commit; None where no commit could be confirmed (resolved from main at fetch)
    sha256: str | None = None  # the file's pinned sha256, where confirmed
    repo_type: str = "dataset"

    @property
    def where(self) -> str:
        return f"{self.repo}@{self.commit[:12] if self.commit else 'main'}:{self.filename}"


@dataclass(frozen=True)
class Fetched:
    """A verified download: where it lies in the HF cache and the record frozen with what is built from it."""

    path: Path
    repo: str
    filename: str
    commit: str
    sha256: str
    size: int
    commit_pinned: bool
    sha256_checked_against: tuple[str, ...]

    def record(self) -> dict:
        return {"repo": self.repo, "file": self.filename, "commit": self.commit, "sha256": self.sha256,
                "bytes": self.size, "commit_pinned": self.commit_pinned,
                "sha256_checked_against": list(self.sha256_checked_against)}


def endpoint() -> str:
    import huggingface_hub.constants as constants

    return constants.ENDPOINT


TIMEOUT_VARIABLE = "CCQ_EVAL_HUB_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0
MAX_REDIRECTS = 10
_BOUND_TIMEOUT: float | None = None  # what the shared client was last given


def hub_timeout_s() -> float:
    """Seconds to wait for the hub to connect or to send the next bytes (huggingface_hub's client waits forever)."""
    import os

    raw = os.environ.get(TIMEOUT_VARIABLE, "")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise HubError(f"{TIMEOUT_VARIABLE}={raw!r}: must be a number of seconds in (0, 3600]; unset it for "
                       f"{DEFAULT_TIMEOUT_S:.0f}")
    return value


def http_client_module():
    """The HTTP library huggingface_hub's client is built on: httpx2 from huggingface_hub 2, httpx before."""
    try:
        import httpx2
    except ImportError:  # huggingface_hub 1.x
        import httpx as httpx2
    return httpx2


def downloads_over_http() -> None:
    """Large files through the bounded, resumable HTTP client below, not Xet: the hub serves every large file through
    Xet, and huggingface_hub hands those to hf_xet, which bypasses this client, its timeouts and its error messages.
    A user who set HF_HUB_DISABLE_XET (to 0 or 1) keeps that choice (docs/data-sources.md says why)."""
    import huggingface_hub.constants as constants

    if "HF_HUB_DISABLE_XET" not in os.environ:
        constants.HF_HUB_DISABLE_XET = True


def bound_hub_client() -> None:
    """Give every request huggingface_hub makes a connect/read/write timeout and a redirect limit. Its default
    client has ``timeout=None``, and ``repo_info`` passes ``timeout=None`` per request (which overrides any
    client default), so a hub that accepts a connection and never answers would hang a fetch forever: the
    bound is set where every request passes, in the transport."""
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils import _http

    global _BOUND_TIMEOUT
    downloads_over_http()
    timeout = hub_timeout_s()
    if _BOUND_TIMEOUT == timeout:
        return
    _BOUND_TIMEOUT = timeout
    httpx2 = http_client_module()

    class BoundedTransport(httpx2.HTTPTransport):
        def handle_request(self, request):
            given = request.extensions.get("timeout") or {}
            request.extensions["timeout"] = {phase: given.get(phase) or timeout
                                             for phase in ("connect", "read", "write", "pool")}
            return super().handle_request(request)

    def factory() -> httpx2.Client:
        return httpx2.Client(event_hooks={"request": [_http.hf_request_event_hook]}, follow_redirects=True,
                             max_redirects=MAX_REDIRECTS, timeout=httpx2.Timeout(timeout),
                             transport=BoundedTransport())

    set_client_factory(factory)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else exc.__class__.__name__


def _timed_out(exc: BaseException | None) -> bool:
    """Whether a timeout is anywhere in the exception's chain (huggingface_hub wraps transport errors)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, TimeoutError) or type(exc).__name__.endswith("Timeout"):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _in_chain(exc: BaseException | None, kind: type) -> BaseException | None:
    """The first exception of ``kind`` in exc's chain (huggingface_hub wraps the cause of a failed download)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, kind):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _outside_name(exc: BaseException) -> str | None:
    """The file name huggingface_hub refused as reaching outside the repository's folder ('../../x'), or None."""
    match = re.match(r"Invalid filename '(.*)': cannot contain", str(exc)) if isinstance(exc, ValueError) else None
    return match.group(1) if match else None


def _not_a_hub(what: str, at: str, exc: BaseException) -> str:
    """A server that answered file requests without the hub's headers (X-Repo-Commit, ETag): reachable, not a hub."""
    missing = "X-Repo-Commit" if "X-Repo-Commit" in str(exc) else "ETag" if "ETag" in str(exc) else "file metadata"
    return (f"{what} {at}: {endpoint()} answered without the hub's {missing} header, so it is not a Hub endpoint "
            "(a plain web server or a proxy?); point HF_ENDPOINT at a Hub, or check the proxy in between")


def _timeout_message(what: str, at: str) -> str:
    return (f"{what} {at}: the hub at {endpoint()} did not answer within {hub_timeout_s():g} s ({TIMEOUT_VARIABLE}); "
            "nothing was frozen; check the network and run it again")


@contextlib.contextmanager
def hub_errors(what: str, repo: str, revision: str | None = None) -> Iterator[None]:
    """huggingface_hub's exceptions as one-line HubErrors naming the repository and the fix."""
    from huggingface_hub import errors

    at = f"{repo}@{revision}" if revision else repo
    bound_hub_client()
    try:
        yield
    except errors.OfflineModeIsEnabled as exc:
        raise HubError(f"{what} {at}: HF_HUB_OFFLINE is set, so nothing can be downloaded; unset it on a machine "
                       "with network access") from exc
    except errors.GatedRepoError as exc:
        raise HubError(f"{what} {at}: the repository is gated; accept its terms on the hub and log in "
                       "(`hf auth login`)") from exc
    except errors.RepositoryNotFoundError as exc:
        raise HubError(f"{what} {at}: no such repository on {endpoint()} (or it is private: log in with "
                       "`hf auth login`); check the name") from exc
    except errors.RevisionNotFoundError as exc:
        raise HubError(f"{what} {at}: no such revision in the repository; pass a branch, tag or commit it has") from exc
    except errors.FileMetadataError as exc:
        raise HubError(_not_a_hub(what, at, exc)) from exc
    except errors.RemoteEntryNotFoundError as exc:
        raise HubError(f"{what} {at}: the repository has no such file ({_first_line(exc)}); its layout changed, "
                       "pin the commit that has it") from exc
    except (errors.LocalEntryNotFoundError, errors.RevisionResolutionError) as exc:
        # neither the hub nor the cache answered (resolving a revision reports it as its own error)
        import huggingface_hub.constants as constants

        if _timed_out(exc):  # snapshot_download reports a hub that stopped answering as "no local entry"
            raise HubError(_timeout_message(what, at)) from exc
        if (metadata := _in_chain(exc, errors.FileMetadataError)) is not None:  # it answered, but not as the hub
            raise HubError(_not_a_hub(what, at, metadata)) from exc
        if constants.HF_HUB_OFFLINE:
            raise HubError(f"{what} {at}: HF_HUB_OFFLINE is set and the HF cache holds no copy; run it once with "
                           "network access (or unset HF_HUB_OFFLINE)") from exc
        raise HubError(f"{what} {at}: the hub at {endpoint()} cannot be reached and no cached copy exists; check the "
                       "network (or HF_ENDPOINT), or fetch once where the hub is reachable") from exc
    except errors.HfHubHTTPError as exc:
        raise HubError(f"{what} {at}: the hub answered {_first_line(exc)}; retry later") from exc
    except HubError:
        raise
    except (ValueError, KeyError, TypeError) as exc:  # JSON that is not JSON, or not the hub API's
        if (named := _outside_name(exc)) is not None:
            raise HubError(f"{what} {at}: the repository lists {named!r}, a file outside its own folder; nothing was "
                           "downloaded; is it the repository you meant?") from exc
        raise HubError(f"{what} {at}: {endpoint()} answered with something other than the hub API's answer "
                       f"({exc.__class__.__name__}); check HF_ENDPOINT and any proxy in between") from exc
    except Exception as exc:  # noqa: BLE001 - transport errors come from httpx under several names
        said = _transport_error(what, at, exc)
        if said is None:
            raise
        raise HubError(said) from exc


def _transport_error(what: str, at: str, exc: Exception) -> str | None:
    """What a failed transfer or cache write says, in one line; None for an exception that is not one."""
    if _timed_out(exc):
        return _timeout_message(what, at)
    if isinstance(exc, RuntimeError) and ("CAS service error" in str(exc) or "hf_xet" in type(exc).__module__):
        return (f"{what} {at}: the Xet transfer from {endpoint()} failed ({_first_line(exc)[:120]}); nothing was "
                "frozen; unset HF_HUB_DISABLE_XET (ccq-eval then downloads over its bounded HTTP client) or run it "
                "again")
    if isinstance(exc, OSError) and str(exc).startswith("Consistency check failed"):  # a body of another size
        return (f"{what} {at}: the download from {endpoint()} was not the size the hub announced "
                f"({_first_line(exc)[:120]}); nothing was frozen; run it again")
    if isinstance(exc, OSError) and not isinstance(exc, ConnectionError) and exc.filename:
        return (f"{what} {at}: the HF cache cannot be written at {exc.filename!r} ({exc.strerror}); set "
                "HF_HOME (or HF_HUB_CACHE) to a writable folder")
    if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "h11", "ssl", "socket") \
            or isinstance(exc, (ConnectionError, TimeoutError)):
        return (f"{what} {at}: the download from {endpoint()} failed ({_first_line(exc)}); nothing was "
                "frozen; check the network and run it again (it resumes)")
    return None


def resolve_commit(repo: str, revision: str, repo_type: str) -> str:
    """The commit a branch or tag points at now (a commit is returned as it is)."""
    from huggingface_hub import HfApi

    if COMMIT.fullmatch(revision):
        return revision
    with hub_errors(f"{repo_type} repository", repo, revision):
        sha = HfApi().repo_info(repo, repo_type=repo_type, revision=revision).sha
    if not sha or not COMMIT.fullmatch(sha):
        raise HubError(f"{repo_type} repository {repo}@{revision}: the hub gave no commit for it ({sha!r})")
    return sha


def _match(spec: HubFile, commit: str) -> str:
    """The file a glob names: its first match in name order at the commit."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    if not any(c in spec.filename for c in "*?["):
        return spec.filename
    with hub_errors(f"{spec.repo_type} repository", spec.repo, commit[:12]):
        names = sorted(f.path for f in HfApi().list_repo_tree(spec.repo, repo_type=spec.repo_type, revision=commit,
                                                               recursive=True) if isinstance(f, RepoFile)
                       and fnmatch.fnmatch(f.path, spec.filename))
    if not names:
        raise HubError(f"{spec.repo_type} repository {spec.repo}@{commit[:12]}: no file matches {spec.filename!r}; its "
                       "layout changed, pin the commit that has it")
    return names[0]


def human_size(size: int | None) -> str:
    if size is None:
        return "size unknown"
    if size < 1000:
        return f"{size} B"
    exponent = min(3, int(math.log10(size)) // 3)
    return f"{size / 1000 ** exponent:.1f} {('KB', 'MB', 'GB')[exponent - 1]}"


def _evict(path: Path) -> None:
    """Delete a cached download (the snapshot link and the blob it points at) so a rerun fetches it again."""
    blob = path.resolve()
    path.unlink(missing_ok=True)
    blob.unlink(missing_ok=True)


def fetch_file(spec: HubFile, progress: Callable[[str], None] = print) -> Fetched:
    """Download one file at its commit (resolving main when no commit is pinned) and verify its sha256."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    commit = spec.commit or resolve_commit(spec.repo, "main", spec.repo_type)
    filename = _match(spec, commit)
    with hub_errors(f"{spec.repo_type} file", f"{spec.repo}:{filename}", commit[:12]):
        meta = get_hf_file_metadata(hf_hub_url(spec.repo, filename, repo_type=spec.repo_type, revision=commit))
        progress(f"  {spec.repo}@{commit[:12]} {filename}: {human_size(meta.size)}"
                 + ("" if spec.commit else " (no pinned commit: main resolved now, recorded)"))
        path = Path(hf_hub_download(spec.repo, filename, repo_type=spec.repo_type, revision=commit))
    digest = file_sha256(path)
    hub_sha = meta.etag if meta.etag and SHA256.fullmatch(meta.etag) else None
    checks = [(name, value) for name, value in (("pinned", spec.sha256), ("hub LFS record", hub_sha)) if value]
    for name, expected in checks:
        if digest != expected:
            _evict(path)
            raise HubError(f"{spec.repo}@{commit[:12]} {filename}: sha256 {digest[:16]}... does not match the {name} "
                           f"{expected[:16]}...; the download was deleted and nothing was frozen; fetch it again")
    return Fetched(path, spec.repo, filename, commit, digest, path.stat().st_size, spec.commit is not None,
                   tuple(name for name, _ in checks))


MAX_LINE_CHARS = 64 << 20  # far beyond any document of the corpora read this way (the longest are ~1 MB)


def zip_member_lines(path: Path, member: str, where: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of one member of a zip, read as a stream (the archive's CRC is checked at its end).

    The member is opened by its exact name and never extracted, so other members' names (``../x``, ``/etc/x``)
    reach no path. Memory stays bounded however far a member inflates: lines are handed on one at a time (the
    readers deduplicate as they arrive, so a bomb of repeated records freezes one), a line longer than
    MAX_LINE_CHARS is refused, and zipfile stops at the member's stated size (a member that inflates beyond it
    fails its CRC)."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise HubError(f"{where}: not a zip archive ({_first_line(exc)}); delete it from the HF cache and fetch again") from exc
    with archive:
        if member not in archive.namelist():
            raise HubError(f"{where}: the archive has no member {member!r}; its layout changed, pin the commit that has it")
        try:
            with archive.open(member) as raw:
                text = io.TextIOWrapper(raw, encoding="utf-8")
                for number, line in enumerate(iter(lambda: text.readline(MAX_LINE_CHARS + 1), ""), start=1):
                    if len(line) > MAX_LINE_CHARS:
                        raise HubError(f"{where}: member {member!r} line {number} is over {MAX_LINE_CHARS >> 20}M "
                                       "characters, not a document of this corpus; nothing was frozen; check the source")
                    yield number, line
        except (zipfile.BadZipFile, UnicodeDecodeError) as exc:
            raise HubError(f"{where}: member {member!r} is corrupt ({_first_line(exc)}); fetch it again") from exc
