"""``annotation.store.hotsql``: the upload path's hand-written reads answer exactly what the ORM queries they replace
answer (on SQLite here, on PostgreSQL in CI)."""

import pytest
from django.db.models import Q, Subquery

from annotation.models import Blob, ProjectBlob, Turn
from annotation.store import hotsql
from tests.support.actors import start_demo

pytestmark = pytest.mark.django_db


def chat_row(demo, client_id: str, seq: int) -> Turn:
    return Turn(
        demonstration=demo,
        client_id=client_id,
        seq=seq,
        type="chat",
        timestamp=float(seq),
        speaker="instructor",
        utterance=f"turn {seq}",
        content_sha256=f"{seq:064x}",
    )


def orm_stored_turns(demo, client_ids) -> set:
    last = demo.turns.order_by("-seq").values("seq")[:1]
    found = demo.turns.filter(Q(client_id__in=client_ids) | Q(seq=Subquery(last)))
    return set(found.values_list("client_id", "content_sha256", "seq"))


@pytest.mark.parametrize(
    "client_ids",
    [["c-1"], ["c-0", "c-3", "nowhere"], ["nowhere"], [], [f"c-{i}" for i in range(5)]],
    ids=["one", "some-and-a-stranger", "only-a-stranger", "none", "all"],
)
def test_stored_turns_are_the_asked_ones_and_the_last(owner, alpha, teammate, client_ids):
    demo, other = start_demo(owner, alpha), start_demo(teammate, alpha)
    Turn.objects.bulk_create([chat_row(demo, f"c-{i}", i) for i in range(5)])
    Turn.objects.bulk_create([chat_row(other, f"c-{i}", i) for i in range(9)])  # same ids in another recording

    found = hotsql.stored_turns(demo.pk, client_ids)

    assert len(found) == len(set(found))
    assert set(found) == orm_stored_turns(demo, client_ids)
    assert ("c-4", f"{4:064x}", 4) in found  # the last turn always comes


def test_a_recording_without_turns_has_none(owner, alpha):
    demo = start_demo(owner, alpha)
    assert hotsql.stored_turns(demo.pk, ["c-0"]) == []


def blob(sha: str, media_type: str = "image/png") -> Blob:
    return Blob.objects.create(sha256=sha, size=1, media_type=media_type, file=f"blobs/{sha}")


def test_blob_reads_are_per_project_as_the_orm_reads_them(owner, alpha, beta):
    shas = [f"{i:064x}" for i in range(6)]
    for index, sha in enumerate(shas[:5]):
        blob(sha, "text/html" if index % 2 else "image/png")
    for sha in shas[:2]:
        ProjectBlob.objects.create(project=alpha, blob_id=sha)
    for sha in shas[1:4]:
        ProjectBlob.objects.create(project=beta, blob_id=sha)

    for project in (alpha, beta):
        owned = set(ProjectBlob.objects.filter(project=project, blob_id__in=shas).values_list("blob_id", flat=True))
        assert hotsql.known_blobs(project.pk, shas) == {sha: sha in owned for sha in shas[:5]}
        media = set(Blob.objects.filter(sha256__in=shas, rights__project=project).values_list("sha256", "media_type"))
        assert set(hotsql.project_media_types(project.pk, shas)) == media
    assert hotsql.existing_blobs(shas) == set(shas[:5])
    assert hotsql.known_blobs(alpha.pk, []) == {}
    assert hotsql.existing_blobs([]) == set()
    assert hotsql.project_media_types(alpha.pk, []) == []


def loaded(instance) -> dict:
    """Every concrete field's value as loaded (JSON, times, booleans converted), and the instance's state."""
    values = {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}
    return {**values, "state": (instance._state.db, instance._state.adding)}


