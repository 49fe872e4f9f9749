"""Which filesystem a path lies on, from the mount table (/proc/self/mountinfo), and whether several
machines may share it: file locks (flock) on NFS, Lustre, GPFS and their kin hold across machines only
where the filesystem is mounted to honour them, so umni says so when it relies on them there."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SHARED_FILESYSTEMS", "filesystem_of", "shared_filesystem"]

#: Filesystem types (as the mount table names them) that machines share over a network.
SHARED_FILESYSTEMS = frozenset({
    "nfs", "nfs4", "lustre", "gpfs", "beegfs", "cifs", "smb3", "smbfs", "ceph", "fuse.ceph", "fuse.cephfs",
    "glusterfs", "fuse.glusterfs", "9p", "ocfs2", "gfs2", "afs", "pvfs2", "orangefs", "fuse.sshfs",
    "fuse.juicefs", "fuse.s3fs", "fuse.gcsfuse", "fuse.rclone", "wekafs", "panfs", "quobyte", "fuse.quobyte",
})  # fmt: skip

MOUNTINFO = Path("/proc/self/mountinfo")


def _unescape(field: str) -> str:
    """A mount point as the kernel writes it, with space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def filesystem_of(path: Path, mountinfo: str | None = None) -> str | None:
    """The type of the filesystem holding `path` (its nearest existing ancestor when it does not exist
    yet): the mount with the longest mount point above it. None when the mount table cannot be read."""
    if mountinfo is None:
        try:
            mountinfo = MOUNTINFO.read_text()
        except OSError:
            return None
    target = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        point = _unescape(fields[4])
        kind = line.split(" - ", 1)[1].split()[0]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), kind)
    return None if best is None else best[1]


def shared_filesystem(path: Path, mountinfo: str | None = None) -> str | None:
    """The filesystem type of `path` when machines share it over a network (nfs4, lustre, …), else None."""
    kind = filesystem_of(path, mountinfo)
    return kind if kind in SHARED_FILESYSTEMS else None
