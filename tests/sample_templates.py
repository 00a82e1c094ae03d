"""Small chat templates written for the tests (not from any model)."""

#: ChatML turns, <think> reasoning, hermes-style <tool_call> JSON calls
HERMES_LIKE = """{%- for m in messages -%}
<|im_start|>{{ m.role }}
{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif -%}
{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>
{{ {"name": c.function.name, "arguments": c.function.arguments} | tojson }}
</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif -%}"""
