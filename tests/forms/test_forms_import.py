"""Importing form batches: the 28 real TurkingBench tasks (instances, gold answers, split lists) through
``import_turkingbench``, and Turkle/MTurk-style uploads through the API and the web form, where every bad input
gets its status and a message naming the problem, and nothing is stored."""

import csv
import io
from pathlib import Path

import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Batch, Project, Role, SplitConfig, Task
from tests.support.actors import make_user
from tests.support.forms_data import CSV, TEMPLATE, task_dir, task_dirs, turkingbench_root

BATCHES = "/api/batches/"


def csv_instances(path: Path) -> tuple[list, list]:
    """(distinct input tuples in file order, every row) read with the csv module, as strings."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = [row for row in csv.reader(handle) if row]
    header, body = rows[0], rows[1:]
    inputs = [i for i, name in enumerate(header) if not name.startswith("Answer.")]
    seen = {}
    for row in body:
        seen.setdefault(tuple(row[i] for i in inputs), len(seen))
    return list(seen), body


def import_dirs(project="tb", *dirs, **options):
    out = io.StringIO()
    call_command("import_turkingbench", *[str(d) for d in dirs], project=project, stdout=out, **options)
    return out.getvalue()


# --- The 28 real tasks ---------------------------------------------------------------------------------------


def test_the_real_tasks_import_as_one_task_per_distinct_instance_in_file_order(db):
    dirs = task_dirs()
    assert len(dirs) == 28
    import_dirs("tb", *dirs)
    for path in dirs:
        batch = Batch.objects.get(project__name="tb", name=path.name)
        expected, rows = csv_instances(path / "batch.csv")
        pandas_rows = pd.read_csv(path / "batch.csv", low_memory=False)
        inputs = [c for c in pandas_rows.columns if not c.startswith("Answer.")]
        assert len(expected) == len(pandas_rows[inputs].drop_duplicates()), path.name
        tasks = list(batch.tasks.order_by("index"))
        assert [t.index for t in tasks] == list(range(len(expected)))
        columns = batch.input_columns
        assert [tuple(t.inputs[c] for c in columns) for t in tasks] == expected, path.name
        assert sum(len(t.gold) for t in tasks) == len(rows), path.name
        assert batch.source_name == path.name


def test_multi_valued_gold_answers_are_kept_as_lists_in_file_order(db):
    path = task_dir("Ethical rule-of-thumb quality")
    import_dirs("tb", path)
    gold = [entry for task in Task.objects.filter(batch__name=path.name) for entry in task.gold]
    assert sorted(entry["row"] for entry in gold) == list(range(500))
    lists = [value for entry in gold for value in entry["answers"].values() if isinstance(value, list)]
    assert lists
    assert all(len(value) >= 2 for value in lists)
    with (path / "batch.csv").open(encoding="utf-8-sig", newline="") as handle:
        raw = list(csv.DictReader(handle))
    by_row = {entry["row"]: entry["answers"] for entry in gold}
    for number, row in enumerate(raw):
        for column, value in row.items():
            if column.startswith("Answer."):
                stored = by_row[number][column[7:]]
                assert ("|".join(stored) if isinstance(stored, list) else stored) == value


def test_the_import_command_keeps_the_split_lists_and_sets_assignments(db):
    root = turkingbench_root()
    output = import_dirs("tb", task_dir("Formalize sentence"), assignments=3, splits=str(root / "splits"))
    batch = Batch.objects.get(name="Formalize sentence")
    assert batch.assignments_per_task == 3
    assert batch.published
    lists = SplitConfig.objects.get(project__name="tb").form_task_splits
    assert len(lists["evaluation_tasks_easy"]) == 20
    assert "Formalize sentence" in lists["evaluation_tasks_easy"]
    assert "Imported 1 batches" in output


def test_a_bad_directory_makes_the_import_command_store_nothing(db, tmp_path):
    bad = tmp_path / "Broken task"
    bad.mkdir()
    (bad / "template.html").write_text('<input name="x" value="${missing}">')
    (bad / "batch.csv").write_text("present\n1\n")
    with pytest.raises(CommandError, match=r"Broken task: csv: the template uses \$\{missing\}"):
        import_dirs("tb", task_dir("Formalize sentence"), bad)
    assert not Batch.objects.exists()
    assert not Task.objects.exists()
    assert not Project.objects.filter(name="tb").exists()


def test_importing_a_name_the_project_already_has_stores_nothing(db):
    import_dirs("tb", task_dir("Formalize sentence"))
    with pytest.raises(CommandError, match="already has a batch named 'Formalize sentence'"):
        import_dirs("tb", task_dir("Event effect"), task_dir("Formalize sentence"))
    assert list(Batch.objects.values_list("name", flat=True)) == ["Formalize sentence"]


# --- Uploads through the API -------------------------------------------------------------------------------


def upload(client, template=TEMPLATE, csv_text=CSV, **fields):
    template_bytes = template if isinstance(template, bytes) else template.encode()
    csv_bytes = csv_text if isinstance(csv_text, bytes) else csv_text.encode()
    body = {
        "project": "alpha",
        "template": SimpleUploadedFile("template.html", template_bytes, "text/html"),
        "csv": SimpleUploadedFile("questions.csv", csv_bytes, "text/csv"),
        **fields,
    }
    return client.post(BATCHES, body, format="multipart")


def test_a_turkle_style_upload_creates_a_batch_with_one_task_per_row(manager, api_for):
    response = upload(api_for(manager), assignments_per_task=2, allotted_seconds=600, description="Be careful")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["name"] == "questions"
    assert body["tasks_total"] == 3
    assert body["tasks_done"] == 0
    assert body["assignments_per_task"] == 2
    assert body["allotted_seconds"] == 600
    assert body["template_fields"] == ["sentence", "topic"]
    assert body["has_submit_button"] is False
    assert body["created_by"] == "manager"
    assert body["warnings"] == []
    batch = Batch.objects.get(pk=body["id"])
    assert [t.inputs["topic"] for t in batch.tasks.order_by("index")] == ["weather", "sport", "food"]


def test_a_bom_and_crlf_are_fine(manager, api_for):
    csv_text = "\ufefftopic,sentence\r\nweather,It rains.\r\n".encode()
    response = upload(api_for(manager), template="\ufeff" + TEMPLATE, csv_text=csv_text)
    assert response.status_code == 201, response.json()
    assert Batch.objects.get().csv_columns == ["topic", "sentence"]


BAD_UPLOADS = [
    ({"csv_text": "topic\nweather\n"}, 400, "csv", "missing column 'sentence'"),
    ({"csv_text": "topic,sentence\nweather,It rains.\nsport\n"}, 400, "csv", "line 3 has 1 fields; the header has 2"),
    ({"csv_text": 'topic,sentence\n"a\nb",x\nc,d,e\n'}, 400, "csv", "line 4 has 3 fields"),
    ({"template": "<p>${topic} ${sentence}</p>"}, 400, "template", "has no input, select or textarea"),
    ({"template": b"<input name='x'>\xff\xfe"}, 400, "template", "is not UTF-8: byte 0xff on line 1"),
    ({"csv_text": b"topic,sentence\nw,\xe9t\xe9\n"}, 400, "csv", "is not UTF-8: byte 0xe9 on line 2"),
    ({"csv_text": ""}, 400, "csv", "is empty"),
    ({"csv_text": "topic,sentence\n"}, 400, "csv", "has a header but no rows"),
    ({"csv_text": "topic,sentence,topic\na,b,c\n"}, 400, "csv", "column 'topic' appears twice"),
    ({"csv_text": "topic,,sentence\na,b,c\n"}, 400, "csv", "column 2 of the header has no name"),
    ({"csv_text": "topic,sentence\nw,a\x00b\n"}, 400, "csv", "contains a NUL character on line 2"),
    ({"assignments_per_task": 0}, 400, "assignments_per_task", "greater than or equal to 1"),
    ({"name": "a/b"}, 400, "name", "must not contain '/'"),
    ({"name": "\u6f22" * 86}, 400, "name", "258 bytes in UTF-8; at most 255"),
    ({"workers": ["nobody"]}, 400, "workers", "no such user: nobody"),
]


@pytest.mark.parametrize(("change", "status", "field", "message"), BAD_UPLOADS)
def test_a_bad_upload_is_refused_with_its_status_and_field_and_stores_nothing(
    manager, api_for, change, status, field, message
):
    response = upload(api_for(manager), **change)
    assert response.status_code == status, response.content
    body = response.json()
    assert any(e["field"] == field and message in e["message"] for e in body["errors"]), body
    assert not Batch.objects.exists()
    assert not Task.objects.exists()


def test_uploads_over_the_configured_limits_are_413_and_store_nothing(manager, api_for, settings):
    settings.FORM_TEMPLATE_MAX_BYTES = 1000
    settings.FORM_CSV_MAX_BYTES = 2000
    client = api_for(manager)
    big_template = upload(client, template=TEMPLATE + "<!--" + "x" * 1000 + "-->")
    assert big_template.status_code == 413
    assert big_template.json()["errors"][0]["field"] == "template"
    assert "FORM_TEMPLATE_MAX_BYTES" in big_template.json()["detail"]
    big_csv = upload(client, csv_text=CSV + "x,y\n" * 600)
    assert big_csv.status_code == 413
    assert big_csv.json()["errors"][0]["field"] == "csv"
    # Over both files' limits: the real server refuses it from Content-Length (tests/forms/test_forms_upload_limits.py).
    whole_body = upload(client, csv_text=CSV + "x,y\n" * 400_000)
    assert whole_body.status_code == 413
    assert not Batch.objects.exists()


def test_the_default_limits_are_512_kb_for_templates_and_50_mb_for_csvs(settings):
    assert settings.FORM_TEMPLATE_MAX_BYTES == 512 * 1024
    assert settings.FORM_CSV_MAX_BYTES == 50 * 1024 * 1024


def test_a_missing_file_is_named(manager, api_for):
    response = api_for(manager).post(BATCHES, {"project": "alpha"}, format="multipart")
    assert response.status_code == 400
    assert {e["field"] for e in response.json()["errors"]} == {"template", "csv"}


def test_a_second_batch_of_the_same_name_is_a_conflict(manager, api_for):
    client = api_for(manager)
    assert upload(client).status_code == 201
    again = upload(client)
    assert again.status_code == 409
    assert "already has a batch named 'questions'" in again.json()["detail"]
    assert Batch.objects.count() == 1
    assert Task.objects.count() == 3


def test_only_researchers_and_admins_upload_and_outsiders_learn_nothing(owner, outsider, api_for):
    assert upload(api_for(owner)).status_code == 403
    assert upload(api_for(outsider)).status_code == 404
    assert not Batch.objects.exists()


def test_a_template_with_crowd_elements_uploads_with_a_warning(manager, api_for):
    template = TEMPLATE + "<crowd-form><crowd-input name='x'></crowd-input></crowd-form>"
    body = upload(api_for(manager), template=template).json()
    assert body["uses_crowd_elements"] is True
    assert any("<crowd-*> elements" in note and "not rendered" in note for note in body["warnings"])


# --- Uploads through the web form ---------------------------------------------------------------------------


def test_an_upload_is_published_and_active_unless_it_says_otherwise(manager, owner, api_for):
    """Multipart form data has no value for a boolean left out: it is the documented default (true; the web form
    starts unpublished instead), never false; a multipart change of other settings leaves both as they are."""
    plain = upload(api_for(manager)).json()
    assert (plain["published"], plain["active"]) == (True, True)
    assert [b["id"] for b in api_for(owner).get(BATCHES).json()["results"]] == [plain["id"]]  # a worker sees it
    hidden = upload(api_for(manager), csv_text="topic,sentence\nx,y\n", name="hidden", published="false").json()
    assert (hidden["published"], hidden["active"]) == (False, True)
    paused = upload(api_for(manager), csv_text="topic,sentence\nz,w\n", name="paused", active="false").json()
    assert (paused["published"], paused["active"]) == (True, False)
    renamed = api_for(manager).patch(f"{BATCHES}{plain['id']}/", {"name": "renamed"}, format="multipart")
    assert renamed.status_code == 200, renamed.content
    assert (renamed.json()["name"], renamed.json()["published"], renamed.json()["active"]) == ("renamed", True, True)


def web_upload(user, template=TEMPLATE, csv_text=CSV, client=None, **fields):
    if client is None:
        client = Client()
        client.force_login(user)
    body = {
        "project": "alpha",
        "name": "",
        "template": SimpleUploadedFile("t.html", template.encode()),
        "csv": SimpleUploadedFile("web.csv", csv_text.encode()),
        "assignments_per_task": 1,
        "allotted_minutes": 30,
        "published": "on",
        **fields,
    }
    return client.post("/work/batches/new/", body)


def test_the_web_form_creates_a_batch_and_shows_it(manager):
    response = web_upload(manager)
    batch = Batch.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/work/batches/{batch.pk}/"
    assert batch.name == "web"
    assert batch.allotted_seconds == 1800
    assert batch.created_by == manager


def test_the_web_form_names_the_problem_and_stores_nothing(manager, settings):
    response = web_upload(manager, csv_text="topic\nx\n")
    assert response.status_code == 400
    assert "missing column &#x27;sentence&#x27;" in response.content.decode()
    settings.FORM_CSV_MAX_BYTES = 10
    assert web_upload(manager).status_code == 413
    assert not Batch.objects.exists()


# --- Warnings for gold that can never be scored, and for scripts nothing serves ------------------------------

# NER - Scruples' mismatch: the gold says situation_0, the template's field is situation-0.
MISNAMED = """<p>${text}</p><input type="text" name="situation-0"><input type="text" name="kept">"""
MISNAMED_CSV = "text,Answer.situation_0,Answer.kept\nhello,a,b\n"
HIDDEN = """<p>${text}</p><input type="hidden" name="label"><input type="hidden" name="span"><input name="notes">
<script src="https://assets.crowd.aws/crowd-html-elements.js"></script>"""
HIDDEN_CSV = "text,Answer.label,Answer.span\nhello,x,y\n"


def test_answers_without_a_field_and_all_hidden_answers_are_named_everywhere(manager, api_for, tmp_path):
    api = api_for(manager)
    misnamed = upload(api, template=MISNAMED, csv_text=MISNAMED_CSV, name="misnamed")
    assert misnamed.status_code == 201, misnamed.content
    [note] = misnamed.json()["warnings"]
    assert "1 of 2 Answer.* column(s) have no input, select or textarea of that name" in note
    assert "situation_0 (the template has 'situation-0')" in note
    assert "can never be answered or scored (the template has no script" in note
    hidden = upload(api, template=HIDDEN, csv_text=HIDDEN_CSV, name="hidden").json()
    assert any(
        "every answer field the template has is a hidden input" in n and "label, span" in n for n in hidden["warnings"]
    )
    assert any("https://assets.crowd.aws/crowd-html-elements.js" in n for n in hidden["warnings"])

    # Stored on the batch: the API (another reader than the uploader too) and the batch page show them.
    owner = make_user("ada", Project.objects.get(name="alpha"), Role.ADMIN)
    for user in (manager, owner):
        stored = api_for(user).get(f"{BATCHES}{misnamed.json()['id']}/").json()
        assert stored["import_warnings"] == [note]
        assert stored["external_scripts"] == []
        client = Client()
        client.force_login(user)
        page = client.get(f"/work/batches/{hidden['id']}/").content.decode()
        assert 'id="import-warnings"' in page
        assert "label, span" in page
        assert "not served locally" in page

    # The web upload's next page (the batch page) shows them once, in its body, the message only counting them;
    # the import command prints them.
    page = Client()
    page.force_login(manager)
    shown = web_upload(manager, template=MISNAMED, csv_text=MISNAMED_CSV, client=page, name="web-misnamed")
    html = page.get(shown["Location"]).content.decode()
    assert html.count("situation_0 (the template has &#x27;situation-0&#x27;)") == 1
    assert html.count("can never be answered or scored") == 1
    assert "The import noticed 1 thing(s), listed on the page." in html
    folder = tmp_path / "NER - Scruples"
    folder.mkdir()
    (folder / "template.html").write_text(MISNAMED)
    (folder / "batch.csv").write_text(MISNAMED_CSV)
    printed = import_dirs("tb", folder)
    assert "warning: 1 of 2 Answer.* column(s)" in printed
    assert "situation_0 (the template has 'situation-0')" in printed
    assert Batch.objects.get(name="NER - Scruples").import_warnings == [note]


def test_the_real_tasks_warn_for_script_made_fields_and_list_their_external_scripts(db):
    printed = import_dirs("tb", *[task_dir(name) for name in ("Scalar Adjectives Identification", "Goal feasibility")])
    assert (
        "16 of 16 Answer.* column(s) have no input, select or textarea of that name in the template: unless the "
        in printed
    )
    scalar, goal = (
        Batch.objects.get(name="Scalar Adjectives Identification"),
        Batch.objects.get(name="Goal feasibility"),
    )
    assert [a["local"] for a in scalar.external_scripts] == ["bootstrap@3.1.1/dist/css/bootstrap.min.css"]  # bs30
    assert len(goal.external_scripts) == 5
    assert (
        "external scripts and styles: 5, 4 served locally: bootstrap@4.0.0, jquery@3.2.1, popper.js@1.12.9" in printed
    )
    assert [a["url"] for a in goal.external_scripts if a["local"] is None] == [
        "https://fonts.googleapis.com/css?family=Open+Sans:400,400i,700,700i"
    ]
