"""fgkseed: seed records for the QEMU runner (see fgkrun).

Seeds (docs/layout-spec.md section 2) and seed records
(docs/seed-records.md) are parsed and written by libfgk, through its Python
binding.  The runner keeps the binding's ``libfgk.SeedRecord`` as it is (seed
canonical, offset an int); this module only turns libfgk's errors into
UsageError.
"""

from __future__ import annotations

from fgkbase import UsageError
import libfgk  # noqa: E402  (on sys.path through fgkbase)


def _usage(fn, *args):
    try:
        return fn(*args)
    except libfgk.FgkError as e:
        raise UsageError(str(e)) from None


def parse_seed_record(text: str, name: str = "<record>") -> "libfgk.SeedRecord":
    """Parse a seed record (libfgk's fgk_seed_record_parse); UsageError
    naming the file and line on any problem."""
    return _usage(libfgk.parse_seed_record, text, name)


def read_seed_record(path) -> "libfgk.SeedRecord":
    return _usage(libfgk.read_seed_record, path)


def format_seed_record(seed: str, build_id: str | None = None,
                       release: str | None = None, offset: int | str | None = None,
                       note: str | None = None) -> str:
    """The canonical text of a seed record (libfgk's writer); an offset given
    as text is read by libfgk's offset parser (fgk_offset_parse)."""
    def fmt():
        off = libfgk.parse_offset(offset) if isinstance(offset, str) else offset
        return libfgk.SeedRecord(libfgk.parse_seed(seed), build_id or None, release or None,
                                 off, note or None).format()
    return _usage(fmt)
