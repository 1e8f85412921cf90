"""Field checks every format module's parser shares: one line naming the file, the field and what is wrong.

A format's schema is a frozen dataclass in its own module; its `parse` builds it from the file's JSON through
these checks, so a field of the wrong type, a missing one, a non-finite number or a file of another format
version is one `DamagedRunFile` (a ConfigError: exit status 2 where the file is the command's input, a run
counted as unreadable where the command reads many). Format versions: a file without `format` was written
before versions existed and reads as version 1; a newer version than this optbench knows is refused with
the fix (upgrade optbench). Standard library only.
"""

import math
from pathlib import Path
from typing import Any, Literal, NoReturn, overload

from optbench.errors import DamagedRunFile

UPGRADE = "it was written by a newer optbench: upgrade optbench (pip install -U -e .) to read it"


class Fields:
    """Typed access to one JSON object of `path`; every failure names the file, the field and the way out."""

    def __init__(self, value: object, path: Path | str, where: str = "", way_out: str = ""):
        self.path, self.where, self.way_out = path, where, way_out
        if not isinstance(value, dict):
            self.fail(f"is {type(value).__name__}, not a JSON object")
        self.value = value

    def fail(self, problem: str) -> NoReturn:
        place = f" field {self.where}" if self.where else ""
        raise DamagedRunFile(f"{self.path}:{place} {problem}" + (f": {self.way_out}" if self.way_out else ""))

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _get(self, key: str, required: bool) -> Any:  # the field as JSON gave it: each reader checks its type
        if key not in self.value or self.value[key] is None:
            if required:
                Fields(self.value, self.path, self._name(key), self.way_out).fail("is missing")
            return None
        return self.value[key]

    def _wrong(self, key: str, value: object, wanted: str) -> NoReturn:
        Fields(self.value, self.path, self._name(key), self.way_out).fail(f"is {value!r}, not {wanted}")

    @overload
    def number(
        self,
        key: str,
        required: Literal[True],
        low: float = -math.inf,
        high: float = math.inf,
        nonfinite_as_null: Literal[False] = False,
    ) -> int | float: ...
    @overload
    def number(
        self,
        key: str,
        required: bool = False,
        low: float = -math.inf,
        high: float = math.inf,
        nonfinite_as_null: bool = False,
    ) -> int | float | None: ...

    def number(
        self,
        key: str,
        required: bool = False,
        low: float = -math.inf,
        high: float = math.inf,
        nonfinite_as_null: bool = False,
    ) -> int | float | None:
        """A finite number in [low, high], as written (int or float); None when absent or null and not required.
        `nonfinite_as_null`: a NaN or infinity token (older runs' metrics) reads as null, as the writer now writes
        it."""
        value = self._get(key, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self._wrong(key, value, f"a finite number in [{low}, {high}]")
        if not math.isfinite(value):
            if nonfinite_as_null:
                return None
            self._wrong(key, value, f"a finite number in [{low}, {high}]")
        if not low <= value <= high:
            self._wrong(key, value, f"a finite number in [{low}, {high}]")
        return value

    @overload
    def whole(self, key: str, required: Literal[True], low: int = 0) -> int: ...
    @overload
    def whole(self, key: str, required: bool = False, low: int = 0) -> int | None: ...

    def whole(self, key: str, required: bool = False, low: int = 0) -> int | None:
        value = self._get(key, required)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            self._wrong(key, value, f"a whole number >= {low}")
        return value

    @overload
    def text(self, key: str, required: Literal[True], choices: tuple = ()) -> str: ...
    @overload
    def text(self, key: str, required: bool = False, choices: tuple = ()) -> str | None: ...

    def text(self, key: str, required: bool = False, choices: tuple = ()) -> str | None:
        value = self._get(key, required)
        if value is None:
            return None
        if not isinstance(value, str) or (choices and value not in choices):
            self._wrong(key, value, "one of " + ", ".join(choices) if choices else "a string")
        return value

    def wrong(self, key: str, value: object, wanted: str) -> NoReturn:
        """Fail on `key`'s `value`, which is not `wanted` (for a format's own checks beyond the types here)."""
        self._wrong(key, value, wanted)

    @overload
    def mapping(self, key: str, required: Literal[True]) -> dict: ...
    @overload
    def mapping(self, key: str, required: bool = False) -> dict | None: ...

    def mapping(self, key: str, required: bool = False) -> dict | None:
        value = self._get(key, required)
        if value is not None and not isinstance(value, dict):
            self._wrong(key, value, "a JSON object")
        return value

    @overload
    def listing(self, key: str, required: Literal[True]) -> list: ...
    @overload
    def listing(self, key: str, required: bool = False) -> list | None: ...

    def listing(self, key: str, required: bool = False) -> list | None:
        value = self._get(key, required)
        if value is not None and not isinstance(value, list):
            self._wrong(key, value, "a JSON list")
        return value

    def flag(self, key: str) -> bool | None:
        """true or false; None when absent or null."""
        value = self._get(key, False)
        if value is not None and not isinstance(value, bool):
            self._wrong(key, value, "true or false")
        return value

    def numbers(self, key: str, required: bool = False, low: float = -math.inf, high: float = math.inf) -> tuple | None:
        """A JSON list of finite numbers in [low, high]; None when absent or null and not required."""
        elements = self._elements(key, required)
        return None if elements is None else tuple(elements.number(name, True, low, high) for name in elements.value)

    def wholes(self, key: str, required: bool = False, low: int = 0) -> tuple | None:
        """A JSON list of whole numbers >= low; None when absent or null and not required."""
        elements = self._elements(key, required)
        return None if elements is None else tuple(elements.whole(name, True, low) for name in elements.value)

    def texts(self, key: str, required: bool = False) -> tuple | None:
        """A JSON list of strings; None when absent or null and not required."""
        elements = self._elements(key, required)
        return None if elements is None else tuple(elements.text(name, True) for name in elements.value)

    def _elements(self, key: str, required: bool) -> "Fields | None":
        """The list at `key` as an object keyed `key[0]`, `key[1]`, ...: each element's failure names its place."""
        listed = self.listing(key, required)
        if listed is None:
            return None
        return Fields(
            {f"{key}[{place}]": item for place, item in enumerate(listed)}, self.path, self.where, self.way_out
        )

    def objects(self, key: str, required: bool = False) -> list["Fields"]:
        """A JSON list of objects, each as Fields of its own (its failures name `key[2].field`); [] when absent."""
        listed = self.listing(key, required) or []
        return [
            Fields(item, self.path, f"{self._name(key)}[{place}]", self.way_out) for place, item in enumerate(listed)
        ]

    @overload
    def inner(self, key: str, required: Literal[True]) -> "Fields": ...
    @overload
    def inner(self, key: str, required: bool = False) -> "Fields | None": ...

    def inner(self, key: str, required: bool = False) -> "Fields | None":
        """The object at `key` as Fields of its own (its failures name `outer.key.field`)."""
        value = self.mapping(key, required)
        return None if value is None else Fields(value, self.path, self._name(key), self.way_out)

    def version(self, known: int) -> int:
        """The file's format version: absent means written before versions existed (read as version 1)."""
        value = self.value.get("format", 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self._wrong("format", value, "a format version (a whole number >= 1)")
        if value > known:
            raise DamagedRunFile(f"{self.path}: format {value}, this optbench reads up to format {known}: {UPGRADE}")
        return value
