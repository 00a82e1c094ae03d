"""From a checked request to what one generation needs: prompt, token budget, grammar, parser.

Pure of I/O apart from the template render and the tokenizer count, which is why the app runs
:func:`make_plan` in a thread: a long conversation or a slow template must not stall the event
loop. Everything the client can still get wrong here (a conversation the template refuses, a
prompt over the context, a tool schema no grammar can force) raises :class:`ApiError` 400.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoparser.errors import TemplateError
from autoparser.profile import Profile
from autoparser.serve.config import ServeConfig
from autoparser.serve.errors import ApiError, bad_request
from autoparser.serve.model import ServedModel
from autoparser.serve.request import ChatRequest, ChoiceMode
from autoparser.serve.seams import history_for_template, tool_grammar

__all__ = ["Plan", "make_plan"]


@dataclass(frozen=True)
class Plan:
    """One generation, decided. ``options`` are ``openvino_genai.GenerationConfig`` fields."""

    prompt: str
    prompt_tokens: int
    profile: Profile  # reads this output (no tool format with tool_choice "none")
    tools: tuple[Mapping[str, Any], ...] | None
    grammar: Mapping[str, Any] | None
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def max_new_tokens(self) -> int:
        return int(self.options["max_new_tokens"])

    def parser(self, special_tokens: frozenset[str]) -> Any:
        """A fresh token-mode parser for this output."""
        return self.profile.parser(tools=list(self.tools) if self.tools else None, special_tokens=special_tokens)


def make_plan(model: ServedModel, req: ChatRequest, config: ServeConfig) -> Plan:
    """Render, count, bound and constrain ``req`` for ``model`` (raises ApiError)."""
    if req.tools and model.call_format is None and req.tool_choice.mode is not ChoiceMode.NONE:
        raise bad_request("this model has no tool-call format: send tool_choice 'none' or no tools", "tools")
    with_tools = bool(req.tools) and req.tool_choice.mode is not ChoiceMode.NONE
    history = history_for_template(req.messages, call_format=model.call_format, renders_calls=model.renders_calls)
    if with_tools and not model.renderer.reads("tools"):
        assert model.call_format is not None
        history = _with_tool_prompt(history, req.tools, model.call_format)
    try:
        prompt = model.renderer.render(history, tools=[dict(t) for t in req.tools] or None,
                                       add_generation_prompt=True, bos_token=model.live.bos_token,
                                       eos_token=model.live.eos_token)
    except TemplateError as exc:
        raise bad_request(f"the model's chat template refused this conversation: {exc}", "messages",
                          "template_error") from exc
    prompt_tokens = model.count_tokens(prompt)
    budget = _budget(model.context_length, prompt_tokens, req.max_tokens, config.max_tokens)
    grammar = None
    if with_tools:
        assert model.call_format is not None
        grammar = tool_grammar(model.call_format, req.tools, req.tool_choice, parallel=req.parallel_tool_calls,
                               max_calls=config.max_parallel_calls)
    profile = model.profile if with_tools else model.profile.replace(tools=None)
    return Plan(prompt=prompt, prompt_tokens=prompt_tokens, profile=profile,
                tools=req.tools if with_tools else None, grammar=grammar, options=_options(req, budget))


def _with_tool_prompt(history: list[dict[str, Any]], tools: Sequence[Mapping[str, Any]],
                      call_format: Profile) -> list[dict[str, Any]]:
    """Tell the model about ``tools`` when its template cannot (it never reads ``tools``).

    Why: a grammar forces the call's shape, but only the prompt tells the model which tool is
    there and what it is for (SmolLM2 otherwise fills ``city`` with "bababa..."). The text goes
    into the first system message, or a new one, as OpenVINO GenAI does with such templates; the
    example is written in the call format the grammar forces.
    """
    from autoparser.grammar import example_calls

    example = example_calls(call_format, [("tool_name", {"argument": "value"})])
    text = ("You can call these tools:\n" + json.dumps([t["function"] for t in tools], ensure_ascii=False)
            + "\nTo call a tool, answer with:\n" + example)
    if history and history[0]["role"] == "system":
        return [{**history[0], "content": f"{history[0]['content']}\n\n{text}"}, *history[1:]]
    return [{"role": "system", "content": text}, *history]


def _budget(context: int | None, prompt_tokens: int, asked: int | None, default: int) -> int:
    """Completion tokens allowed: what was asked (or the default), within the context left."""
    if context is None:
        return asked if asked is not None else default
    left = context - prompt_tokens
    if left <= 0 or (asked is not None and asked > left):
        wanted = f"{prompt_tokens + (asked or 0)} tokens ({prompt_tokens} in the messages"
        wanted += f", {asked} in the completion)" if asked else ")"
        raise ApiError(400, f"This model's maximum context length is {context} tokens. However, you requested "
                       f"{wanted}. Please reduce the length of the messages or completion.",
                       param="messages", code="context_length_exceeded")
    return min(asked if asked is not None else default, left)


def _options(req: ChatRequest, max_new_tokens: int) -> dict[str, Any]:
    """GenerationConfig fields. OpenAI's default temperature is 1 (sampling); 0 is greedy."""
    temperature = 1.0 if req.temperature is None else req.temperature
    opts: dict[str, Any] = {"max_new_tokens": max_new_tokens, "apply_chat_template": False}
    if temperature > 0:
        opts.update(do_sample=True, temperature=temperature,
                    rng_seed=req.seed if req.seed is not None else secrets.randbits(31))
        if req.top_p is not None and req.top_p > 0:
            opts["top_p"] = req.top_p
    else:
        opts["do_sample"] = False
    if req.stop:
        opts.update(stop_strings=set(req.stop), include_stop_str_in_output=False)
    if req.presence_penalty:
        opts["presence_penalty"] = req.presence_penalty
    if req.frequency_penalty:
        opts["frequency_penalty"] = req.frequency_penalty
    if req.ignore_eos:
        opts["ignore_eos"] = True
    return opts
