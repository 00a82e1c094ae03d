"""Tool calls: which codec writes a call, and which markers wrap calls and groups of calls.

One call and two calls are rendered (``shapes``); the call block is cut out of the turn
(``blocks``); every recogniser proposes its reading (``proposals``: ``jsoncalls``, ``pythonic``,
``namejson``, ``tagged``, ``pattern``), each placing the markers the same way (``layout``); the
search (``search``) renders random call turns and keeps the reading that parses them back.
"""

from __future__ import annotations

from .shapes import find_tools

__all__ = ["find_tools"]
