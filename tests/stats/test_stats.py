"""Project statistics: exact numbers on a hand-built project, the CSV and JSON downloads, who may see them, and a
query count that does not grow with the data."""

import csv
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.actions.stats import tables as stats
from annotation.models import Role
from annotation.synth.bulk import bulk_corpus
from tests.support import stats_data
from tests.support.actors import make_user


@pytest.fixture
def project(alpha, owner, instructor, reviewer, teammate):
    stats_data.build(alpha, owner, instructor, reviewer, teammate)
    return alpha


@pytest.fixture
def tables(project):
    return {table.key: table for table in stats.project_stats(project)}


def test_splits_count_demos_and_turns_per_split_of_each_scheme(tables):
    weblinx = {row[0]: row[1:] for row in tables["weblinx_splits"].rows}
    assert weblinx == {
        "train": [0, 0],
        "valid": [0, 0],
        "test_iid": [0, 0],
        "test_web": [1, 7],
        "test_cat": [0, 0],
        "test_geo": [0, 0],
        "test_vis": [1, 3],
    }
    mind2web = {row[0]: row[1:] for row in tables["mind2web_splits"].rows}
    assert mind2web == {"train": [0, 0], "test_task": [0, 0], "test_website": [1, 4], "test_domain": [1, 1]}


def test_demo_facts_tables_count_each_website_a_demo_visited(tables):
    assert tables["categories"].rows == [["news", 1, 7, 2], ["travel", 1, 3, 1]]
    assert tables["websites"].rows == [["www.bbc.com", 2, 10, 3], ["www.booking.com", 1, 3, 1]]
    assert tables["regions"].rows == [["Asia", 1, 3, 1], ["Europe", 1, 7, 2]]
    assert dict(tables["turns_per_demo_summary"].rows) == {"count": 2, "min": 3, "median": 5.0, "mean": 5, "max": 7}
    assert dict(tables["turns_per_demo"].rows)["0–9"] == 2


def test_intents_and_utterance_lengths_leave_out_recordings_under_way(tables):
    assert tables["intents"].rows == [["change", 2], ["click", 2], ["load", 1], ["scroll", 1], ["textInput", 1]]
    assert tables["utterances_per_speaker"].rows == [["instructor", 2, 19.0, 27], ["navigator", 1, 2.0, 2]]
    lengths = dict(tables["utterance_lengths"].rows)
    assert lengths == {"0": 0, "1–20": 2, "21–50": 1, "51–100": 0, "101–200": 0, "201–500": 0, "501+": 0}


def test_mind2web_tables_count_steps_and_operations_by_element(tables):
    assert tables["tasks_per_website"].rows == [["www.bbc.com", 1, 4], ["www.booking.com", 1, 1]]
    assert dict(tables["steps_per_task_summary"].rows)["max"] == 4
    assert tables["operations"].rows == [["CLICK", 3], ["TYPE", 1], ["SELECT", 1]]


def test_form_task_tables_read_field_types_instances_and_assignments(tables):
    assert tables["field_types"].rows == [["radio", 2, 1], ["select", 1, 1], ["text", 1, 1], ["textarea", 1, 1]]
    assert tables["instances_per_task"].rows == [["b1", 3]]
    assert tables["assignments_done"].columns == ["batch", "active", "submitted", "returned", "skipped", "expired"]
    assert tables["assignments_done"].rows == [["b1", 0, 2, 1, 0, 0]]


def test_review_tables_count_outcomes_and_edits(tables):
    outcomes = dict(tables["review_outcomes"].rows)
    assert outcomes == {"recording": 1, "recorded": 1, "in_review": 0, "returned": 0, "validated": 1, "rejected": 0}
    assert tables["edits"].rows == [["comment", 2, 1, 1], ["set_validity", 2, 1, 1], ["delete", 1, 1, 1]]


def test_the_page_draws_one_bar_per_row_of_each_chart(client, project, researcher):
    client.force_login(researcher)
    response = client.get("/projects/alpha/stats/")
    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('<svg class="chart bars" data-table="categories"') == 1
    assert page.count('data-label="www.bbc.com"') == 2  # the websites and the tasks-per-website charts
    assert page.count('<rect class="bar"') == sum(
        len(table.rows) for table in stats.project_stats(project) if table.chart and table.rows
    )


def test_every_table_downloads_as_csv_and_json(client, project, reviewer):
    client.force_login(reviewer)
    response = client.get("/projects/alpha/stats/operations.csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == 'attachment; filename="alpha-operations.csv"'
    assert list(csv.reader(io.StringIO(response.content.decode()))) == [
        ["operation", "steps"],
        ["CLICK", "3"],
        ["TYPE", "1"],
        ["SELECT", "1"],
    ]
    table = client.get("/projects/alpha/stats/field_types.json").json()
    assert table["columns"] == ["type", "fields", "batches"]
    assert table["rows"][0] == ["radio", 2, 1]
    everything = json.loads(client.get("/projects/alpha/stats.json").content)
    assert {t["key"] for t in everything["tables"]} == {t.key for t in stats.project_stats(project)}
    assert client.get("/projects/alpha/stats/nosuchtable.csv").status_code == 404
    assert client.get("/projects/alpha/stats/operations.xml").status_code == 404


def test_only_members_see_a_projects_statistics(client, project, outsider):
    assert client.get("/projects/alpha/stats/")["Location"].startswith("/accounts/login/")
    client.force_login(outsider)
    for url in ("/projects/alpha/stats/", "/projects/alpha/stats.json", "/projects/alpha/stats/intents.csv"):
        assert client.get(url).status_code == 404
    client.force_login(make_user("annotator2", project, Role.ANNOTATOR))
    assert client.get("/projects/alpha/stats/").status_code == 200


def stats_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/projects/alpha/stats/").status_code == 200
    return len(queries)


def test_the_stats_page_makes_the_same_queries_however_much_data(client, project, owner, researcher):
    client.force_login(researcher)
    before = stats_queries(client)
    bulk_corpus(project, owner, demos=40, turns=1200, seed=3)
    assert stats_queries(client) == before
