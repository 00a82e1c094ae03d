#!/usr/bin/env python3
"""Regenerate fixtures/schemas/pydantic.json: tool schemas exactly as Pydantic v2 writes them.

Why this exists: most tool schemas reach a parser from a framework (the OpenAI Agents SDK,
LangChain, instructor, FastMCP all call Pydantic), not from a hand. Pydantic v2 puts every nested
model and Enum behind ``$ref: "#/$defs/..."``, Optional behind ``anyOf [..., {"type": "null"}]``,
bounds in ``minimum``/``maximum``, tuples in ``prefixItems``, discriminated unions in ``oneOf`` +
``discriminator``. The tests (tests/test_schema.py) run these through every tool dialect, so the
fixture records the generator version: a Pydantic release that changes its output changes the
fixture in a reviewable diff.

Usage (from the project root; needs pydantic>=2)::

    python scripts/gen_tool_schemas.py            # rewrite the fixture
    python scripts/gen_tool_schemas.py --check    # exit 1 when the fixture is out of date

Besides the Pydantic output, the file holds one draft-07 variant of ``forecast``
(``forecast_draft07``: ``$defs`` renamed ``definitions``, as older generators and hand-written
OpenAPI-era schemas spell it); it is derived here, mechanically, not written by hand.
"""

from __future__ import annotations

import argparse
import enum
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "fixtures" / "schemas" / "pydantic.json"


def models() -> dict[str, Any]:
    from pydantic import BaseModel, ConfigDict, Field

    class Unit(str, enum.Enum):
        celsius = "celsius"
        fahrenheit = "fahrenheit"

    class Location(BaseModel):
        city: str = Field(min_length=1, max_length=80)
        country: Optional[str] = None  # noqa: UP045 - the spelling frameworks use

    class Forecast(BaseModel):
        """Weather forecast for a place."""

        location: Location
        days: int = Field(ge=1, le=14)
        unit: Unit = Unit.celsius
        hourly: bool = False

    class Priority(int, enum.Enum):
        low = 1
        normal = 2
        high = 3

    class Attendee(BaseModel):
        model_config = ConfigDict(extra="forbid")  # OpenAI strict mode: additionalProperties false

        email: str = Field(pattern=r"^[^@\s]+@[^@\s]+$")
        optional: bool = False

    class Meeting(BaseModel):
        model_config = ConfigDict(extra="forbid")

        title: str = Field(max_length=60)
        attendees: list[Attendee] = Field(min_length=1, max_length=5)
        priority: Priority = Priority.normal
        kind: Literal["call", "onsite"] = "call"
        duration_min: float = Field(gt=0, lt=480)
        slot: tuple[int, int]
        tags: Optional[list[str]] = None  # noqa: UP045
        labels: dict[str, int] = Field(default_factory=dict)

    class Cat(BaseModel):
        pet_type: Literal["cat"]
        meows: int = Field(ge=0)

    class Dog(BaseModel):
        pet_type: Literal["dog"]
        barks: float

    class Adopt(BaseModel):
        pet: Annotated[Union[Cat, Dog], Field(discriminator="pet_type")]  # noqa: UP007
        owner: Union[Location, str]  # noqa: UP007
        note: Optional[str] = Field(default=None, max_length=20)  # noqa: UP045

    class Node(BaseModel):
        name: str
        children: list[Node] = Field(default_factory=list, max_length=3)

    class Outline(BaseModel):
        root: Node
        depth: int = Field(default=1, multiple_of=1, ge=0)

    Node.model_rebuild()
    return {"forecast": Forecast, "schedule_meeting": Meeting, "adopt_pet": Adopt, "outline": Outline}


def build() -> dict[str, Any]:
    import pydantic

    tools = {name: model.model_json_schema() for name, model in models().items()}
    draft07 = json.loads(json.dumps(tools["forecast"]).replace('"#/$defs/', '"#/definitions/'))
    draft07["definitions"] = draft07.pop("$defs")
    draft07["$schema"] = "http://json-schema.org/draft-07/schema#"
    tools["forecast_draft07"] = draft07
    return {"generator": f"pydantic {pydantic.VERSION}", "script": "scripts/gen_tool_schemas.py", "tools": tools}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT.relative_to(ROOT)} is out of date; run scripts/gen_tool_schemas.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
