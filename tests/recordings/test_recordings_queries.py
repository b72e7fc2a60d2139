"""The ingest hot path: a batch of turns costs the same number of queries whatever its size."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.payloads import numbered_turns, state_blobs, state_refs
from tests.support.recorder import post_turns, start_demo, upload_blobs


@pytest.fixture
def client(owner, api_for):
    return api_for(owner)


@pytest.fixture
def refs(client):
    files = state_blobs()
    upload_blobs(client, files.values())
    return state_refs(files)


def queries_for_batch(client, size: int, refs: dict, client_id: str) -> int:
    """Queries used to post one batch of ``size`` turns (each referring to blobs) to a fresh recording."""
    demo = start_demo(client, client_id=client_id)
    batch = numbered_turns(size, refs)
    with CaptureQueriesContext(connection) as queries:
        response = post_turns(client, demo.name, batch)
    assert response.status_code == 201, response.content
    assert demo.turns.count() == size
    return len(queries)


def test_posting_50_turns_uses_as_many_queries_as_posting_5(client, refs, django_assert_num_queries):
    small = queries_for_batch(client, 5, refs, "rec-small")
    demo = start_demo(client, client_id="rec-large")
    batch = numbered_turns(50, refs)

    with django_assert_num_queries(small):
        response = post_turns(client, demo.name, batch)

    assert response.status_code == 201
    assert demo.turns.count() == 50


def test_a_batch_takes_a_small_fixed_number_of_queries(client, refs, django_assert_max_num_queries):
    demo = start_demo(client)

    # the recording with its project and the role: one query (annotation.store.hotsql)
    with django_assert_max_num_queries(8):
        post_turns(client, demo.name, numbered_turns(20, refs))


def test_a_retried_batch_costs_the_same_whatever_its_size(client, refs, django_assert_num_queries):
    small, large = start_demo(client, client_id="rec-small"), start_demo(client, client_id="rec-large")
    small_batch, large_batch = numbered_turns(5, refs), numbered_turns(50, refs)
    post_turns(client, small.name, small_batch)
    post_turns(client, large.name, large_batch)
    with CaptureQueriesContext(connection) as queries:
        assert post_turns(client, small.name, small_batch).status_code == 200

    with django_assert_num_queries(len(queries)):
        response = post_turns(client, large.name, large_batch)

    assert response.json()["duplicates"] == 50
