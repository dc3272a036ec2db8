"""What a row from another store must be before it is merged: the runner never writes a run without the
provenance the contract requires, JSON columns that are not objects, or a metric that is not a finite number."""

from __future__ import annotations

import json

from ccq_eval.store.schema import RUN_JSON_COLUMNS

REQUIRED_PROVENANCE = ("label", "model_spec", "weights_sha256", "model_config", "dtype", "device", "versions")


def first_non_json_object(row: dict, columns) -> str | None:
    """The first of the columns whose text is not a JSON object (tables and curves parse them), or None."""
    for column in columns:
        try:
            if not isinstance(json.loads(row[column]), dict):
                return column
        except (TypeError, ValueError, RecursionError):
            return column
    return None


def untrusted_run(run: dict) -> str | None:
    """Why a run from another store cannot be merged, or None."""
    lacking = [k for k in REQUIRED_PROVENANCE if run.get(k) in (None, "", "{}")]
    if lacking:
        return f"lacks {', '.join(lacking)}"
    if (column := first_non_json_object(run, RUN_JSON_COLUMNS)) is not None:
        return f"has a {column} that is not a JSON object"
    return None


def untrusted_unit(source, unit: dict) -> str | None:
    """Why a unit from another store cannot be merged (the runner never writes such a unit), or None: settings
    that are not a JSON object, a metric whose value is text or infinite, a count that is not an integer."""
    if first_non_json_object(unit, ("settings",)) is not None:
        return "has settings that are not a JSON object"
    bad = source.connection.query(
        "SELECT metric, typeof(value) AS kind FROM metrics WHERE unit_id = ? AND (typeof(value) NOT IN ('real', "
        "'integer') OR value IN (9e999, -9e999) OR (stderr IS NOT NULL AND (typeof(stderr) NOT IN ('real', "
        "'integer') OR stderr IN (9e999, -9e999))) OR (n IS NOT NULL AND typeof(n) != 'integer'))", (unit["id"],))
    if bad:
        return f"has a {bad[0]['metric']} that is not a finite number ({bad[0]['kind']} value or stderr, or a count)"
    return None
