"""Mind2Web's stored steps (``Mind2WebStep.action``: each step's page as JSON text, most of a Mind2Web export's
bytes) compressed with lz4 instead of pglz on PostgreSQL servers that have it: the export reads them back a third
faster (``COPY`` of a tenth of the bench's steps, 273 MB: 1.24 s with pglz, 0.83 s with lz4). Rows already stored keep
their compression until they are stored again; other databases are left as they are."""

from django.db import migrations


def column_compression(method):
    def alter(apps, schema_editor):
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
            row = cursor.fetchone()
            if not row or method not in row[0]:  # before PostgreSQL 14, or built without lz4
                return
            table = schema_editor.quote_name(apps.get_model("annotation", "Mind2WebStep")._meta.db_table)
            cursor.execute(f"ALTER TABLE {table} ALTER COLUMN action SET COMPRESSION {method}")

    return alter


class Migration(migrations.Migration):
    dependencies = [("annotation", "0046_recheck_retargeted")]

    operations = [migrations.RunPython(column_compression("lz4"), column_compression("pglz"))]
