"""Who reads a job or an endpoint by its id: its project's researchers and admins; another role of the project gets
a 403 saying who may (docs/api.md: 403 your role cannot); anyone outside the project a 404, as for an id that does
not exist. The download and cancel routes answer the same."""

import pytest

from annotation.models import Evaluation, ExportJob, ModelEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def objects(alpha, researcher):
    export = ExportJob.objects.create(project=alpha, owner=researcher, format="weblinx", statuses=["recorded"])
    evaluation = Evaluation.objects.create(
        project=alpha, owner=researcher, format="weblinx", split="valid", predictions=[]
    )
    endpoint = ModelEndpoint.objects.create(
        project=alpha, owner=researcher, name="local", url="http://127.0.0.1:9/v1", model="m", key="sk-secret-1234"
    )
    return {
        "exports": (export.pk, "export or evaluate (needs researcher or admin)"),
        "evaluations": (evaluation.pk, "export or evaluate (needs researcher or admin)"),
        "model-endpoints": (endpoint.pk, "use agents and models (researchers and admins only)"),
    }


@pytest.mark.parametrize("who", ["owner", "reviewer", "outsider", "researcher", "admin"])
def test_each_role_reads_jobs_and_endpoints_by_id_as_documented(request, api_for, objects, who):
    client = api_for(request.getfixturevalue(who))
    for kind, (pk, cannot) in objects.items():
        answer = client.get(f"/api/{kind}/{pk}/")
        missing = client.get(f"/api/{kind}/{pk + 1000}/")
        assert missing.status_code == 404, kind
        if who in ("researcher", "admin"):
            assert answer.status_code == 200, kind
            assert "sk-secret" not in answer.content.decode()
        elif who == "outsider":
            assert answer.status_code == 404, kind  # whether it exists is not revealed
            assert answer.json() == missing.json()
        else:
            assert answer.status_code == 403, kind
            assert answer.json()["detail"] == f"your role in 'alpha' cannot {cannot}", kind
    if who in ("owner", "reviewer"):
        export_id = objects["exports"][0]
        assert client.get(f"/api/exports/{export_id}/download/").status_code == 403
        assert client.post(f"/api/exports/{export_id}/cancel/").status_code == 403
        assert client.get("/api/exports/").json()["results"] == []
    assert ExportJob.objects.get().status == "queued"
