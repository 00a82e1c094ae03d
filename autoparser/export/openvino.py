"""OpenVINO GenAI model-profile fragment: which GenAI parser (with which options) handles each part.

Shape::

    {"tool_calls": {"protocol": "openvino:llama3_json_tool_parser"},
     "reasoning":  {"protocol": "openvino:reasoning_parser", "open_tag": "<think>",
                    "close_tag": "</think>", "expect_open_tag": true, "keep_original_content": false}}

Equivalence is decided from the wire format (markers, codec), never from the dialect's name: a
GenAI parser is named only when it reads the same text the profile describes. Where GenAI has no
such parser (Hermes/Qwen, Mistral, GLM, DeepSeek, ...), the part is ``autoparser:<dialect>`` and
carries the whole profile (``to_dict``), so a consumer never gets a silently wrong mapping.
Known behavioural limits of the GenAI parser that is named are listed under ``caveats``; they
are properties of GenAI 2026.4.1 (see shared notes), not of the wire format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ProfileError
from ..profile import Profile
from .errors import ExportError

__all__ = [
    "OPENVINO_REASONING_PROTOCOLS",
    "OPENVINO_TOOL_PROTOCOLS",
    "openvino_fragment",
    "openvino_parsers",
    "validate_openvino_profile",
]

#: protocol -> (GenAI class, constructor options it accepts with their types)
OPENVINO_REASONING_PROTOCOLS: dict[str, tuple[str, dict[str, type]]] = {
    "openvino:reasoning_parser": ("ReasoningParser", {
        "open_tag": str, "close_tag": str, "expect_open_tag": bool, "keep_original_content": bool}),
    "openvino:reasoning_incremental_parser": ("ReasoningIncrementalParser", {
        "open_tag": str, "close_tag": str, "expect_open_tag": bool, "keep_original_content": bool}),
    "openvino:deepseek_r1_reasoning_parser": ("DeepSeekR1ReasoningParser", {}),
    "openvino:deepseek_r1_reasoning_incremental_parser": ("DeepSeekR1ReasoningIncrementalParser", {}),
    "openvino:phi4_reasoning_parser": ("Phi4ReasoningParser", {}),
    "openvino:phi4_reasoning_incremental_parser": ("Phi4ReasoningIncrementalParser", {}),
}
OPENVINO_TOOL_PROTOCOLS: dict[str, tuple[str, dict[str, type]]] = {
    "openvino:llama3_json_tool_parser": ("Llama3JsonToolParser", {}),
    "openvino:llama3_pythonic_tool_parser": ("Llama3PythonicToolParser", {}),
}
#: keys every part may carry besides the protocol and its options
_META = {"protocol": str, "streaming": str, "caveats": list}
_SLOTS = {"reasoning": OPENVINO_REASONING_PROTOCOLS, "tool_calls": OPENVINO_TOOL_PROTOCOLS}

_REASONING_CAVEATS = (
    "GenAI parses only the first reasoning block",
    "the incremental parser withholds all text until the open tag when expect_open_tag is true "
    "(no end-of-stream flush when the model never opens a block)",
)


def _own(profile: Profile) -> dict[str, Any]:
    name = profile.name or "derived"
    return {"protocol": f"autoparser:{name}", "profile": profile.to_dict()}


def _reasoning(profile: Profile) -> dict[str, Any] | None:
    r = profile.reasoning
    if profile.messages is not None:
        return _own(profile)
    if r is None or profile.builtin_only("reasoning"):  # no render shows a block: configure no parser
        return None
    # one close tag, at most one open tag, and a start state GenAI can express
    if len(r.close) != 1 or len(r.open) > 1 or r.start == "auto" or (r.start == "explicit" and not r.open):
        return _own(profile)
    open_tag = r.open[0] if r.open else "<think>"
    return {
        "protocol": "openvino:reasoning_parser",
        "open_tag": open_tag,
        "close_tag": r.close[0],
        # explicit: the model writes the open tag; prefilled: the prompt already opened the block
        "expect_open_tag": r.start == "explicit",
        # autoparser removes reasoning from content; GenAI keeps it unless told not to
        "keep_original_content": False,
        "streaming": "openvino:reasoning_incremental_parser",
        "caveats": list(_REASONING_CAVEATS),
    }


def _tools(profile: Profile) -> dict[str, Any] | None:
    t = profile.tools
    if profile.messages is not None:
        return _own(profile)
    if t is None:
        return None
    c = t.codec
    markers = set(t.section_open) | set(t.call_open) | set(t.lookahead_open)
    # Llama 3.x JSON: {"name": ..., "parameters": {...}}, optionally after <|python_tag|>
    if (c.kind == "json" and "name" in c.name_keys and "parameters" in c.args_keys and not c.name_as_key
            and not t.call_close and not t.section_close and markers <= {"<|python_tag|>", "{"}
            and "{" in t.lookahead_open):
        return {"protocol": "openvino:llama3_json_tool_parser",
                "caveats": ["one call per response (';'-separated calls raise in GenAI 2026.4.1)",
                            "calls keep the 'parameters' key; no streaming tool parser"]}
    # Pythonic: [name(key=value, ...)], bare or inside a wrapper GenAI's bracket search skips
    if c.kind == "pythonic" and "[" in t.lookahead_open:
        return {"protocol": "openvino:llama3_pythonic_tool_parser",
                "caveats": ["one call per response; only double-quoted string values; values stay strings",
                            "no streaming tool parser"]}
    return _own(profile)


def openvino_fragment(profile: Profile) -> dict[str, Any]:
    """The OpenVINO GenAI model-profile fragment for ``profile`` (keys only for parts it has)."""
    parts = (("tool_calls", _tools(profile)), ("reasoning", _reasoning(profile)))
    out = {slot: part for slot, part in parts if part is not None}
    validate_openvino_profile(out)
    return out


def validate_openvino_profile(d: Mapping[str, Any]) -> None:
    """Check a fragment: known slots, known protocols, allowed options of the right types.

    Raises ExportError naming the offending key; an ``autoparser:*`` part must embed a valid profile.
    """
    if not isinstance(d, Mapping):
        raise ExportError(f"OpenVINO profile fragment must be an object, got {type(d).__name__}")
    for slot in d:
        if slot not in _SLOTS:
            raise ExportError(f"unknown key {slot!r} in OpenVINO profile fragment (valid: {', '.join(_SLOTS)})")
    for where, part in d.items():
        known = _SLOTS[where]
        if not isinstance(part, Mapping):
            raise ExportError(f"{where}: expected an object with a 'protocol', got {type(part).__name__}")
        proto = part.get("protocol")
        if not isinstance(proto, str):
            raise ExportError(f"{where}.protocol: missing or not a string")
        if proto.startswith("autoparser:"):
            if not proto[len("autoparser:"):]:
                raise ExportError(f"{where}.protocol: 'autoparser:' needs a dialect name")
            extra = sorted(set(part) - {"protocol", "profile"})
            if extra:
                raise ExportError(f"{where}: unknown option {extra[0]!r} for {proto}")
            prof = part.get("profile")
            if not isinstance(prof, Mapping):
                raise ExportError(f"{where}.profile: {proto} must embed the profile (Profile.to_dict())")
            try:
                Profile.from_dict(prof)
            except ProfileError as e:
                raise ExportError(f"{where}.profile: {e}") from None
            continue
        if proto not in known:
            other = next((s for s, k in _SLOTS.items() if proto in k), None)
            hint = f" ({proto} is a {other} parser)" if other else ""
            raise ExportError(f"{where}.protocol: unknown protocol {proto!r}{hint}; valid: "
                              f"{', '.join(sorted(known))}, or autoparser:<dialect>")
        options = known[proto][1]
        for k, v in part.items():
            tp = options.get(k) or _META.get(k)
            if tp is None:
                allowed = sorted({*options, *_META} - {"protocol"})
                raise ExportError(f"{where}: unknown option {k!r} for {proto} (allowed: {', '.join(allowed)})")
            if not isinstance(v, tp):
                raise ExportError(f"{where}.{k}: expected {tp.__name__}, got {type(v).__name__}")
        stream = part.get("streaming")
        if stream is not None and stream not in known:
            raise ExportError(f"{where}.streaming: unknown protocol {stream!r}")


def openvino_parsers(d: Mapping[str, Any], incremental: bool = False) -> list[Any]:
    """Instantiate the GenAI parsers a fragment names (needs ``openvino_genai``).

    Only ``openvino:*`` parts are built; ``autoparser:*`` parts are skipped (use autoparser's own
    parser for those). With ``incremental``, reasoning uses the ``streaming`` protocol.
    """
    validate_openvino_profile(d)
    import openvino_genai as ov  # type: ignore[import-untyped]

    out: list[Any] = []
    for slot in ("reasoning", "tool_calls"):
        part = d.get(slot)
        if part is None or part["protocol"].startswith("autoparser:"):
            continue
        proto = part["protocol"]
        if incremental and slot == "reasoning" and "streaming" in part:
            proto = part["streaming"]
        cls_name, options = _SLOTS[slot][proto]
        kwargs = {k: v for k, v in part.items() if k in options}
        out.append(getattr(ov, cls_name)(**kwargs))
    return out