def test_a_recording_comes_with_its_project_and_the_users_role_there(owner, alpha, beta, outsider):
    from annotation.models import Demonstration, Membership, Project, Role
    from tests.support.actors import make_user

    alpha.category_choices, alpha.region_choices = ["Travel", "Shopping"], [{"name": "Europe", "codes": [1, 2.5]}]
    alpha.save()
    demo = start_demo(owner, alpha, task="Book a table")
    Demonstration.objects.filter(pk=demo.pk).update(websites=["a.example", {"url": "b.example"}], discarded=True)
    guest = make_user("guest", alpha, Role.REVIEWER)
    Membership.objects.create(project=beta, user=owner, role=Role.ADMIN)  # a role elsewhere does not count

    found = hotsql.demo_with_role(owner.pk, demo.name)
    assert (found.pk, found.name, found.task_description, found.created_at) == (
        demo.pk,
        demo.name,
        "Book a table",
        demo.created_at,
    )
    assert (found.project.pk, found.project.name, found.project.created_at) == (alpha.pk, "alpha", alpha.created_at)
    assert loaded(found) == loaded(Demonstration.objects.get(pk=demo.pk))
    assert loaded(found.project) == loaded(Project.objects.get(pk=alpha.pk))
    assert (found.websites, found.discarded, found.project.region_choices[0]["codes"]) == (
        ["a.example", {"url": "b.example"}],
        True,
        [1, 2.5],
    )
    assert found.user_role == Role.ANNOTATOR
    assert hotsql.demo_with_role(guest.pk, demo.name).user_role == Role.REVIEWER
    assert hotsql.demo_with_role(outsider.pk, demo.name).user_role is None
    assert hotsql.demo_with_role(owner.pk, "no-such-demo") is None


def test_a_token_is_found_with_its_user_only_while_the_user_is_active(owner, teammate):
    from rest_framework.authtoken.models import Token

    key = Token.objects.create(user=owner).key
    Token.objects.create(user=teammate)

    found = hotsql.active_token(key)
    assert (found.key, found.user, found.user.username, found.user.date_joined) == (
        key,
        owner,
        "owner",
        owner.date_joined,
    )
    assert loaded(found) == loaded(Token.objects.get(key=key))
    assert loaded(found.user) == loaded(type(owner).objects.get(pk=owner.pk))
    assert hotsql.active_token("0" * 40) is None
    owner.is_active = False
    owner.save()
    assert hotsql.active_token(key) is None


def test_the_locked_recording_is_read_whole_and_locked_where_the_database_can(owner, alpha):
    from django.db import connection, transaction

    from annotation.models import Demonstration

    demo = start_demo(owner, alpha, task="Rent a car")
    with transaction.atomic():
        found = hotsql.locked_demo(demo.pk)
    assert (found.pk, found.name, found.status, found.task_description, found.recording_start) == (
        demo.pk,
        demo.name,
        demo.status,
        "Rent a car",
        demo.recording_start,
    )
    assert loaded(found) == loaded(Demonstration.objects.get(pk=demo.pk))
    assert hotsql.locked_demo_sql(connection.vendor).endswith(
        " FOR UPDATE" if connection.features.has_select_for_update else "= %s"
    )
    with pytest.raises(Demonstration.DoesNotExist), transaction.atomic():
        hotsql.locked_demo(demo.pk + 1000)


def test_inserting_rows_that_exist_keeps_the_stored_ones_and_adds_the_others(owner, alpha, beta):
    first, second = f"{1:064x}", f"{2:064x}"
    fields = ["sha256", "size", "media_type", "file", "created_at"]
    hotsql.insert_new(Blob, fields, [(first, 10, "image/png", "blobs/first", hotsql.now_for_db())])
    stored = Blob.objects.get(pk=first)

    hotsql.insert_new(
        Blob,
        fields,
        [
            (first, 99, "text/html", "blobs/other", hotsql.now_for_db()),
            (second, 5, "text/html", "blobs/2", hotsql.now_for_db()),
        ],
    )
    hotsql.insert_new(ProjectBlob, ["project", "blob", "uploaded_by", "created_at"], [])
    rights = [(project.pk, first, owner.pk, hotsql.now_for_db()) for project in (alpha, beta, alpha)]
    hotsql.insert_new(ProjectBlob, ["project", "blob", "uploaded_by", "created_at"], rights)

    again = Blob.objects.get(pk=first)
    assert (again.size, again.media_type, again.file.name, again.created_at) == (
        10,
        "image/png",
        "blobs/first",
        stored.created_at,
    )
    assert Blob.objects.get(pk=second).size == 5
    assert sorted(ProjectBlob.objects.values_list("project__name", "blob_id", "uploaded_by")) == [
        ("alpha", first, owner.pk),
        ("beta", first, owner.pk),
    ]
