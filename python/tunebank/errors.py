"""The exceptions tunebank raises, one class per kind of failure.

Every error from the Rust library is classified by its type (``tunebank::failure::FailureKind``),
never by its message text, so callers can act on the class. Each kind's class is the one the
library's error table names (``tunebank::failure::TABLE``), the table that also gives the kind's
exit code of the ``tunebank`` command line and its status in the C ABI:

- :class:`InputError` — the request is at fault (an argument, option, model or file); retrying
  the same request fails the same way; nothing was written. Also a :class:`ValueError`.
- :class:`BankIOError` — the operating system failed a read or write (disk full, permission).
  Also an :class:`OSError`.
- :class:`BankBusyError` — another process holds the bank in a way that excludes this open;
  retrying later may work.
- :class:`BankDamagedError` — a record fails its checksum or the storage engine is corrupt.
- :class:`BankUnreachableError` — a ``postgres://`` bank's server cannot be reached (also a
  :class:`ConnectionError`).

One class is not a failure of the library but the answer of a strict call:
:class:`NotExactError` — ``Bank.lookup_ops(..., strict=True)`` found an op not tuned at its
exact shape (also a :class:`LookupError`).
"""


class TunebankError(Exception):
    """Base class of every tunebank error."""


class InputError(TunebankError, ValueError):
    """Bad input: an argument, ATC option, model, op template or file the request named."""


class BankIOError(TunebankError, OSError):
    """The operating system failed a read, write or sync of the bank."""


class BankBusyError(TunebankError):
    """Another process holds the bank exclusively; retrying later may work."""


class BankUnreachableError(TunebankError, ConnectionError):
    """The bank server (a ``postgres://`` bank) cannot be reached or timed out."""


class BankDamagedError(TunebankError):
    """The bank is damaged: a record fails its checksum or does not decode."""


class NotExactError(TunebankError, LookupError):
    """A strict look-up (``strict=True``) found an op not tuned at its exact shape."""


__all__ = [
    "TunebankError",
    "InputError",
    "BankIOError",
    "BankBusyError",
    "BankDamagedError",
    "BankUnreachableError",
    "NotExactError",
]
