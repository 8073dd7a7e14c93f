"""Downloading public corpora (paper-scale configs) and reading files out of their archives."""
from __future__ import annotations

import gzip
import hashlib
import html
import re
import tarfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path


class DownloadError(RuntimeError):
    pass


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def download(url: str, dest: str | Path, sha256: str | None = None, timeout: float = 60.0, log=print) -> Path:
    """Fetch ``url`` to ``dest`` through a ``.part`` file (an interrupted download never looks complete)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    log(f"downloading {url} -> {dest}")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(part, "wb") as out:
            total = int(resp.headers.get("Content-Length") or 0)
            done, next_report = 0, 0
            while chunk := resp.read(1 << 20):
                out.write(chunk)
                done += len(chunk)
                if done >= next_report:
                    log(f"  {done / 1e6:.1f} MB" + (f" of {total / 1e6:.1f} MB" if total else ""))
                    next_report += 50 << 20
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        part.unlink(missing_ok=True)
        raise DownloadError(
            f"could not download {url}: {getattr(e, 'reason', e)}. Are you offline? Download it by hand and "
            f"place it at {dest} (the workflow then skips this step), or fix the url in the config."
        ) from None
    if sha256 and (got := sha256_of(part)) != sha256:
        part.unlink(missing_ok=True)
        raise DownloadError(f"{url}: sha256 {got} does not match the config's {sha256}; the file changed upstream "
                            f"or the download is corrupt.")
    part.rename(dest)
    return dest


_SEG = re.compile(r"<seg[^>]*>(.*)</seg>", re.IGNORECASE)


def sgm_to_lines(text: str) -> list[str]:
    """Segments of a WMT .sgm file, in order."""
    return [html.unescape(m.group(1)).strip() for m in _SEG.finditer(text)]


def read_member(archive: str | Path, member: str) -> bytes:
    """Bytes of ``member`` inside a tar(.gz/.bz2/.xz), zip or single-file .gz archive."""
    archive = Path(archive)
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tar:
            try:
                fh = tar.extractfile(member)
            except KeyError:
                names = [n for n in tar.getnames() if n.endswith(Path(member).name)]
                raise DownloadError(f"{archive} has no member {member!r}" +
                                    (f" (did you mean {names[0]!r}?)" if names else "")) from None
            return fh.read()
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            try:
                return z.read(member)
            except KeyError:
                raise DownloadError(f"{archive} has no member {member!r}") from None
    with open(archive, "rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        with gzip.open(archive) as fh:
            return fh.read()
    raise DownloadError(f"{archive}: not a tar, zip or gzip archive; delete it so the workflow downloads it again.")


def iter_member_lines(archive: str | Path, member: str | None = None):
    """Lines of ``member`` of a tar archive, or of a single-file .gz (``member`` None), streamed: for monolingual
    files of many GB (News Crawl) that :func:`read_member` would hold in memory."""
    archive = Path(archive)
    if member is None:
        with open(archive, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                raise DownloadError(f"{archive}: not a gzip file; name the file inside the archive (member) or delete "
                                    f"it so the workflow downloads it again.")
        with gzip.open(archive, "rt", encoding="utf-8", newline="\n") as fh:
            for line in fh:
                yield line.rstrip("\n")
        return
    if not tarfile.is_tarfile(archive):
        raise DownloadError(f"{archive}: not a tar archive, so it has no member {member!r}")
    with tarfile.open(archive, "r|*") as tar:
        for info in tar:
            if info.name == member:
                for raw in tar.extractfile(info):
                    yield raw.decode("utf-8").rstrip("\n")
                return
    raise DownloadError(f"{archive} has no member {member!r}")


def extract_lines(archive: str | Path, member: str, fmt: str = "text") -> list[str]:
    data = read_member(archive, member).decode("utf-8", errors="strict")
    if fmt == "sgm":
        return sgm_to_lines(data)
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
