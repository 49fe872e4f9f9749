"""Image blobs in an S3-compatible object store (``--blobs s3://bucket/prefix``), through s3fs.

Keys are the folder store's layout under the prefix (``<prefix>/<aa>/<sha256>.png``), so a blob
folder copied with ``aws s3 sync`` is a valid object store and back. The same guarantees as the
folder store hold:

* **put-if-absent**: an object is written only when none is stored under its name (a HEAD first,
  then a PUT with ``If-None-Match: *``, so two shards writing the same image never rewrite it). A
  stored object whose bytes do not hash to its name is replaced, and only if it is still that
  damaged object (``If-Match`` on its ETag): a sound one written meanwhile is never overwritten.
* **checked on read**: bytes are hashed against the name before use; a damaged or truncated object
  is a missing blob (the node is computed again), never decoded.

Where the server is: ``?endpoint_url=http://host:9000`` in the URL, else the environment
(``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``), else AWS itself. Credentials come from botocore's
usual chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``, an instance role);
a URL holding one is refused, as the URL is recorded in run.json (`umni.util.credentials`). A
server that cannot be reached, or refuses the credentials, is a `StorageError` after s3fs's
retries: the run stops, nothing computed is lost, and a resume once the server is back finishes it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import weakref
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from umni.store.blobs import Blobs
from umni.util.credentials import refuse_url_credentials
from umni.util.errors import ConfigError, StorageError
from umni.util.extras import describe_missing

T = TypeVar("T")

#: Query parameters an ``s3://`` blob URL takes.
QUERY_PARAMS = ("endpoint_url", "region")
#: Where botocore reads credentials: what a URL that holds some is told to use instead.
CREDENTIALS_FROM = (
    "give them in the environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN "
    "too for temporary ones), or name a profile of ~/.aws/credentials with AWS_PROFILE"
)


class S3Blobs(Blobs):
    """Content-addressed PNG blobs under ``s3://bucket/prefix``."""

    inline_checks = False  # each check is a HEAD, the first one a download: never on the event loop

    def __init__(self, url: str, *, retries: int | None = None) -> None:
        super().__init__()
        refuse_url_credentials(url, setting="--blobs", remedy=CREDENTIALS_FROM)
        parts = urlsplit(url)
        if not parts.netloc:
            raise ConfigError(f"--blobs {url}: an s3:// URL names a bucket (s3://bucket/prefix)")
        query = dict(parse_qsl(parts.query))
        unknown = sorted(set(query) - set(QUERY_PARAMS))
        if unknown:
            raise ConfigError(
                f"--blobs {url}: unknown parameter(s) {', '.join(unknown)} (known: {', '.join(QUERY_PARAMS)}; "
                "credentials come from the AWS environment variables or profile, never the URL)"
            )
        self.location = url
        self.bucket = parts.netloc
        self.prefix = parts.path.strip("/")
        endpoint = query.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        try:
            import s3fs
        except ModuleNotFoundError as exc:
            raise ConfigError(f"--blobs {url}: {describe_missing(exc)}") from None
        client: dict[str, Any] = {}
        if endpoint:
            client["endpoint_url"] = endpoint
        if query.get("region"):
            client["region_name"] = query["region"]
        config: dict[str, Any] = {"s3": {"addressing_style": "path"}} if endpoint else {}  # S3-compatible servers name buckets in the path
        if retries is not None:  # botocore's attempts per request (s3fs retries around them too)
            config["retries"] = {"max_attempts": retries, "mode": "standard"}
        self._fs = s3fs.S3FileSystem(client_kwargs=client, config_kwargs=config, skip_instance_cache=True)
        _quiet_cut_off_requests(self._fs.loop)
        if retries is not None:
            self._fs.retries = retries
        self._verified: dict[str, str] = {}  # sha -> ETag of the object whose bytes were checked
        self._call(lambda: self._fs.call_s3("head_bucket", Bucket=self.bucket), f"s3://{self.bucket}", missing=self._no_bucket)

    def _no_bucket(self) -> None:
        raise ConfigError(f"--blobs {self.location}: bucket '{self.bucket}' does not exist on the server (create it first)")

    def key(self, sha256: str) -> str:
        name = f"{sha256[:2]}/{sha256}.png"
        return f"{self.prefix}/{name}" if self.prefix else name

    def _where(self, sha256: str) -> str:
        return f"s3://{self.bucket}/{self.key(sha256)}"

    def _call(self, action: Callable[[], T], where: str, *, missing: Callable[[], Any] | None = None) -> Any:
        """Run one request; FileNotFoundError goes to `missing` (None: raised), anything else the
        server or the network did is a StorageError naming the object."""
        try:
            return action()
        except FileNotFoundError:
            if missing is None:
                raise
            return missing()
        except (ConfigError, StorageError):
            raise
        except PermissionError as exc:
            raise StorageError(f"access denied by the object store ({exc}); check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE", path=where) from exc
        except Exception as exc:  # botocore, aiohttp and OSError faults of an unreachable or failing server
            raise StorageError(f"object store request failed after retries: {type(exc).__name__}: {exc}", path=where) from exc

    def _etag(self, sha256: str) -> str | None:
        """The stored object's ETag, None when there is none."""
        head = self._call(lambda: self._fs.call_s3("head_object", Bucket=self.bucket, Key=self.key(sha256)), self._where(sha256), missing=lambda: None)
        return None if head is None else str(head["ETag"]).strip('"')

    def exists(self, sha256: str) -> bool:
        return self._etag(sha256) is not None

    def count(self) -> int:
        """Objects under the prefix (one listing, paged by the server)."""
        where = f"s3://{self.bucket}/{self.prefix}"
        found = self._call(lambda: self._fs.find(f"{self.bucket}/{self.prefix}"), where, missing=lambda: [])
        return sum(1 for key in found if key.endswith(".png"))

    def _fetch(self, sha256: str) -> bytes:
        return bytes(self._call(lambda: self._fs.cat_file(f"{self.bucket}/{self.key(sha256)}"), self._where(sha256)))

    def verify(self, sha256: str) -> bool:
        """Whether the object exists and hashes to its name: a HEAD when this process already
        checked the object with that ETag, else its bytes are read and hashed."""
        etag = self._etag(sha256)
        if etag is None:
            return False
        if self._verified.get(sha256) == etag:
            return True
        try:
            data = self._fetch(sha256)
        except FileNotFoundError:
            return False
        if hashlib.sha256(data).hexdigest() != sha256:
            return False
        self._verified[sha256] = etag
        return True

    def _keep(self, sha256: str, data: bytes) -> None:
        etag = self._etag(sha256)
        if etag is not None and (self._verified.get(sha256) == etag or etag == hashlib.md5(data).hexdigest()):  # noqa: S324
            self._verified[sha256] = etag  # a single-part object's ETag is the MD5 of its bytes: these bytes
            return
        if etag is not None and self.verify(sha256):
            return
        condition = {"IfMatch": etag} if etag is not None else {"IfNoneMatch": "*"}  # replace only the damaged one

        def put() -> Any:
            try:
                return self._fs.call_s3(
                    "put_object", Bucket=self.bucket, Key=self.key(sha256), Body=data, ContentType="image/png", **condition
                )
            except OSError as exc:  # the condition no longer held: someone stored (or repaired) it meanwhile
                if isinstance(exc, FileExistsError) or "pre-condition" in str(exc).lower():
                    return None
                raise

        stored = self._call(put, self._where(sha256))
        if stored is not None:
            self._verified[sha256] = str(stored["ETag"]).strip('"')
        elif not self.verify(sha256):
            raise StorageError("a conflicting write left a damaged object under this image's name", path=self._where(sha256))


def _quiet_cut_off_requests(loop: asyncio.AbstractEventLoop) -> None:
    """Drop the network errors of tasks nobody awaits on s3fs's loop; pass on everything else.

    aiohttp writes a request's body in a task of its own. When the server goes away mid-request,
    the request itself fails, and umni reports that once as a StorageError, but the body task's
    exception is never retrieved, so asyncio logged it with a traceback at some later moment: it
    says nothing the run has not said. Set once on the loop (fsspec's one I/O loop for the process)."""
    if loop in _QUIETED:
        return
    import aiohttp

    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        orphaned = context.get("message") == "Task exception was never retrieved"
        if orphaned and isinstance(context.get("exception"), (aiohttp.ClientError, OSError, asyncio.TimeoutError)):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)
    _QUIETED.add(loop)


#: The loops `_quiet_cut_off_requests` has set its handler on.
_QUIETED: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()
