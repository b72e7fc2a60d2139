"""The SQL of the queries every upload makes, from strings built once (docs/ingest.md, "Where the time goes").

Django's ORM spends 0.4-1.4 ms of CPU building and compiling each of these queries, ten times what the database
spends answering them and, together, about a fifth of a one-action batch's server CPU. Most read or write plain
values (text, integers, a timestamp: no conversion, no model instances), so they run as SQL through Django's
connection (same transaction, same connection pool) with table and column names read from the models, never
spelled out here. The token and the recording an upload is for are read as model instances (``instance``: each
column converted as the ORM converts it), the token with its user and the recording with its project in one
statement each, without the ORM's compilation of joins, subqueries and orderings (``Manager.raw`` took two
statements and ~0.45 ms of CPU for a token and its user, this ~0.15). ``test_recordings_hotsql.py`` checks each
against the ORM query it replaces, field by field.
"""

import weakref
from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections

from ..models import READ_ROLES, Blob, Demonstration, Membership, Project, ProjectBlob, Turn


def column(model, field: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(field).column)


def table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def placeholders(count: int) -> str:
    return ", ".join(["%s"] * count) or "NULL"  # IN (NULL) matches nothing


def fetch(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@cache
def stored_turns_sql(vendor: str, count: int) -> str:
    demo, seq, client_id = column(Turn, "demonstration"), column(Turn, "seq"), column(Turn, "client_id")
    return (
        f"SELECT {client_id}, {column(Turn, 'content_sha256')}, {seq} FROM {table(Turn)} "
        f"WHERE {demo} = %s AND ({client_id} IN ({placeholders(count)}) "
        f"OR {seq} = (SELECT MAX({seq}) FROM {table(Turn)} WHERE {demo} = %s))"
    )


def stored_turns(demo_id: int, client_ids: list) -> list[tuple[str, str, int]]:
    """``(client_id, content_sha256, seq)`` of the recording's turns stored under ``client_ids``, and of its last
    turn (the highest seq)."""
    return fetch(stored_turns_sql(connection.vendor, len(client_ids)), [demo_id, *client_ids, demo_id])


@cache
def known_blobs_sql(vendor: str, count: int) -> str:
    sha, rights_blob = column(Blob, "sha256"), column(ProjectBlob, "blob")
    return (
        f"SELECT b.{sha}, r.{rights_blob} IS NOT NULL FROM {table(Blob)} b LEFT JOIN {table(ProjectBlob)} r "
        f"ON r.{rights_blob} = b.{sha} AND r.{column(ProjectBlob, 'project')} = %s "
        f"WHERE b.{sha} IN ({placeholders(count)})"
    )


def known_blobs(project_id: int, shas: list) -> dict[str, bool]:
    """Which of ``shas`` are stored (for any project), each with whether the project has rights to it."""
    return {
        sha: bool(owned) for sha, owned in fetch(known_blobs_sql(connection.vendor, len(shas)), [project_id, *shas])
    }


@cache
def existing_blobs_sql(vendor: str, count: int) -> str:
    sha = column(Blob, "sha256")
    return f"SELECT {sha} FROM {table(Blob)} WHERE {sha} IN ({placeholders(count)})"


def existing_blobs(shas: list) -> set[str]:
    """Which of ``shas`` are stored (for any project)."""
    return {row[0] for row in fetch(existing_blobs_sql(connection.vendor, len(shas)), list(shas))}


@cache
def project_media_types_sql(vendor: str, count: int) -> str:
    sha, rights_blob = column(Blob, "sha256"), column(ProjectBlob, "blob")
    return (
        f"SELECT b.{sha}, b.{column(Blob, 'media_type')} FROM {table(Blob)} b "
        f"INNER JOIN {table(ProjectBlob)} r ON r.{rights_blob} = b.{sha} "
        f"WHERE r.{column(ProjectBlob, 'project')} = %s AND b.{sha} IN ({placeholders(count)})"
    )


def project_media_types(project_id: int, shas: list) -> list[tuple[str, str]]:
    """``(sha256, media_type)`` of those of ``shas`` the project has rights to."""
    return fetch(project_media_types_sql(connection.vendor, len(shas)), [project_id, *shas])


def columns(model, alias: str) -> str:
    """Every concrete field's column, in the order ``instance`` takes their values."""
    return ", ".join(f"{alias}.{connection.ops.quote_name(field.column)}" for field in model._meta.concrete_fields)


CONVERTERS = weakref.WeakKeyDictionary()  # a thread's connection → {model: what ``converters`` found}


def converters(model) -> list[tuple[int, list, object]]:
    """For each concrete field that needs any: its position, the converters the ORM applies to its column (the
    database's, then the field's own ``from_db_value``) and the column expression they are given. Found once per
    connection (each thread has its own: the database's converters are its methods)."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    known = CONVERTERS.setdefault(wrapper, {})
    if model not in known:
        found = []
        for index, field in enumerate(model._meta.concrete_fields):
            expression = field.get_col(model._meta.db_table)
            functions = wrapper.ops.get_db_converters(expression) + field.get_db_converters(wrapper)
            if functions:
                found.append((index, functions, expression))
        known[model] = found
    return known[model]


def instance(model, values) -> object:
    """The model instance a row of ``columns(model, ...)`` values stands for, each value converted as the ORM
    converts it."""
    values = list(values)
    for index, functions, expression in converters(model):
        for function in functions:
            values[index] = function(values[index], expression, connection)
    return model.from_db(connection.alias, None, values)


def split_row(row: tuple, *models) -> list:
    """``row`` cut into each model's values, in order; what follows the last model's is the last item."""
    parts, start = [], 0
    for model in models:
        width = len(model._meta.concrete_fields)
        parts.append(row[start : start + width])
        start += width
    return [*parts, row[start:]]


@cache
def demo_with_role_sql(vendor: str) -> str:
    member = column(Membership, "project")
    return (
        f"SELECT {columns(Demonstration, 'd')}, {columns(Project, 'p')}, (SELECT m.{column(Membership, 'role')} "
        f"FROM {table(Membership)} m WHERE m.{member} = d.{column(Demonstration, 'project')} "
        f"AND m.{column(Membership, 'user')} = %s "
        f"AND m.{column(Membership, 'role')} IN ({placeholders(len(READ_ROLES))}) LIMIT 1) AS user_role "
        f"FROM {table(Demonstration)} d INNER JOIN {table(Project)} p "
        f"ON p.{column(Project, 'id')} = d.{column(Demonstration, 'project')} "
        f"WHERE d.{column(Demonstration, 'name')} = %s"
    )


def demo_with_role(user_id: int, name: str) -> Demonstration | None:
    """The recording named ``name`` with its project loaded (``demo.project``) and ``user_role``: the user's role
    in that project when it is one of ``READ_ROLES``, else None. None when there is no such recording."""
    params = [user_id, *(str(role) for role in READ_ROLES), name]
    rows = fetch(demo_with_role_sql(connection.vendor), params)
    if not rows:
        return None
    demo_values, project_values, (role,) = split_row(rows[0], Demonstration, Project)
    demo = instance(Demonstration, demo_values)
    demo.project, demo.user_role = instance(Project, project_values), role
    return demo


@cache
def token_sql(vendor: str) -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user = get_user_model()
    return (
        f"SELECT {columns(Token, 't')}, {columns(user, 'u')} FROM {table(Token)} t INNER JOIN {table(user)} u "
        f"ON u.{column(user, 'id')} = t.{column(Token, 'user')} "
        f"WHERE t.{column(Token, 'key')} = %s AND u.{column(user, 'is_active')} = %s"
    )


def active_token(key: str):
    """The API token ``key`` of an active user, with its user loaded (``token.user``); None when there is none."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    rows = fetch(token_sql(connection.vendor), [key, True])
    if not rows:
        return None
    user = get_user_model()
    token_values, user_values, _ = split_row(rows[0], Token, user)
    token = instance(Token, token_values)
    token.user = instance(user, user_values)
    return token


@cache
def locked_demo_sql(vendor: str) -> str:
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    where = f"d.{column(Demonstration, 'id')} = %s"
    return f"SELECT {columns(Demonstration, 'd')} FROM {table(Demonstration)} d WHERE {where}{lock}"


def locked_demo(demo_id: int) -> Demonstration:
    """The recording read again with its row locked until the transaction ends (``select_for_update``); the
    caller is inside ``transaction.atomic``. ``Demonstration.DoesNotExist`` when it was deleted meanwhile."""
    rows = fetch(locked_demo_sql(connection.vendor), [demo_id])
    if not rows:
        raise Demonstration.DoesNotExist(f"no demonstration {demo_id}")
    return instance(Demonstration, rows[0])


def insert_new(model, fields: list[str], rows: list[tuple]) -> None:
    """``INSERT ... ON CONFLICT DO NOTHING`` of ``rows`` (values of ``fields``, in that order): what
    ``bulk_create(ignore_conflicts=True)`` does, without building model instances. At most a few thousand
    parameters (a batch brings at most ``MAX_BLOB_QUERY`` blobs), under both databases' limits."""
    if not rows:
        return
    names = ", ".join(column(model, name) for name in fields)
    values = ", ".join([f"({placeholders(len(fields))})"] * len(rows))
    with connection.cursor() as cursor:
        sql = f"INSERT INTO {table(model)} ({names}) VALUES {values} ON CONFLICT DO NOTHING"
        cursor.execute(sql, [value for row in rows for value in row])


def now_for_db():
    """The current time as a ``DateTimeField`` parameter of this database (SQLite stores text)."""
    from django.utils import timezone

    return connection.ops.adapt_datetimefield_value(timezone.now())
