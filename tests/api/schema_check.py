"""A small JSON-Schema checker for the response shapes in docs/openapi.json.

Why it exists: the CLI and HTTP tests hold every answer to the OpenAPI
document so that code and document cannot drift apart, without depending on a
third-party validator. It understands exactly the constructs the document
uses: type (a name or a list, for nullable), properties, required,
additionalProperties, items, enum, minimum/maximum, minLength, oneOf, anyOf,
dependentSchemas, format date/date-time, and $ref to #/components/... . Any other keyword is an error
here, so a construct the checker cannot verify never passes silently.
"""
import datetime
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPENAPI_PATH = ROOT / "docs" / "openapi.json"

# Keywords that only document and constrain nothing checkable here.
_ANNOTATIONS = {"description", "default", "title", "example", "examples", "readOnly"}
_CHECKED = {"type", "properties", "required", "additionalProperties", "items", "enum",
            "minimum", "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems",
            "oneOf", "anyOf", "dependentSchemas", "format", "$ref"}

_DATE_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
# RFC 3339 as the API writes it: seconds always, no fraction, Z or +HH:MM.
_DATE_TIME_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(Z|[+-]\d{2}:\d{2})$")

_cache = {}


def load_openapi(path=OPENAPI_PATH):
    path = pathlib.Path(path)
    if path not in _cache:
        with open(path, encoding="utf-8") as f:
            _cache[path] = json.load(f)
    return _cache[path]


def resolve(doc, ref):
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref is supported, not {ref!r}")
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if part not in node:
            raise KeyError(f"$ref {ref!r} does not resolve")
        node = node[part]
    return node


def _type_ok(value, name):
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown type {name!r} in schema")


def _valid_date(y, m, d):
    try:
        datetime.date(int(y), int(m), int(d))
        return True
    except ValueError:
        return False


def _format_ok(value, fmt):
    if fmt == "date":
        m = _DATE_RE.match(value)
        return bool(m) and _valid_date(*m.groups())
    if fmt == "date-time":
        m = _DATE_TIME_RE.match(value)
        if not m or not _valid_date(*m.groups()[:3]):
            return False
        hh, mm, ss, off = int(m[4]), int(m[5]), int(m[6]), m[7]
        if hh > 23 or mm > 59 or ss > 59:
            return False
        return off == "Z" or (int(off[1:3]) <= 23 and int(off[4:6]) <= 59)
    raise ValueError(f"unknown format {fmt!r} in schema")


def validate(value, schema, doc=None, path="$"):
    """Returns a list of 'path: problem' strings; empty when value conforms."""
    doc = doc if doc is not None else load_openapi()
    errors = []
    unknown = set(schema) - _CHECKED - _ANNOTATIONS
    if unknown:
        raise ValueError(f"{path}: schema uses keywords this checker does not support: "
                         f"{sorted(unknown)}")
    if "$ref" in schema:
        return validate(value, resolve(doc, schema["$ref"]), doc, path)
    if "oneOf" in schema:
        matching = [alt for alt in schema["oneOf"] if not validate(value, alt, doc, path)]
        if len(matching) != 1:
            return [f"{path}: matches {len(matching)} of the oneOf alternatives, not exactly 1"]
    if "anyOf" in schema and all(validate(value, alt, doc, path) for alt in schema["anyOf"]):
        errors.append(f"{path}: matches none of the anyOf alternatives")
    if "dependentSchemas" in schema and isinstance(value, dict):
        for key, sub in schema["dependentSchemas"].items():
            if key in value:
                errors.extend(validate(value, sub, doc, path))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_type_ok(value, t) for t in types):
            return [f"{path}: expected {'/'.join(types)}, got {type(value).__name__} "
                    f"{json.dumps(value)[:80]}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if is_number and "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: {value} < minimum {schema['minimum']}")
    if is_number and "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: longer than {schema['maxLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
        if "format" in schema and not _format_ok(value, schema["format"]):
            errors.append(f"{path}: {value!r} is not a valid {schema['format']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required property {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                errors.extend(validate(item, props[key], doc, f"{path}.{key}"))
            elif extra is False:
                errors.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                errors.extend(validate(item, extra, doc, f"{path}.{key}"))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
    if isinstance(value, list) and "items" in schema:
        for n, item in enumerate(value):
            errors.extend(validate(item, schema["items"], doc, f"{path}[{n}]"))
    return errors


def schema(name, doc=None):
    doc = doc if doc is not None else load_openapi()
    return {"$ref": f"#/components/schemas/{name}"}


def assert_matches(value, name, doc=None):
    """Fails with every mismatch when value does not conform to
    components/schemas/<name>."""
    doc = doc if doc is not None else load_openapi()
    errors = validate(value, schema(name, doc), doc)
    assert not errors, f"response does not match schema {name}:\n" + "\n".join(errors[:30])


def response_schema(doc, path, status="200", media="application/json"):
    """The schema of a documented response, following $ref."""
    op = doc["paths"][path]["get"]
    resp = op["responses"][status]
    if "$ref" in resp:
        resp = resolve(doc, resp["$ref"])
    return resp["content"][media]["schema"]
