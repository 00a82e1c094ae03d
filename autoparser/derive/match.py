"""Naming a derived profile: which builtin dialect writes the same wire format.

Naming never changes how a derived profile parses; it only tells users (and other runtimes)
which family this is. Two profiles have the same wire format when their tool-call openers,
codec and codec patterns agree after whitespace is normalised.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..profile import Profile, ToolSpec

__all__ = ["dialect_for_model_id", "match_dialect", "name_profile"]


def _n(s: str) -> str:
    return re.sub(r"\s+", "", s)


def _tool_fp(t: ToolSpec) -> tuple[str, str, str, str, str]:
    c = t.codec
    keys = ""
    if c.kind == "json":
        keys = "name_as_key" if c.name_as_key else f"{c.name_keys[0]}|{c.args_keys[0]}"
    elif c.kind == "pythonic" and c.array == "never":
        keys = "unbracketed"  # call lines, not a list: another wire format
    return c.kind, _n(c.header), _n(c.param), keys, _n(c.trailer)


def _openers(t: ToolSpec) -> set[str]:
    return {_n(m) for m in (*t.section_open, *t.call_open)}


def _score(d: Profile, b: Profile) -> int:
    score = 0
    if d.messages is not None or b.messages is not None:
        dm, bm = d.messages, b.messages
        if dm is None or bm is None or (dm.channel, dm.message) != (bm.channel, bm.message):
            return -1
        return 10 + len(set(dm.reasoning_channels) & set(bm.reasoning_channels))
    if d.tools is not None:
        if b.tools is None:
            return -1
        codecs = [b.tools.codec, *([b.tools.alt_codec] if b.tools.alt_codec else [])]
        dk = _tool_fp(d.tools)
        ok = False
        variants = []
        for c in codecs:
            variants.append(c)
            if "{call_id}" in c.header:  # the call id is optional in such headers
                variants.append(replace(c, header=re.sub(r"\{name\}.*\{call_id\}", "{name}", c.header)))
        for c in variants:
            bt = ToolSpec(codec=c)
            bk = _tool_fp(bt)
            if dk[0] != bk[0]:
                continue
            if dk[0] == "json" and dk[3] != bk[3] and not (set(d.tools.codec.args_keys) & set(c.args_keys)
                                                           and set(d.tools.codec.name_keys) & set(c.name_keys)):
                continue
            # a header may carry what the builtin puts in its call marker
            if dk[0] in ("name_json", "tagged") and (dk[1] != bk[1] or dk[2] != bk[2]) and (
                    not (dk[1].endswith(bk[1]) or bk[1].endswith(dk[1])) or dk[2] != bk[2]):
                continue
            ok = True
        if not ok:
            return -1
        d_look = {_n(m) for m in d.tools.lookahead_at_start}
        if d_look and not d_look <= {_n(m) for m in b.tools.lookahead_at_start}:
            return -1
        d_close = {_n(m) for m in (*d.tools.call_close, *d.tools.section_close)}
        b_close = {_n(m) for m in (*b.tools.call_close, *b.tools.section_close)}
        if d_close and not d_close <= b_close:
            score -= 5  # the template closes calls with a marker this dialect does not know
        d_open = _openers(d.tools)
        b_open = _openers(b.tools) | {_n(m) for m in b.tools.lookahead_open}
        if d_open and not d_open <= b_open:
            # markers may be split differently between section, call and header
            joined = "".join(sorted(b_open))
            if not all(o in joined or any(o.startswith(x) for x in b_open) for o in d_open):
                return -1
        score += 10
    elif b.tools is not None:
        return -1
    if d.reasoning is not None and b.reasoning is not None:
        if set(map(_n, d.reasoning.close)) & set(map(_n, b.reasoning.close)):
            score += 3
            if d.reasoning.start == b.reasoning.start:
                score += 1
    elif d.reasoning is None and b.reasoning is None:
        score += 1
    elif d.tools is None:
        return -1
    score += len(set(d.strip) & set(b.strip))
    return score


def _best(prof: Profile) -> list[str]:
    """The builtin dialects whose wire format matches best, the more widely used first."""
    from ..dialects import _names, get_profile

    if prof.tools is None and prof.reasoning is None and prof.messages is None:
        return []
    keyed = [((_score(prof, b), len(b.families)), name) for name in _names() for b in (get_profile(name),)]
    top = max((k[0] for k, _ in keyed), default=0)
    if top <= 0:
        return []
    return [name for key, name in sorted(keyed, key=lambda kn: -kn[0][1]) if key[0] == top]


def match_dialect(prof: Profile, hint: str | None = None) -> str | None:
    """The builtin dialect with the same wire format, or None.

    Ties (dialects the renders cannot tell apart, such as two that write identical calls) go to
    ``hint`` when it is one of them, else to the more widely used format. A hint that is not among
    the best matches changes nothing: what the renders show always wins over a model's name.
    """
    best = _best(prof)
    if hint is not None and hint in best:
        return hint
    return best[0] if best else None


def name_profile(prof: Profile, model_id: str | None, use_hint: bool) -> tuple[str | None, str | None]:
    """The dialect name of a derived profile, and the evidence the model id adds (None without one).

    The model id is a hint and never more: it can only pick among dialects that match the renders
    equally well, and only when ``use_hint`` (``known=True``); pure derivation records it unused.
    """
    if not model_id:
        return match_dialect(prof), None
    hint = dialect_for_model_id(model_id)
    name = match_dialect(prof, hint if use_hint else None)
    said = f"model_id: {model_id!r}"
    if hint is None:
        return name, f"{said} names no known dialect; not used"
    if not use_hint:
        return name, f"{said} suggests dialect {hint!r}; not consulted (pure derivation, known=False)"
    ties = _best(prof)
    if name == hint and len(ties) > 1:
        return name, (f"{said} suggests dialect {hint!r}, one of {len(ties)} that match the renders equally "
                      f"({', '.join(ties)}): the hint chose it")
    if name == hint:
        return name, f"{said} suggests dialect {hint!r}, which the renders agree with"
    return name, (f"{said} suggests dialect {hint!r}, but the renders show "
                  f"{repr(name) if name else 'no builtin format'}; the renders win")


_MODEL_HINTS = (
    (r"gpt-oss", "harmony"), (r"qwen3[-.]?coder|qwen3\.5|qwen3\.6", "qwen3-coder"),
    (r"qwen|qwq|hermes", "hermes"), (r"kimi", "kimi-k2"), (r"glm-?4\.[5-9]|glm-?5", "glm"),
    (r"minimax-?m3", "minimax-m3"), (r"minimax", "minimax-m2"), (r"deepseek-?v4", "deepseek-v4"),
    (r"deepseek-?v3\.2", "deepseek-v3.2"), (r"deepseek-?v3\.1", "deepseek-v3.1"),
    (r"deepseek-?r1", "deepseek-r1"), (r"deepseek", "deepseek-v3"), (r"functiongemma", "functiongemma"),
    (r"gemma-?4", "gemma4"), (r"mistral|magistral|devstral|ministral|mixtral", "mistral"),
    (r"llama-?4", "pythonic"), (r"llama-?3", "llama3-json"), (r"granite", "granite"),
    (r"phi-?4", "phi4"), (r"jamba", "jamba"), (r"command|cohere|c4ai", "command-r"), (r"ernie", "ernie"),
    (r"lfm2", "pythonic"),
)


def dialect_for_model_id(model_id: str) -> str | None:
    """A dialect guessed from a model id alone: all of ``detect`` without a template, and with one
    a tie-break in naming (:func:`name_profile`)."""
    m = model_id.lower()
    for pattern, name in _MODEL_HINTS:
        if re.search(pattern, m):
            return name
    return None
