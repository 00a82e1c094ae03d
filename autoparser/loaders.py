"""One-line profile loaders for the objects users already hold: a transformers tokenizer, a GGUF
file, an OpenVINO IR folder or an OpenVINO GenAI tokenizer.

Why: ``autoparser.derive.analyze`` needs a chat template, the BOS/EOS tokens and the special
tokens; each ecosystem keeps them somewhere else. These wrappers only gather those inputs (the
analysis itself lives in ``autoparser.derive``) and import nothing optional until called.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import AutoparserError
from .profile import Profile

__all__ = ["from_gguf", "from_openvino", "from_transformers"]


def _pick_template(template: object) -> str:
    """A tokenizer may hold several named templates; the tool-use one describes tool calls."""
    if isinstance(template, str):
        return template
    if isinstance(template, Mapping):
        for key in ("tool_use", "default"):
            if isinstance(template.get(key), str):
                return str(template[key])
        for v in template.values():
            if isinstance(v, str):
                return v
    if isinstance(template, list):  # the tokenizer_config.json spelling: [{"name", "template"}]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, Mapping)}
        return _pick_template(named)
    raise AutoparserError("the tokenizer has no chat template (chat_template is not set)")


def _token_text(tok: object) -> str | None:
    if tok is None:
        return None
    content = getattr(tok, "content", tok)
    return content if isinstance(content, str) else str(content)


def _response_template_evidence(prof: Profile, rt: Mapping[str, Any]) -> list[str]:
    """Compare the markers a shipped response_template uses with the derived profile's."""
    fields = rt.get("fields") if isinstance(rt, Mapping) else None
    if not isinstance(fields, Mapping):
        return ["tokenizer ships a response_template without fields (ignored)"]
    ours: set[str] = set()
    if prof.reasoning is not None:
        ours |= {*prof.reasoning.open, *prof.reasoning.close}
    if prof.tools is not None:
        t = prof.tools
        ours |= {*t.section_open, *t.section_close, *t.call_open, *t.call_close}
    theirs: set[str] = set()
    for f in fields.values():
        if not isinstance(f, Mapping):
            continue
        for k in ("open", "close"):
            v = f.get(k)
            if isinstance(v, str):
                theirs.add(v)
            elif isinstance(v, list):
                theirs |= {x for x in v if isinstance(x, str)}
    agree = sorted(ours & theirs)
    only_theirs = sorted(theirs - ours - set(prof.strip))
    out = [f"shipped response_template shares markers {agree}" if agree else
           "shipped response_template shares no literal marker with the derived profile"]
    if only_theirs:
        out.append(f"shipped response_template also uses {only_theirs} (not in the derived profile)")
    return out


def from_transformers(tokenizer: Any, *, known: bool = True) -> Profile:
    """Derive a profile from a transformers tokenizer (its chat template and special tokens).

    A ``response_template`` shipped with the tokenizer is recorded as extra evidence (which of its
    markers the derived profile agrees with); it never overrides the derivation.
    """
    from .derive import analyze

    template = _pick_template(getattr(tokenizer, "chat_template", None))
    special: list[str] = []
    for attr in ("all_special_tokens", "additional_special_tokens"):
        vals = getattr(tokenizer, attr, None) or []
        special += [str(v) for v in vals]
    added = getattr(tokenizer, "added_tokens_decoder", None)
    if isinstance(added, Mapping):
        special += [str(getattr(t, "content", t)) for t in added.values() if getattr(t, "special", False)]
    special_t = tuple(dict.fromkeys(s for s in special if s))
    model_id = getattr(tokenizer, "name_or_path", None) or None
    prof = analyze(template, _token_text(getattr(tokenizer, "bos_token", None)),
                   _token_text(getattr(tokenizer, "eos_token", None)), known=known,
                   special_tokens=special_t, model_id=model_id)
    from .tokens import with_special_markers

    prof = with_special_markers(prof, special_t, "the tokenizer")
    rt = getattr(tokenizer, "response_template", None)
    if isinstance(rt, Mapping):
        prof = dataclasses.replace(prof, evidence=(*prof.evidence, *_response_template_evidence(prof, rt)))
    return prof


def _from_path(path: str | Path, known: bool) -> Profile:
    from .cache import ProfileCache, analyze_source
    from .templates.sources import load_source

    prof: Profile = analyze_source(load_source(Path(path)), known=known, cache=ProfileCache(None)).profile
    return prof


def from_gguf(path: str | Path, *, known: bool = True) -> Profile:
    """Derive a profile from the chat template and tokens stored in a GGUF file."""
    p = Path(path)
    if p.suffix.lower() != ".gguf":
        raise AutoparserError(f"{p} is not a .gguf file")
    return _from_path(p, known)


def from_openvino(path_or_tokenizer: str | Path | Any, *, known: bool = True) -> Profile:
    """Derive a profile from an OpenVINO IR folder (or its tokenizer .xml) or a GenAI ``Tokenizer``."""
    if isinstance(path_or_tokenizer, str | Path):
        return _from_path(path_or_tokenizer, known)
    tok = path_or_tokenizer
    get = getattr(tok, "get_original_chat_template", None) or getattr(tok, "get_chat_template", None)
    if get is None:
        raise AutoparserError(f"expected a path or an openvino_genai.Tokenizer, got {type(tok).__name__}")
    from .derive import analyze

    template = get()
    if not template:
        raise AutoparserError("the OpenVINO tokenizer has no chat template")
    bos = tok.get_bos_token() if hasattr(tok, "get_bos_token") else None
    eos = tok.get_eos_token() if hasattr(tok, "get_eos_token") else None
    return analyze(template, bos or None, eos or None, known=known)
