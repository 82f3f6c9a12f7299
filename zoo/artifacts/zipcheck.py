"""What torch's zip reader requires of an archive's end records and central directory.

torch reads checkpoints with miniz (``caffe2/serialize/inline_container.cc`` over
``mz_zip_reader_read_central_dir``); zoo reads them with Python's ``zipfile``. The two agree on
every file ``torch.save`` writes, but not on damaged ones: miniz follows the zip64 locator's offset
where ``zipfile`` assumes the record sits just before it, ``zipfile`` silently corrects an archive
shifted by prepended bytes where miniz fails, miniz refuses a stored entry whose two sizes differ or
whose data would run past the end of the file. :func:`end_records_problem` applies miniz's checks
(APPNOTE.TXT field layout; miniz 3.0's ``mz_zip_reader_read_central_dir``) so that zoo never calls
"ok" a file torch cannot open. It reads only the end of the file and the central directory.
"""

from __future__ import annotations

import struct
from typing import IO

_EOCD, _EOCD_SIZE = b"PK\x05\x06", 22
_LOCATOR, _LOCATOR_SIZE = b"PK\x06\x07", 20
_ZIP64, _ZIP64_SIZE = b"PK\x06\x06", 56
_CENTRAL, _CENTRAL_SIZE = b"PK\x01\x02", 46
_U32 = 0xFFFFFFFF
_SEARCH = 0xFFFF + _EOCD_SIZE  # the comment is at most 64 KiB: the record is that close to the end


def _find_eocd(fh: IO[bytes], size: int) -> int | None:
    """Offset of the last end-of-central-directory signature with room for the record after it."""
    span = min(size, _SEARCH)
    fh.seek(size - span)
    tail = fh.read(span)
    pos = tail.rfind(_EOCD, 0, len(tail) - _EOCD_SIZE + 4)
    return None if pos < 0 else size - span + pos


def end_records_problem(fh: IO[bytes], size: int) -> str | None:
    """Why miniz would refuse the archive's end records or central directory; None when it reads them."""
    eocd_at = _find_eocd(fh, size)
    if eocd_at is None:
        return "zip archive is cut short or corrupt (no end of central directory record)"
    fh.seek(eocd_at)
    _, disk, cd_disk, on_disk, total, cd_size, cd_ofs, _ = struct.unpack("<IHHHHIIH", fh.read(_EOCD_SIZE))
    cd_end = eocd_at
    if eocd_at >= _LOCATOR_SIZE + _ZIP64_SIZE:
        fh.seek(eocd_at - _LOCATOR_SIZE)
        locator = fh.read(_LOCATOR_SIZE)
        if locator[:4] == _LOCATOR:
            _, _, record_at, disks = struct.unpack("<IIQI", locator)
            if record_at != eocd_at - _LOCATOR_SIZE - _ZIP64_SIZE:
                return "the zip64 end record is not where its locator says"
            fh.seek(record_at)
            record = fh.read(_ZIP64_SIZE)
            if record[:4] == _ZIP64:
                fields = struct.unpack("<IQHHIIQQQQ", record)
                record_size, disk, cd_disk, on_disk, total, cd_size, cd_ofs = fields[1], *fields[4:]
                if record_size < _ZIP64_SIZE - 12 or disks != 1:
                    return "the zip64 end record is corrupt or spans several disks"
                if max(on_disk, total, cd_size) > _U32:
                    return "the zip64 end record claims more entries than torch's reader handles"
                cd_end = record_at
    if total != on_disk or ((disk | cd_disk) and (disk != 1 or cd_disk != 1)):
        return "the archive claims to span several disks"
    if cd_size < total * _CENTRAL_SIZE or cd_ofs + cd_size > size:
        return "the central directory's size or offset is corrupt"
    if cd_ofs + cd_size != cd_end:
        return "the central directory does not end where the end record begins (bytes were added or removed)"
    fh.seek(cd_ofs)
    return _central_problem(fh.read(cd_size), total, size)


def _central_problem(cd: bytes, total: int, size: int) -> str | None:
    """miniz's per-entry checks of the central directory."""
    at = 0
    for _ in range(total):
        if len(cd) - at < _CENTRAL_SIZE or cd[at : at + 4] != _CENTRAL:
            return "a central directory entry is corrupt"
        flags, method = struct.unpack_from("<HH", cd, at + 8)
        comp, decomp, name_len, extra_len, comment_len, disk = struct.unpack_from("<IIHHHH", cd, at + 20)
        (local_at,) = struct.unpack_from("<I", cd, at + 42)
        if comp != _U32 and decomp != _U32 and ((method == 0 and decomp != comp) or (decomp and not comp)):
            return "a central directory entry's sizes contradict its compression method"
        if disk == 0xFFFF or disk not in (0, 1):
            return "a central directory entry names another disk"
        if comp != _U32 and local_at + 30 + comp > size:
            return "a central directory entry's data runs past the end of the file"
        if flags & 0x2000:
            return "a central directory entry is masked (encrypted)"
        at += _CENTRAL_SIZE + name_len + extra_len + comment_len
        if at > len(cd):
            return "a central directory entry runs past the central directory"
    return None
