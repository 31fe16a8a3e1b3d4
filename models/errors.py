"""What an unusable instance file raises: each broken rule as a Problem (field path, rule), the file they belong to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One broken rule: the field path (or "" for the whole file) and the rule; ``source`` names what
    to blame when it is not the file itself (a ``--set PATH=VALUE`` option)."""

    path: str
    rule: str
    source: str | None = None


class InstanceError(Exception):
    """An instance file that cannot be used; ``str()`` is the message shown to the user."""

    def __init__(self, file: str, problems: list[Problem]):
        self.file = file
        self.problems = problems
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return "\n".join(
            f"{p.source or self.file}: {p.path}: {p.rule}" if p.path else f"{p.source or self.file}: {p.rule}"
            for p in self.problems
        )


class RefusedInstance(InstanceError):
    """An instance the solver refuses once loaded (a staged model over its pair cap): raised with the
    instance's name, to be blamed on the file it was read from by whoever knows it (the command)."""
