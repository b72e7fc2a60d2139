"""Websites of a project: create one, import many (CSV or JSON), and who may.

Every row is checked before anything is stored: one bad row stores nothing, and the error names its row and field
(``rows[3].url``: row 3, counted from 1 after a CSV's header)."""

import csv
import io

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction

from ...models import Project, Website
from ..errors import Conflict, NotFound, ValidationFailed, parse_json
from ..forms import MANAGE_ROLES
from ..manage.access import check_project_role

WEBSITE_FIELDS = ("name", "url", "domain", "subdomain", "description", "target_tasks")
REQUIRED = ("name", "url", "domain")
MAX_IMPORT_BYTES = 5 * 1024 * 1024
MAX_TARGET = 100_000


def check_project_for_websites(user, project_name) -> Project:
    """The project whose websites and seed tasks ``user`` manages (researcher, admin); 404 / 403 otherwise."""
    return check_project_role(user, project_name, MANAGE_ROLES, "manage websites (needs researcher or admin)")


def visible_website(user, website_id) -> Website:
    """A website of one of ``user``'s projects, or 404."""
    projects = Project.objects.for_user(user)
    website = Website.objects.select_related("project").filter(pk=website_id, project__in=projects).first()
    if website is None:
        raise NotFound(f"no website {website_id} among your projects")
    return website


def managed_website(user, website_id) -> Website:
    website = visible_website(user, website_id)
    check_project_for_websites(user, website.project.name)
    return website


def text_problem(name, value):
    """What is wrong with one text field of a website, or None."""
    limit = Website._meta.get_field(name).max_length
    if not isinstance(value, str):
        return "expected a string"
    if name in REQUIRED and not value.strip():
        return "required"
    if limit and len(value.strip()) > limit:
        return f"at most {limit} characters"
    if name == "url":
        try:
            URLValidator(schemes=["http", "https"])(value.strip())
        except ValidationError:
            return "not an http(s) URL"
    return None


def target_problem(value):
    if isinstance(value, str) and value.strip().isdecimal():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TARGET:
        return f"expected a whole number from 1 to {MAX_TARGET}", None
    return None, value


def clean_website(row, where: str) -> tuple[dict, list]:
    """``(values, errors)`` of one website given as a dict; errors name ``<where>.<field>``."""
    if not isinstance(row, dict):
        return {}, [{"field": where, "message": "expected an object"}]
    errors = [{"field": f"{where}.{key}", "message": "unknown field"} for key in row if key not in WEBSITE_FIELDS]
    values = {}
    for name in WEBSITE_FIELDS[:-1]:
        value = "" if row.get(name) is None else row[name]  # null = blank, as an absent key
        problem = text_problem(name, value)
        if problem:
            errors.append({"field": f"{where}.{name}", "message": problem})
        else:
            values[name] = value.strip() if name != "description" else value
    if row.get("target_tasks") not in (None, ""):
        problem, target = target_problem(row["target_tasks"])
        if problem:
            errors.append({"field": f"{where}.target_tasks", "message": problem})
        else:
            values["target_tasks"] = target
    return values, errors


def check_new_names(project, rows: list[dict], where=lambda i: f"rows[{i}]") -> None:
    """Names unique within the rows and not used by the project's websites yet (409 naming the row)."""
    seen, errors = set(), []
    taken = set(Website.objects.filter(project=project).values_list("name", flat=True))
    for index, row in enumerate(rows, start=1):
        name = row["name"]
        if name in seen or name in taken:
            errors.append({"field": f"{where(index)}.name", "message": f"website {name!r} already exists"})
        seen.add(name)
    if errors:
        raise Conflict("website names must be unique in the project; nothing was stored", errors)


def do_create_website(project, fields: dict) -> Website:
    """One website, checked (400 naming the field; 409 when its name is taken)."""
    values, errors = clean_website(fields, "website")
    if errors:
        raise ValidationFailed("invalid website", [{**e, "field": e["field"].split(".", 1)[1]} for e in errors])
    if Website.objects.filter(project=project, name=values["name"]).exists():
        raise Conflict(f"website {values['name']!r} already exists", [{"field": "name", "message": "already used"}])
    return Website.objects.create(project=project, **values)


def do_update_website(website, fields: dict) -> Website:
    values, errors = clean_website({**website_values(website), **fields}, "website")
    if errors:
        raise ValidationFailed("invalid website", [{**e, "field": e["field"].split(".", 1)[1]} for e in errors])
    clash = Website.objects.filter(project=website.project, name=values["name"]).exclude(pk=website.pk)
    if clash.exists():
        raise Conflict(f"website {values['name']!r} already exists", [{"field": "name", "message": "already used"}])
    for name, value in values.items():
        setattr(website, name, value)
    website.save()
    return website


def website_values(website) -> dict:
    return {name: getattr(website, name) for name in WEBSITE_FIELDS}


def decode(data: bytes, field: str) -> str:
    if len(data) > MAX_IMPORT_BYTES:
        raise ValidationFailed("file too large", [{"field": field, "message": f"at most {MAX_IMPORT_BYTES} bytes"}])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        message = f"is not UTF-8: byte 0x{data[error.start]:02x} at offset {error.start} cannot be decoded"
        raise ValidationFailed(f"{field} {message}", [{"field": field, "message": message}]) from None


def parse_rows(data: bytes, filename: str, field: str = "file") -> list:
    """The rows of a CSV (with a header) or JSON (a list of objects) file: JSON when the name ends in .json or the
    text starts with ``[``; otherwise CSV."""
    text = decode(data, field)
    if "\x00" in text:
        raise ValidationFailed("NUL character in the file", [{"field": field, "message": "contains a NUL character"}])
    if filename.lower().endswith(".json") or text.lstrip().startswith("["):
        rows = parse_json(text, field)
        if not isinstance(rows, list):
            raise ValidationFailed("expected a JSON list", [{"field": field, "message": "expected a list of objects"}])
        return rows
    return csv_rows(text, field)


def csv_rows(text: str, field: str) -> list[dict]:
    reader = csv.reader(io.StringIO(text))
    try:
        table = list(reader)
    except csv.Error as error:
        raise ValidationFailed(f"bad CSV: {error}", [{"field": field, "message": str(error)}]) from None
    if not table or not any(table[0]):
        raise ValidationFailed("empty CSV", [{"field": field, "message": "no header row"}])
    header = [name.strip() for name in table[0]]
    rows = []
    for number, cells in enumerate(table[1:], start=1):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            message = f"row {number} has {len(cells)} fields; the header has {len(header)}"
            raise ValidationFailed(message, [{"field": f"rows[{number}]", "message": message}])
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def do_import_websites(project, data: bytes, filename: str) -> list[Website]:
    """Websites from a CSV or JSON file; every row checked first (400 / 409 naming row and field)."""
    rows = parse_rows(data, filename)
    if not rows:
        raise ValidationFailed("no websites in the file", [{"field": "file", "message": "no rows"}])
    cleaned, errors = [], []
    for index, row in enumerate(rows, start=1):
        values, problems = clean_website(row, f"rows[{index}]")
        cleaned.append(values)
        errors += problems
    if errors:
        first = errors[0]
        raise ValidationFailed(f"{first['field']}: {first['message']}; nothing was stored", errors)
    with transaction.atomic():
        check_new_names(project, cleaned)
        return Website.objects.bulk_create([Website(project=project, **values) for values in cleaned])
