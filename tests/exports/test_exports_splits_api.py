"""Researchers browse demonstrations by split and manage the split configuration."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from annotation.actions.exports.splits import do_update_split_config
from annotation.actions.exports.splits import split_config_errors as split_actions_errors
from annotation.lib.splits import MIND2WEB_SPLITS, WEBLINX_SPLITS
from annotation.models import DemoStatus, Membership, Role, SplitConfig
from tests.support.corpus import ingest_corpus


@pytest.fixture
def corpus(alpha):
    return ingest_corpus(project="alpha", demos=8, turns=6, elements=20, seed=11)


@pytest.fixture
def client(researcher, api_for):
    return api_for(researcher)


def test_splits_report_counts_and_leakage_for_both_schemes(client, corpus):
    body = client.get("/api/projects/alpha/splits/").json()

    assert body["statuses"] == ["validated"]
    assert tuple(body["weblinx"]["counts"]) == WEBLINX_SPLITS
    assert tuple(body["mind2web"]["counts"]) == MIND2WEB_SPLITS
    assert sum(body["weblinx"]["counts"].values()) == len(corpus)
    assert body["weblinx"]["ok"] is True
    assert all(check["statement"] for check in body["weblinx"]["checks"])
    assert body["config"]["valid_fraction"] == 0.1


def test_a_project_admin_holds_out_a_subcategory_and_its_demos_move_to_test_cat(alpha, corpus, api_for, client):
    admin = Membership.objects.create(project=alpha, user=make_user("boss"), role=Role.ADMIN).user
    subcategory = next(d.subcategory for d in corpus if d.instructor_sees_screen)  # test_vis would take it first
    expected = sum(1 for d in corpus if d.subcategory == subcategory and d.instructor_sees_screen)

    response = api_for(admin).patch(
        "/api/projects/alpha/splits/", {"held_out_subcategories": [subcategory]}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["weblinx"]["counts"]["test_cat"] == expected
    listed = client.get("/api/demonstrations/", {"split": "test_cat"}).json()
    assert listed["count"] == expected
    assert {d["subcategory"] for d in listed["results"]} == {subcategory}


def make_user(username):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username=username, password="x")


def test_only_project_admins_change_the_configuration(client, corpus):
    response = client.put("/api/projects/alpha/splits/", {"seed": 9}, format="json")
    assert response.status_code == 403
    assert not SplitConfig.objects.filter(seed=9).exists()  # refused before anything is read or written


def test_bad_split_configuration_is_refused_with_the_field_named(alpha, corpus, api_for):
    admin = api_for(Membership.objects.create(project=alpha, user=make_user("boss"), role=Role.ADMIN).user)

    fraction = admin.patch("/api/projects/alpha/splits/", {"valid_fraction": 1.5}, format="json")
    listed = admin.patch("/api/projects/alpha/splits/", {"held_out_regions": "Europe"}, format="json")
    summed = admin.patch(
        "/api/projects/alpha/splits/", {"valid_fraction": 0.6, "test_iid_fraction": 0.6}, format="json"
    )

    assert fraction.status_code == listed.status_code == summed.status_code == 400
    assert fraction.json()["errors"][0]["field"] == "valid_fraction"
    assert listed.json()["errors"][0]["field"] == "held_out_regions"
    assert summed.json()["errors"][0]["field"] == "test_iid_fraction"


def test_demonstrations_filter_by_status_website_category_and_split(client, corpus):
    corpus[0].__class__.objects.filter(pk=corpus[0].pk).update(status=DemoStatus.REJECTED)
    website, category = corpus[1].websites[0], corpus[1].category

    by_status = client.get("/api/demonstrations/", {"status": "rejected"}).json()
    by_site = client.get("/api/demonstrations/", {"website": website}).json()
    by_category = client.get("/api/demonstrations/", {"category": category}).json()
    everything = client.get("/api/demonstrations/").json()

    assert [d["name"] for d in by_status["results"]] == [corpus[0].name]
    assert by_site["count"] >= 1
    assert all(website in d["websites"] for d in by_site["results"])
    assert {d["category"] for d in by_category["results"]} == {category}
    assert everything["count"] == len(corpus)
    assert all(d["split"] in WEBLINX_SPLITS and d["turn_count"] == 6 for d in everything["results"])


def test_demonstrations_are_paginated_and_can_use_the_mind2web_scheme(client, corpus):
    page = client.get("/api/demonstrations/", {"page_size": 3, "scheme": "mind2web"}).json()
    assert page["count"] == len(corpus)
    assert len(page["results"]) == 3
    assert all(d["split"] in MIND2WEB_SPLITS for d in page["results"])
    bad = client.get("/api/demonstrations/", {"scheme": "imagenet"})
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "scheme"


def test_outsiders_see_no_demonstrations_and_no_splits(outsider, api_for, corpus):
    outsider_client = api_for(outsider)
    assert outsider_client.get("/api/demonstrations/").json()["count"] == 0
    assert outsider_client.get("/api/projects/alpha/splits/").status_code == 404


def test_researchers_cannot_record(client):
    response = client.post("/api/recordings/", {"project": "alpha", "client_id": "r-1"}, format="json")
    assert response.status_code == 403


def test_a_seed_the_column_cannot_hold_is_refused_not_wrapped(alpha, api_for):
    admin = api_for(Membership.objects.create(project=alpha, user=make_user("boss"), role=Role.ADMIN).user)
    admin.patch("/api/projects/alpha/splits/", {"seed": 7}, format="json")

    for seed in (2**31, -(2**31) - 1, 10**20):
        refused = split_actions_errors({"seed": seed})
        assert refused == {"seed": "expected a whole number from -2147483648 to 2147483647"}, seed
        assert admin.patch("/api/projects/alpha/splits/", {"seed": seed}, format="json").status_code == 400

    assert SplitConfig.objects.get(project=alpha).seed == 7


def test_held_out_lists_have_a_size_limit(alpha, api_for):
    admin = api_for(Membership.objects.create(project=alpha, user=make_user("boss"), role=Role.ADMIN).user)

    many = admin.patch("/api/projects/alpha/splits/", {"held_out_websites": ["x"] * 1001}, format="json")
    long = admin.patch("/api/projects/alpha/splits/", {"held_out_regions": ["x" * 201]}, format="json")

    assert many.status_code == long.status_code == 400
    assert many.json()["errors"][0]["field"] == "held_out_websites"
    assert long.json()["errors"][0]["field"] == "held_out_regions"


@pytest.mark.django_db(transaction=True)
def test_two_changes_at_once_both_land(alpha):
    changes = [{"seed": 5}, {"valid_fraction": 0.3}, {"held_out_regions": ["Europe"]}, {"test_iid_fraction": 0.2}]

    def change(data):
        try:
            return do_update_split_config(alpha, data)
        finally:
            connection.close()

    for _ in range(3):
        with ThreadPoolExecutor(max_workers=len(changes)) as pool:
            list(pool.map(change, changes))
        config = SplitConfig.objects.get(project=alpha)
        assert (config.seed, config.valid_fraction, config.held_out_regions, config.test_iid_fraction) == (
            5,
            0.3,
            ["Europe"],
            0.2,
        )
        SplitConfig.objects.filter(project=alpha).update(seed=0, valid_fraction=0, held_out_regions=[])
