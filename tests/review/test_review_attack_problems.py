"""Hostile input to problem marks and to the detail URLs of jobs: text Python calls a digit but ``int`` refuses
(``²``) and NUL characters (PostgreSQL stores none) are clear refusals naming the field, never a 500, and nothing is
stored."""

import pytest
from django.contrib.messages import get_messages

from annotation.models import ProblemMark, ProblemTaxonomy, Role, Turn, TurnType
from tests.support.actors import make_user, signed_in, token_client


@pytest.fixture
def turn(demo):
    return Turn.objects.filter(demonstration=demo, type=TurnType.BROWSER).first()


@pytest.mark.django_db
def test_a_nul_in_a_note_or_a_kind_label_is_a_400_naming_it(demo, turn, reviewer, alpha):
    url = f"/api/review/{demo.name}/problems/"
    for body in (
        {"kind": "wrong_target", "turn": turn.pk, "note": "a\x00b"},
        {"kind": "task_infeasible", "note": "\x00"},
    ):
        answer = token_client(reviewer).post(url, body, format="json")
        assert answer.status_code == 400, answer.content
        assert answer.json()["errors"][0]["field"] == "note"
    page = signed_in(reviewer)
    answer = page.post(
        f"/review/{demo.name}/problems", {"op": "mark", "kind": "wrong_target", "turn": turn.pk, "note": "\x00"}
    )
    assert answer.status_code == 302
    assert "NUL" in " ".join(str(m) for m in get_messages(answer.wsgi_request))
    assert not ProblemMark.objects.exists()

    admin = make_user("admin-p", alpha, Role.ADMIN)
    kinds = [{"key": "wrong_target", "label": "Wrong\x00target", "level": "turn"}]
    answer = token_client(admin).put("/api/projects/alpha/problem-kinds/", {"kinds": kinds}, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["errors"][0]["field"] == "kinds[0].label"
    answer = signed_in(admin).post("/projects/alpha/problem-kinds", {"kinds": "wrong_target | turn | Wrong\x00target"})
    assert answer.status_code == 302
    assert not ProblemTaxonomy.objects.exists()


@pytest.mark.django_db
def test_a_superscript_turn_or_mark_on_the_review_page_is_not_found(demo, turn, reviewer):
    page = signed_in(reviewer)
    assert (
        page.post(f"/review/{demo.name}/problems", {"op": "mark", "kind": "wrong_target", "turn": "²"}).status_code
        == 404
    )
    assert page.post(f"/review/{demo.name}/problems", {"op": "unmark", "mark": "²"}).status_code == 404
    answer = page.post(f"/review/{demo.name}/problems", {"op": "mark", "kind": "wrong_target", "turn": str(turn.pk)})
    assert answer.status_code == 302
    assert ProblemMark.objects.get().turn == turn


@pytest.mark.django_db
def test_a_superscript_job_id_is_a_404_for_every_job_kind(researcher, reviewer):
    for person in (researcher, reviewer):
        client = token_client(person)
        for kind in ("exports", "imports", "evaluations", "agent-runs", "model-endpoints", "prediction-runs"):
            answer = client.get(f"/api/{kind}/%C2%B2/")
            assert answer.status_code == 404, (kind, answer.content)
