"""The one project exception: a user-facing problem with a one-line fix.

Defined in nmt.core.errors (the reference core imports nothing else of nmt);
every other module imports it from here.
"""

from nmt.core.errors import NmtError

__all__ = ["NmtError"]
