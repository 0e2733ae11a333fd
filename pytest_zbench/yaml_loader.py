"""The YAML reader of every file a user writes (scene files, devices.yaml): yaml.safe_load, except that a key
given twice in one mapping is an error naming both lines, where PyYAML silently keeps the last one (two
devices of one name, two `ops` of one scene)."""

from __future__ import annotations

from typing import Any

import yaml

from .errors import ZbenchError


class DuplicateKeyError(yaml.constructor.ConstructorError, ZbenchError):
    """A mapping key given twice; `line` and `first_line` are 1-based. A yaml.YAMLError too, so that a loader
    catching YAML errors catches it."""

    def __init__(self, key: Any, line: int, first_line: int, mark: yaml.Mark) -> None:
        super().__init__(None, None, f"key {key!r} is given twice (line {first_line} and line {line})", mark)
        self.key, self.line, self.first_line = key, line, first_line


# libyaml's parser when PyYAML has it: the pure-Python one spent 8 of the 12 s that collecting 1,000 scenes took
# (bench/bench_scale.py); the constructor, and so the duplicate-key check below, stays the same Python class.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """SafeLoader (no arbitrary objects) that refuses duplicate keys."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, (str, int, float, bool)):
            continue  # unhashable keys are left to SafeLoader, which rejects them
        line = key_node.start_mark.line + 1
        if key in seen:
            raise DuplicateKeyError(key, line, seen[key], key_node.start_mark)
        seen[key] = line
    mapping: dict[Any, Any] = loader.construct_mapping(node, deep=deep)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(text: str) -> Any:
    """Parse one YAML document; raises yaml.YAMLError (DuplicateKeyError for a key given twice)."""
    return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
