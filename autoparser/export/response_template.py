"""A transformers ``response_template`` (``tokenizer_config.json``) equivalent of a profile.

Why: transformers (5.x, ``transformers.utils.chat_parsing``) parses model output with a declarative
``response_template``: regions opened and closed by literals or regexes, each parsed as text,
JSON, XML-ish key/value tags or a Python call list, then reshaped by a ``transform``. A checkpoint
that ships one is parsed by ``tokenizer.parse_response``; this module writes one from a profile.

The template language has less room than a profile: one spelling per field (a dialect's
alternative codec is dropped), one key per transform placeholder (``arguments`` *or*
``parameters``), no recovery rules, no "call inside reasoning" semantics. Every such loss is
listed in :attr:`ResponseTemplateExport.losses`; a profile that cannot be expressed at all
raises ExportError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..grammar.layout import Layout, pattern
from ..grammar.tree import accepting_regex
from ..profile import CodecSpec, Profile, ToolSpec
from .errors import ExportError

__all__ = ["ResponseTemplateExport", "response_template"]

_WS = " \t\r\n"


@dataclass(frozen=True)
class ResponseTemplateExport:
    template: dict[str, Any]
    losses: tuple[str, ...]

    def tokenizer_config(self) -> dict[str, Any]:
        """The fragment to merge into ``tokenizer_config.json``."""
        return {"response_template": self.template}


def _rx(lit: str) -> str:
    """A literal as a regex whose whitespace runs match any whitespace (the grammar tree's print)."""
    return accepting_regex(pattern(lit.strip(_WS)))


def _alts(markers: tuple[str, ...]) -> str:
    return "|".join(_rx(m) for m in sorted(markers, key=len, reverse=True))


def _function(name: str, args: str, cid: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if cid is not None:
        out["id"] = cid
    return out


def _header_rx(p: Profile, c: CodecSpec) -> tuple[str, bool]:
    """The call header as the grammar tree lays it out, with groups ``name`` (and ``id``)."""
    return accepting_regex(Layout(p, []).header(c, None)), "{id}" in c.header or "{call_id}" in c.header


def _tool_field(p: Profile, t: ToolSpec, losses: list[str]) -> dict[str, Any]:
    c = t.codec
    if c.kind == "pattern":
        raise ExportError("calls written by the pattern codec have no response_template equivalent yet")
    if t.alt_codec is not None:
        losses.append(f"alternative call spelling ({t.alt_codec.kind} codec) is not expressible; "
                      "only the main one is parsed")
    if len(c.args_keys) > 1 and c.kind == "json":
        losses.append(f"arguments key aliases {list(c.args_keys[1:])} dropped; only {c.args_keys[0]!r} is read")
    if len(c.name_keys) > 1 and c.kind == "json":
        losses.append(f"name key aliases {list(c.name_keys[1:])} dropped")
    if t.separators:
        losses.append(f"calls separated by {list(t.separators)} are not split (one JSON value per region)")
    if t.lookahead_open:
        losses.append(f"calls that start with {list(t.lookahead_open)} without their wrapper marker are "
                      "only recognised where noted")
    losses.append("no recovery of truncated or unterminated calls (transformers raises or keeps text)")
    field: dict[str, Any] = {"repeats": True}

    if c.kind == "json" and c.flavor == "python":
        losses.append("arguments written as a Python dict literal are not read; only JSON is")
    if c.kind == "json":
        nk, ak = c.name_keys[0], c.args_keys[0]
        if c.name_as_key:
            raise ExportError("name-as-key JSON calls have no response_template equivalent")
        opener = t.call_open or t.section_open
        if not opener:
            raise ExportError("JSON calls without an opening marker have no response_template equivalent")
        single = (bool(t.call_open) and c.array == "never") or "{" in t.lookahead_open
        if "{" in t.lookahead_at_start:
            # Llama 3: a bare JSON call is the whole message, so it may only open at the start
            field["open_pattern"] = f"{_alts(opener)}|^(?=\\s*\\{{)"
        else:
            field["open"] = list(opener)
        close = list(t.call_close or t.section_close or p.strip)
        if close:
            field["close"] = close
        field["content"] = "json"
        if single:
            field["transform"] = _function(f"{{content.{nk}}}", f"{{content.{ak}}}")
            if c.array != "never":
                losses.append("a list of calls in one region is not accepted (single object transform)")
        else:
            if c.array == "allow":
                losses.append("a single call object (not in a list) is not accepted where a list may be written")
            field["transform"] = _function(f"{{{nk}}}", f"{{{ak}}}")
            field["transform_each"] = True
        return field

    if c.kind == "name_json":
        head, has_id = _header_rx(p, c)
        opener = t.call_open or t.section_open
        op = f"(?:{_alts(opener)})\\s*" if opener else ""
        if t.call_open and t.section_open:
            op = f"(?:{_alts(t.call_open)})\\s*"
        field["open_pattern"] = op + head
        trailer = c.trailer.strip(_WS)
        closers: tuple[str, ...] = t.call_close
        if trailer:
            # a trailer that repeats the name ('</{name}>') refers back to the name the call opened with
            field["close_pattern"] = (r"\s*" + "(?P=name)".join(_rx(t) for t in trailer.split("{name}"))
                                      + (rf"\s*(?:{_alts(closers)})" if closers else ""))
        elif closers:
            field["close"] = list(closers)
        elif t.section_open:
            # no end marker: the next call's marker or an end-of-turn token ends the call
            stops = tuple(dict.fromkeys((*t.section_open, *p.strip)))
            field["close_pattern"] = f"(?={_alts(stops)})"
        field["content"] = "json"
        if c.flavor == "relaxed":
            field["content_args"] = {"unquoted_keys": True, "string_delims": [list(d) for d in c.string_delims]}
            if c.relaxed_seps != (":", ","):
                losses.append(f"the object's separators {c.relaxed_seps[0]!r} / {c.relaxed_seps[1]!r} cannot be "
                              "said; the response template reads ':' and ','")
        elif c.flavor == "python":
            losses.append("arguments written as a Python dict literal are not read; only JSON is")
        elif c.flavor in ("xml", "csv"):
            losses.append(f"arguments written as {c.flavor}-escaped JSON are not unescaped; only plain JSON is read")
        field["transform"] = _function("{name}", "{content}", "{id}" if has_id else None)
        if has_id and "{call_id}" in c.header:
            losses.append("the optional native call id is required by the transform when present in the header; "
                          "a call without one fails the placeholder")
            field["transform"] = _function("{name}", "{content}")
        return field

    if c.kind == "tagged":
        head, _ = _header_rx(p, c)
        if t.call_open:
            # a distinctive header (``<function=``) may appear without its wrapper marker
            optional = "?" if t.lookahead_open or c.header.lstrip(_WS)[:1] == "<" else ""
            op = f"(?:(?:{_alts(t.call_open)})\\s*){optional}"
        else:
            op = ""
        field["open_pattern"] = op + head
        trailer = c.trailer.strip(_WS)
        closers = t.call_close
        if trailer:
            field["close_pattern"] = _rx(trailer) + (rf"(?:\s*(?:{_alts(closers)}))?" if closers else "")
        elif closers:
            field["close"] = list(closers)
        else:
            raise ExportError("tagged calls without an end marker have no response_template equivalent")
        field["content"] = "xml-inline"
        pre, rest = c.param.split("{key}", 1)
        if "{string}" in rest:
            mid1, rest2 = rest.split("{string}", 1)
            mid2, post = rest2.split("{value}", 1)
            mid = _rx(mid1) + r"[^>]*?" + _rx(mid2)
            losses.append("string=\"false\" parameters are not JSON-decoded; values are typed by the tool schema only")
        else:
            mid, post = rest.split("{value}", 1)
            mid = _rx(mid)
        lead = r"\n?" if mid.endswith("\\n") or rest.split("{value}")[0].endswith("\n") else ""
        post_rx = _rx(post).replace(re.escape("{key}"), "(?P=key)")
        trail = r"\n?" if post.startswith("\n") else ""
        tag = f"{_rx(pre)}(?P<key>[^>\"]+?){mid}{lead}(?P<value>.*?){trail}{post_rx}"
        field["content_args"] = {"tag_pattern": tag}
        field["transform"] = _function("{name}", "{content}")
        losses.append("parameter values are strings unless tools are passed (transformers casts by schema)")
        losses.append("a call whose section wrapper differs from its call markers keeps the wrapper in content")
        return field

    # pythonic: the wrapper marker, or a bare list that starts like a call
    bare = r"(?=\[\s*[A-Za-z_][\w.\-]*\s*\()"
    opener = t.call_open
    field["open_pattern"] = f"{_alts(opener)}|{bare}" if opener and "[" in t.lookahead_open else (
        _alts(opener) if opener else bare)
    close = list(dict.fromkeys((*t.call_close, *p.strip)))
    if close:
        field["close"] = close
    field["content"] = "python-call-list"
    field["transform"] = _function("{name}", "{arguments}")
    field["transform_each"] = True
    return field


def response_template(profile: Profile) -> ResponseTemplateExport:
    """The transformers ``response_template`` for ``profile`` and what it cannot express."""
    if profile.messages is not None:
        raise ExportError("Harmony-style header-routed messages: no response_template equivalent is "
                          "generated (use the GPT-OSS template shipped with the checkpoint)")
    losses: list[str] = []
    fields: dict[str, Any] = {}
    r = profile.reasoning
    if r is not None:
        if not r.open:
            raise ExportError("reasoning without an open marker (always prefilled) has no response_template "
                              "equivalent that works without the prompt prefix")
        fields["thinking"] = {"open": list(r.open), "close": list(r.close), "content": "text"}
        if r.start != "explicit":
            losses.append(f"reasoning start {r.start!r}: pass the prompt as prefix= so an opened block is seen")
        losses.append("a tool call inside an unclosed reasoning block stays reasoning")
    if profile.tools is not None:
        fields["tool_calls"] = _tool_field(profile, profile.tools, losses)
    t = profile.tools
    tool_field = fields.get("tool_calls", {})
    if t is not None and t.section_open and not set(tool_field.get("open", ())) & set(t.section_open):
        # calls are matched by their own markers; the section wrapper is swallowed by a helper field
        # whose value is always empty (transformers drops empty fields from the message)
        fields["x_tool_section"] = {"open": list(dict.fromkeys((*t.section_open, *t.section_close))),
                                    "close_pattern": "", "content": "text"}
    content: dict[str, Any] = {"content": "text"}
    ends = tuple(dict.fromkeys((*profile.strip, *profile.content_close)))
    if ends:
        content["close"] = list(ends)
    fields["content"] = content
    if profile.content_open:
        fields["x_content_open"] = {"open": list(profile.content_open), "close_pattern": "", "content": "text"}
        losses.append("content markers are swallowed by an empty helper field")
    anchor_open = ""
    if r is not None and r.open:
        o = _alts(r.open)
        # the prompt's last open marker starts the response; otherwise the end of the prompt does
        anchor_open = f"(?=(?:{o})\\s*\\Z)|(?<!(?:{o})\\s*)"
    template = {"defaults": {"role": "assistant"}, "start_anchor_pattern": anchor_open + r"\Z", "fields": fields}
    return ResponseTemplateExport(template, tuple(dict.fromkeys(losses)))
