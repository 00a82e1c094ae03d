"""Structured-output constraints described as plain data, built into OpenVINO GenAI objects on demand.

SmolLM2 never writes tool calls or reasoning blocks by itself, so the live path forces those shapes
with GenAI's grammar-constrained decoding. Describing a constraint as JSON-able data (instead of
building ``StructuredOutputConfig`` objects directly) lets a recorded fixture say exactly what was
forced, and lets tests and the capture script share one vocabulary.

Spec forms (``kind`` selects one):

* ``{"kind": "regex", "regex": "..."}``
* ``{"kind": "grammar", "grammar": "..."}`` (EBNF, xgrammar dialect)
* ``{"kind": "json_schema", "json_schema": "..."}`` (schema as a JSON string)
* ``{"kind": "structural_tags", "tag": NODE}`` and ``{"kind": "compound_grammar", "grammar": NODE}``

where ``NODE`` is one of ``{"type": "regex", "pattern"}``, ``{"type": "json_schema", "schema"}``,
``{"type": "ebnf", "grammar"}``, ``{"type": "const_string", "value"}``, ``{"type": "any_text"}``,
``{"type": "qwen_xml_parameters", "schema"}``, ``{"type": "tag", "begin", "content": NODE, "end"}``,
``{"type": "concat", "items": [NODE, ...]}``, ``{"type": "union", "items": [NODE, ...]}``,
``{"type": "triggered_tags", "triggers", "tags": [TAG, ...], "at_least_one", "stop_after_first"}``,
``{"type": "tags_with_separator", "tags": [TAG, ...], "separator", "at_least_one", "stop_after_first"}``.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from typing import Any

from autoparser.live._base import LiveError, require_openvino

__all__ = ["build_structured_output"]


def build_structured_output(spec: Mapping[str, Any]) -> Any:
    """Return an ``openvino_genai.StructuredOutputConfig`` for a spec (see the module docstring)."""
    ov = require_openvino()
    so = ov.StructuredOutputConfig
    kind = spec.get("kind")
    if kind in ("regex", "grammar", "json_schema"):
        return so(**{str(kind): str(spec[str(kind)])})
    if kind == "structural_tags":
        return so(structural_tags_config=_node(so, spec["tag"]))
    if kind == "compound_grammar":
        return so(compound_grammar=_node(so, spec["grammar"]))
    raise LiveError(f"unknown structured-output kind {kind!r}")


#: leaf node type -> (StructuredOutputConfig class, the field holding its one argument)
_LEAVES = {"regex": ("Regex", "pattern"), "json_schema": ("JSONSchema", "schema"), "ebnf": ("EBNF", "grammar"),
           "const_string": ("ConstString", "value"), "qwen_xml_parameters": ("QwenXMLParametersFormat", "schema")}


def _node(so: Any, node: Mapping[str, Any]) -> Any:
    """Build one structural-tag node; recursive because tags nest."""
    t = node.get("type")
    if t in _LEAVES:
        cls, key = _LEAVES[t]
        return getattr(so, cls)(str(node[key]))
    if t == "any_text":
        return so.AnyText()
    if t == "tag":
        return so.Tag(str(node["begin"]), _node(so, node["content"]), str(node["end"]))
    if t in ("concat", "union"):
        items = [_node(so, item) for item in node["items"]]
        if len(items) < 2:
            raise LiveError(f"a {t} node needs at least two items")
        # GenAI builds Concat/Union with the + and | operators.
        return functools.reduce(operator.add if t == "concat" else operator.or_, items)
    if t in ("triggered_tags", "tags_with_separator"):
        tags = [_node(so, tag) for tag in node["tags"]]
        flags = {
            "at_least_one": bool(node.get("at_least_one", False)),
            "stop_after_first": bool(node.get("stop_after_first", False)),
        }
        if t == "triggered_tags":
            return so.TriggeredTags(triggers=list(node["triggers"]), tags=tags, **flags)
        return so.TagsWithSeparator(tags=tags, separator=str(node["separator"]), **flags)
    raise LiveError(f"unknown structural-tag node type {t!r}")
