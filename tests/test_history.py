"""The return trip: a parsed answer, put back in the history, re-renders to the model's own output.

For every corpus template that writes calls (``../shared/templates``, ``EXPECTED.tsv``): the
model's output is the template's own render of a call turn (with and without reasoning, when
the template renders a reasoning field); it is parsed with the derived profile,
turned back into a message with :func:`autoparser.openai.history_message`, and rendered again.
The two renders must be identical up to the end of the model's turn. The cases listed in
``EXCEPTIONS`` fail for a reason outside the return trip (the derived profile does not read the
call, or the template's render cannot be read back by any parser); they may pass, every other
case must.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import autoparser
from autoparser.openai import history_message
from autoparser.profile import HistorySpec, Profile
from autoparser.result import Result, ToolCall

SHARED = Path(__file__).resolve().parents[2] / "shared" / "templates"

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city"]}}}]
CALL = ToolCall("get_weather", {"city": "Paris", "days": 3}, "call0A1b2")
# Kimi K2 templates write the caller's id in the name slot; the model's own id carries the name
KIMI_CALL = ToolCall("get_weather", {"city": "Paris", "days": 3}, "functions.get_weather:0")

EXCEPTIONS = {
    "cohere/c4ai-command-r-plus.tool_use.jinja": "no call format derived (Action: + fenced JSON list)",
    "cohere/c4ai-command-r-v01.tool_use-jsonschema.jinja": "no call format derived (Action: + fenced JSON list)",
    "falcon/Falcon3-3B-Instruct.jinja": "the derived profile does not read an OpenAI tool_calls array in <tool_call>",
    "firefunction/firefunction-v1.jinja": "renders nothing without a `functions` message: no profile",
    "functionary/functionary-medium-v3.2.jinja": "no call format derived (>>>name)",
    "gemma/gemma-3.vllm-pythonic.jinja": "the template drops the comma between arguments: no parser reads it back",
    "llama/Llama-3.2.vllm-pythonic.jinja": "the template writes string values unquoted: no parser reads it back",
    "toolace/ToolACE-8B.vllm-pythonic.jinja": "the template writes string values unquoted: no parser reads it back",
    "minicpm/MiniCPM3-4B.jinja": "the derived pythonic profile does not read calls inside a ```python fence",
    "hunyuan/Hy3.jinja": "no reasoning format derived (</think:opensource>): reasoning parsed as content",
    "solar/Solar-Open-100B.jinja": "no reasoning format derived (<|think|>...<|end|>): reasoning lost",
    "apriel/Apriel-1.6-15b-Thinker-fixed.jinja": "whitespace-only content between the reasoning marker and the "
                                                 "calls: the template writes a line break of its own around it",
    "apriel/Apriel-1.6-15b-Thinker-fixed.llamacpp-rev2.jinja": "as the jinja above",
}


def _rows() -> list[dict[str, str]]:
    if not (SHARED / "EXPECTED.tsv").is_file():
        return []
    with (SHARED / "EXPECTED.tsv").open(encoding="utf-8") as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r["tool_format"] != "none"]


def _sources() -> dict[str, dict[str, str]]:
    with (SHARED / "SOURCES.tsv").open(encoding="utf-8") as f:
        return {r["file"]: r for r in csv.DictReader(f, delimiter="\t")}


def _turn(template: str, bos: str | None, eos: str | None, message: dict[str, Any]) -> str | None:
    """The assistant's output for ``message`` after one user turn, as the template renders it
    (with the fallbacks the analysis uses: laxer semantics, retrieval documents)."""
    from autoparser.derive.probes import Prober

    for permissive in (False, True):
        for context in ({}, {"documents": [{"title": "t", "text": "x"}]}):
            pr = Prober(template, bos, eos)
            pr.permissive = permissive
            span = pr.turn("history", message, tools=TOOLS, **context).span
            if span is not None and "Paris" in span:
                return span
    return None


def _until_end_of_turn(text: str, prof: Profile) -> str:
    """What the model writes: up to its end-of-turn marker (a template may go on with the next header)."""
    k = text.rfind("Paris")
    ends = sorted((text.find(m, k), m) for m in prof.strip if text.find(m, k) >= 0)
    return text[:ends[0][0] + len(ends[0][1])] if ends else text


def _round_trip(template: str, bos: str | None, eos: str | None) -> tuple[int, list[str]]:
    """(variants that rendered a call, failures) for one template."""
    prof = autoparser.analyze(template, bos, eos)
    variants = [Result(tool_calls=[CALL])]
    if prof.history is not None and prof.history.reasoning_field is not None:
        variants.append(Result(reasoning="I should check the weather.", tool_calls=[CALL]))
    seen, failures = 0, []
    for ref in variants:
        out = _turn(template, bos, eos, history_message(ref, prof))
        if out is not None and "get_weather" not in out:
            out = _turn(template, bos, eos, history_message(Result(reasoning=ref.reasoning, tool_calls=[KIMI_CALL]),
                                                            prof))
        if out is None:
            continue
        seen += 1
        out = _until_end_of_turn(out, prof)
        res = autoparser.parse(out, prof, tools=TOOLS, reasoning="auto" if prof.reasoning else None)
        again = _turn(template, bos, eos, history_message(res, prof))
        again = _until_end_of_turn(again, prof) if again is not None else None
        if [c.name for c in res.tool_calls] != ["get_weather"] or again != out:
            failures.append(f"reasoning={bool(ref.reasoning)}: {out!r} -> {again!r}")
    return seen, failures


@pytest.mark.skipif(not _rows(), reason="../shared/templates is not available")
def test_every_template_that_writes_calls_renders_its_parsed_answer_back() -> None:
    src = _sources()
    passed, unexpected = 0, []
    for row in _rows():
        s = src[row["file"]]
        template = (SHARED / row["file"]).read_text(encoding="utf-8")
        try:
            seen, failures = _round_trip(template, s.get("bos") or None, s.get("eos") or None)
        except autoparser.AutoparserError as e:
            seen, failures = 0, [str(e)]
        if seen and not failures:
            passed += 1
        elif row["file"] not in EXCEPTIONS:
            unexpected.append(f"{row['file']}: {failures or 'no call rendered'}")
    assert not unexpected, "\n".join(unexpected)
    assert passed >= len(_rows()) - len(EXCEPTIONS)


def test_history_message_shapes() -> None:
    prof = autoparser.get_profile("hermes").replace(
        history=HistorySpec(arguments="string", reasoning_field="thinking", empty_content="none", call_ids=False))
    res = Result(reasoning="\nhmm\n", content="\n", tool_calls=[CALL])
    msg = history_message(res, prof)
    assert msg == {"role": "assistant", "content": None, "thinking": "hmm",
                   "tool_calls": [{"type": "function",
                                   "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 3}'}}]}
    # an OpenAI message from a client: JSON-string arguments, reasoning under another key
    client = {"role": "assistant", "content": "ok", "reasoning_content": "r",
              "tool_calls": [{"id": "functions.get_weather:0", "type": "function",
                              "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]}
    back = history_message(client, prof.replace(history=HistorySpec(arguments="object",
                                                                    reasoning_field="reasoning_content",
                                                                    call_ids=False)))
    assert back["tool_calls"] == [{"id": "functions.get_weather:0", "type": "function",
                                   "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]
    assert (back["content"], back["reasoning_content"]) == ("ok", "r")
    # no history facts: mapping arguments, reasoning_content, ids kept
    plain = history_message(Result(reasoning="r", tool_calls=[CALL]), autoparser.get_profile("hermes"))
    assert plain["tool_calls"][0]["id"] == "call0A1b2" and plain["reasoning_content"] == "r"
    with pytest.raises(ValueError, match=r"tool_calls\[0\].function.arguments"):
        history_message({"tool_calls": [{"function": {"name": "f", "arguments": "{nope"}}]}, prof)


def test_history_is_derived_and_round_trips() -> None:
    qwen3 = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n"
             "{%- if m.role == 'assistant' and m.reasoning_content and loop.last %}<think>\n"
             "{{ m.reasoning_content }}\n</think>\n\n{%- endif %}"
             "{{ m.content }}{%- for tc in m.tool_calls or [] %}<tool_call>\n"
             "{\"name\": \"{{ tc.function.name }}\", \"arguments\": {{ tc.function.arguments | tojson }}}\n"
             "</tool_call>{%- endfor %}<|im_end|>\n{%- endfor %}"
             "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}")
    prof = autoparser.analyze(qwen3)
    assert prof.history == HistorySpec(arguments="object", reasoning_field="reasoning_content",
                                       reasoning_in_history="last_turn", empty_content="empty", call_ids=True)
    assert autoparser.Profile.from_dict(prof.to_dict()) == prof
    assert "history" not in prof.wire_format()
