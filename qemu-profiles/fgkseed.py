"""fgkseed: seed records for the QEMU runner (see fgkrun).

Seeds (docs/layout-spec.md section 2) and seed records
(docs/seed-records.md) are parsed and written by libfgk, through its Python
binding; this module turns them into the runner's dicts and its errors into
UsageError.
"""

from __future__ import annotations

from fgkbase import UsageError
import libfgk  # noqa: E402  (on sys.path through fgkbase)


def _record_dict(rec) -> dict:
    d = rec.as_dict()
    if "offset" in d:
        d["offset"] = f"{d['offset']:#x}"
    return d


def parse_seed_record(text: str, name: str = "<record>") -> dict:
    """Parse a seed record (libfgk's fgk_seed_record_parse).

    Returns a dict keyed by the keys present: seed and build-id lowercase,
    offset as canonical ``0x...`` text.  Raises UsageError naming the file
    and line on any problem.
    """
    try:
        return _record_dict(libfgk.parse_seed_record(text, name))
    except libfgk.FgkError as e:
        raise UsageError(str(e)) from None


def read_seed_record(path) -> dict:
    try:
        return _record_dict(libfgk.read_seed_record(path))
    except libfgk.FgkError as e:
        raise UsageError(str(e)) from None


def format_seed_record(seed: str, build_id: str | None = None,
                       release: str | None = None, offset: int | str | None = None,
                       note: str | None = None) -> str:
    """The canonical text of a seed record (libfgk's writer)."""
    try:
        if isinstance(offset, str):
            offset = parse_seed_record(f"seed: {'0' * 64}\noffset: {offset}\n")["offset"]
            offset = int(offset, 16)
        return libfgk.SeedRecord(libfgk.parse_seed(seed), build_id or None, release or None,
                                 offset, note or None).format()
    except libfgk.FgkError as e:
        raise UsageError(str(e)) from None
