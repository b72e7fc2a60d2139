"""A recording names the form-task assignment it was made on (``POST /api/recordings/`` with ``assignment``): only
one of the recorder's own assignments in the recording's project."""

from annotation.actions import forms
from annotation.models import Demonstration
from tests.support.forms_data import make_batch

RECORDINGS = "/api/recordings/"


def start(client, client_id, **fields):
    return client.post(
        RECORDINGS, {"project": "alpha", "client_id": client_id, "mode": "task", **fields}, format="json"
    )


def test_a_recording_names_its_own_assignment(alpha, owner, api_for):
    assignment = forms.do_accept_next(owner, make_batch(alpha))
    response = start(api_for(owner), "rec-1", assignment=assignment.pk)
    assert response.status_code == 201, response.json()
    assert response.json()["assignment"] == assignment.pk
    assert Demonstration.objects.get(client_id="rec-1").assignment == assignment
    assert list(assignment.recordings.values_list("client_id", flat=True)) == ["rec-1"]


def test_someone_elses_or_an_unknown_assignment_is_refused(alpha, beta, owner, teammate, outsider, api_for):
    theirs = forms.do_accept_next(teammate, make_batch(alpha))
    for value in (theirs.pk, 999_999, 0, "x"):
        response = start(api_for(owner), f"rec-{value}", assignment=value)
        assert response.status_code == 400, value
        assert response.json()["errors"][0]["field"] == "assignment"
    assert not Demonstration.objects.exists()


def test_a_recording_without_an_assignment_has_none(alpha, owner, api_for):
    response = start(api_for(owner), "rec-plain")
    assert response.status_code == 201
    assert response.json()["assignment"] is None
