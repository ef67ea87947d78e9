"""What of an MCP server's input schema the registry validates against: all of it but the
regular expressions.

A server's ``pattern`` (and the property-name expressions of ``patternProperties``) run in
Python's ``re``, which backtracks: ``^(a+)+$`` against forty ``a`` and a ``!`` takes longer than
the bot lives, on the event loop. Running the check in a thread with a time limit would not
help (``re`` holds the GIL for the whole match, and a thread cannot be stopped), and a child
process per check costs more than the check. So these keywords are left out of our check, not
of the schema the model reads: the server checks its own arguments anyway (our check only
saves it a round trip), and its answer to a bad one comes back as an error observation.
Where ``patternProperties`` goes, the ``additionalProperties`` beside it goes too (the
properties it allowed would otherwise be refused as additional).

Part of agent/: imports nothing from bot/ or memory/.
"""

from __future__ import annotations

from typing import Any

__all__ = ["without_patterns"]

# Keywords whose value is a schema, a list of schemas, or a map of names to schemas.
_ONE = frozenset({"additionalProperties", "additionalItems", "contains", "else", "if", "items",
                  "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"})
_MANY = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_NAMED = frozenset({"$defs", "definitions", "dependentSchemas", "properties"})


def without_patterns(schema: Any) -> Any:
    """A copy of ``schema`` with no ``pattern`` or ``patternProperties`` anywhere (recursing
    only into keywords that hold schemas, so a property named "pattern" stays)."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            continue
        if key == "patternProperties":
            continue
        if key in _NAMED and isinstance(value, dict):
            out[key] = {name: without_patterns(sub) for name, sub in value.items()}
        elif key in _MANY and isinstance(value, list):
            out[key] = [without_patterns(sub) for sub in value]
        elif key in _ONE:
            out[key] = without_patterns(value)
        else:
            out[key] = value
    if "patternProperties" in schema:
        out.pop("additionalProperties", None)
        out.pop("unevaluatedProperties", None)
    return out
