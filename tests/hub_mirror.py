"""A loopback stand-in for the Hugging Face Hub: the part of its HTTP API that huggingface_hub calls.

Served on 127.0.0.1 from the test process; point ``HF_ENDPOINT`` at ``mirror.url``. Routes, as the hub:
- ``GET /api/{models|datasets}/{repo}/revision/{rev}``: repository info (``id``, ``sha``, ``siblings``);
- ``GET /api/{models|datasets}/{repo}/tree/{rev}[/{path}]``: the file listing (``oid``, ``size``, ``lfs``);
- ``HEAD|GET /[datasets/]{repo}/resolve/{rev}/{path}``: a small (git) file answers 200 with its git blob
  id as ETag; an LFS file answers 302 to the CDN with ``X-Linked-Etag`` (its sha256) and
  ``X-Linked-Size``; every answer carries ``X-Repo-Commit``;
- ``GET /cdn/{sha256}``: the LFS content, with ``Range`` support;
- errors with the hub's ``X-Error-Code`` header (RepoNotFound, RevisionNotFound, EntryNotFound).
Faults for the tests: ``corrupt`` (serve other bytes of the same length), ``cut`` (close the connection
half-way through the body), ``down`` (answer 503 to everything), ``html`` (a 200 HTML page for everything),
``overlong`` (a Content-Length 1,000 bytes beyond the body, then the connection closes), ``underlong`` (a
Content-Length 1,000 bytes short of the body), ``loop`` (the CDN redirects to itself, forever).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

LFS_SUFFIXES = (".zip", ".parquet", ".safetensors", ".gz", ".bin")


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class MirrorRepo:
    repo_id: str
    files: dict[str, bytes]
    repo_type: str = "dataset"
    commit: str = ""
    refs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if not self.commit:
            self.commit = hashlib.sha1(json.dumps(sorted((k, hashlib.sha256(v).hexdigest()) for k, v in
                                                         self.files.items())).encode()).hexdigest()
        self.refs.setdefault("main", self.commit)

    def is_lfs(self, path: str) -> bool:
        return path.endswith(LFS_SUFFIXES)

    def entry(self, path: str) -> dict:
        data = self.files[path]
        entry = {"type": "file", "path": path, "size": len(data), "oid": git_blob_id(data)}
        if self.is_lfs(path):
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return entry


class HubMirror:
    def __init__(self):
        self.repos: dict[tuple[str, str], MirrorRepo] = {}
        self.blobs: dict[str, bytes] = {}
        self.corrupt: set[str] = set()  # file paths whose CDN bytes are altered
        self.cut: set[str] = set()  # file paths whose CDN body stops half-way
        self.overlong: set[str] = set()  # file paths whose CDN Content-Length announces more than the body
        self.underlong: set[str] = set()  # file paths whose CDN Content-Length announces less than the body
        self.loop: set[str] = set()  # file paths whose CDN answer is a redirect to itself
        self.down = False
        self.html = False  # answer every request with a 200 HTML page (a captive portal, a misconfigured proxy)
        self.no_commit = False  # serve files without the hub's X-Repo-Commit header (a plain web server, a proxy)
        self.requests: list[tuple[str, str]] = []
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_HEAD(self):
                mirror._serve(self, body=False)

            def do_GET(self):
                mirror._serve(self, body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # the CDN under another host name, as the hub's: huggingface_hub follows redirects only within the hub
        self.cdn_url = f"http://localhost:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def add(self, repo: MirrorRepo) -> MirrorRepo:
        self.repos[(repo.repo_type, repo.repo_id)] = repo
        for path, data in repo.files.items():
            if repo.is_lfs(path):
                self.blobs[hashlib.sha256(data).hexdigest()] = data
        return repo

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    # --- routing -------------------------------------------------------------------------------
    def _send(self, handler, status: int, body: bytes = b"", headers: dict | None = None, send_body=True):
        handler.send_response(status)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if send_body:
            handler.wfile.write(body)

    def _error(self, handler, status: int, code: str, message: str, send_body=True):
        self._send(handler, status, json.dumps({"error": message}).encode(),
                   {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}, send_body)

    def _repo(self, kind: str, rest: list[str]):
        """(repo, remaining path parts) for 'org/name/...' under one repo type."""
        if len(rest) >= 2 and (kind, f"{rest[0]}/{rest[1]}") in self.repos:
            return self.repos[(kind, f"{rest[0]}/{rest[1]}")], rest[2:]
        return None, rest[2:]

    def _commit(self, repo: MirrorRepo, revision: str) -> str | None:
        revision = unquote(revision)
        return repo.refs.get(revision) or (revision if revision == repo.commit else None)

    def _serve(self, handler, body: bool):
        url = urlparse(handler.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        self.requests.append((handler.command, url.path))
        if self.down:
            return self._send(handler, 503, b"down", send_body=body)
        if self.html:
            return self._send(handler, 200, b"<!doctype html><html><body>Sign in to continue</body></html>",
                              {"Content-Type": "text/html"}, send_body=body)
        if parts[:1] == ["cdn"] and len(parts) == 2:
            return self._cdn(handler, parts[1], body)
        if parts[:1] == ["api"] and len(parts) >= 2:
            kind = parts[1].rstrip("s")
            repo, rest = self._repo(kind, parts[2:])
            if repo is None:
                return self._error(handler, 404, "RepoNotFound", "Repository not found", body)
            if len(rest) >= 2 and rest[0] in ("revision", "tree"):
                commit = self._commit(repo, rest[1])
                if commit is None:
                    return self._error(handler, 404, "RevisionNotFound", f"Invalid rev id: {rest[1]}", body)
                if rest[0] == "revision":
                    info = {"id": repo.repo_id, "sha": commit, "private": False,
                            "siblings": [{"rfilename": p} for p in sorted(repo.files)]}
                    return self._send(handler, 200, json.dumps(info).encode(), {"Content-Type": "application/json"}, body)
                prefix = "/".join(rest[2:])
                listing = [repo.entry(p) for p in sorted(repo.files) if p.startswith(prefix)]
                return self._send(handler, 200, json.dumps(listing).encode(), {"Content-Type": "application/json"}, body)
            return self._error(handler, 404, "EntryNotFound", "unknown API route", body)
        kind = "dataset" if parts[:1] == ["datasets"] else "model"
        repo, rest = self._repo(kind, parts[1:] if kind == "dataset" else parts)
        if repo is None:
            return self._error(handler, 404, "RepoNotFound", "Repository not found", body)
        if len(rest) < 3 or rest[0] != "resolve":
            return self._error(handler, 404, "EntryNotFound", "unknown route", body)
        commit = self._commit(repo, rest[1])
        if commit is None:
            return self._error(handler, 404, "RevisionNotFound", f"Invalid rev id: {rest[1]}", body)
        path = "/".join(rest[2:])
        if path not in repo.files:
            return self._error(handler, 404, "EntryNotFound", f"{path} does not exist on {rest[1]}", body)
        data = repo.files[path]
        headers = {} if self.no_commit else {"X-Repo-Commit": commit}
        if repo.is_lfs(path):
            sha = hashlib.sha256(data).hexdigest()
            key = sha + "".join(f"-{fault}" for fault in ("corrupt", "cut", "overlong", "underlong", "loop")
                                if path in getattr(self, fault))
            headers.update({"Location": f"{self.cdn_url}/cdn/{key}", "X-Linked-Etag": f'"{sha}"',
                            "X-Linked-Size": str(len(data)), "ETag": f'"{git_blob_id(data)}"',
                            # as the hub: every large file is also in Xet storage (a client with hf_xet goes there)
                            "X-Xet-Hash": sha, "X-Xet-Refresh-Route": f"{self.url}/api/{kind}s/{repo.repo_id}/"
                                                                      f"xet-read-token/{commit}"})
            return self._send(handler, 302, b"", headers, body)
        headers["ETag"] = f'"{git_blob_id(data)}"'
        return self._send(handler, 200, data, headers, body)

    def _cdn(self, handler, key: str, body: bool):
        sha, *faults = key.split("-")
        data = self.blobs.get(sha)
        if data is None:
            return self._send(handler, 404, b"no such blob", send_body=body)
        if "loop" in faults:
            return self._send(handler, 302, b"", {"Location": f"{self.cdn_url}/cdn/{key}"}, body)
        if "corrupt" in faults:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        start = 0
        ranged = handler.headers.get("Range", "")
        if ranged.startswith("bytes="):
            start = int(ranged[6:].split("-")[0] or 0)
        chunk = data[start:]
        handler.send_response(206 if start else 200)
        announced = len(chunk) + 1000 * ("overlong" in faults) - 1000 * ("underlong" in faults)
        handler.send_header("Content-Length", str(max(announced, 0)))
        handler.send_header("ETag", f'"{sha}"')
        if start:
            handler.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        handler.end_headers()
        if not body:
            return
        if "cut" in faults:  # the connection drops at the file's midpoint, on every try (resumed ones too)
            handler.wfile.write(data[start: max(start, len(data) // 2)])
            handler.wfile.flush()
            handler.close_connection = True
            return
        handler.wfile.write(chunk)
        if "overlong" in faults or "underlong" in faults:
            handler.wfile.flush()
            handler.close_connection = True
