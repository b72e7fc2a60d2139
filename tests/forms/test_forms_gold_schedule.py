"""Gold served by schedule on every path to a task: new workers in one batch, each taking tasks their own way
(Accept on the work page, the API's accept, Accept from a preview page or the API naming a task, skipping,
returning or letting gold tasks expire), get exactly the batch's share of gold tasks in each window of the schedule;
no position is always gold, each worker's gold positions and task order are their own, and dodging a gold task
brings another one. The schedule and the keyed order themselves (``annotation.lib.goldschedule``) are checked
for what the docs promise."""

import datetime as dt
import math
import random
from itertools import pairwise

import lxml.html
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.actions import forms, quality
from annotation.lib import goldschedule
from annotation.models import Assignment, AssignmentStatus, Role, Task
from tests.support.actors import make_user, signed_in, token_client
from tests.support.forms_data import make_batch

RATE = 0.25
WINDOW = goldschedule.window_size(RATE)  # 20
GOLD_PER_WINDOW = goldschedule.gold_count(RATE)  # 5
GOLD_TASKS, REGULAR_TASKS = 30, 60


def csv_of(gold: int, regular: int) -> str:
    rows = [f"g{i},gold {i},pos" for i in range(gold)] + [f"r{i},regular {i}," for i in range(regular)]
    random.Random(7).shuffle(rows)  # gold tasks anywhere in the CSV, as a requester mixes them in
    return "topic,sentence,Answer.polarity\n" + "\n".join(rows) + "\n"


def gold_batch(project, gold=GOLD_TASKS, regular=REGULAR_TASKS, per_task=40, name="graded", rate=RATE):
    batch = make_batch(project, csv_text=csv_of(gold, regular), name=name, assignments_per_task=per_task)
    indices = list(batch.tasks.exclude(inputs__topic__startswith="r").values_list("index", flat=True))
    quality.do_mark_gold(batch, quality.check_gold_request(batch, {"tasks": indices}))
    quality.do_update_quality_settings(batch, {"gold_rate": rate})
    batch.refresh_from_db()
    return batch


def answer(assignment) -> dict:
    return {"polarity": "pos", "short": "x"}


def active_of(worker, batch) -> Assignment:
    return Assignment.objects.select_related("task").get(worker=worker, task__batch=batch, status="active")


class Worker:
    """A worker with their browser session and API token, made once (as a person keeps them)."""

    def __init__(self, user):
        self.user, self.page, self.api = user, signed_in(user), token_client(user)
        self.previewed = False


# How each worker takes a task; each returns the active assignment it got.


def accept_on_page(worker, batch):
    response = worker.page.post(f"/work/batches/{batch.pk}/accept/")
    assert response.status_code == 302
    return active_of(worker.user, batch)


def accept_in_api(worker, batch):
    response = worker.api.post(f"/api/batches/{batch.pk}/accept/")
    assert response.status_code == 201
    return active_of(worker.user, batch)


def regular_to_pick(worker, batch) -> Task:
    """The task a worker who wants to dodge gold would pick: the first regular task still open to them."""
    return forms.queue.open_tasks(batch, worker.user).filter(is_gold=False).order_by("index").first()


def pick_on_preview_page(worker, batch):
    task = regular_to_pick(worker, batch)
    if not worker.previewed:  # the preview page says the queue chooses
        preview = lxml.html.document_fromstring(worker.page.get(f"/work/tasks/{task.pk}/preview/").content.decode())
        assert "the queue chooses" in preview.get_element_by_id("queue-picks").text_content()
        assert preview.get_element_by_id("accept").text_content() == "Accept the next task"
        worker.previewed = True
    assert worker.page.post(f"/work/tasks/{task.pk}/accept/").status_code == 302
    return active_of(worker.user, batch)


def pick_in_api(worker, batch):
    task = regular_to_pick(worker, batch)
    response = worker.api.post(f"/api/batches/{batch.pk}/accept/", {"task": task.pk}, format="json")
    assert response.status_code == 201
    return active_of(worker.user, batch)


def dodge(way):
    """Take a task; whenever it is gold, first skip it, return it or let it expire (once per position), and check
    that the next task is gold again."""

    def take(worker, batch):
        assignment = forms.do_accept_next(worker.user, batch)
        if not assignment.task.is_gold:
            return assignment
        if way == "skip":
            following = forms.do_skip(assignment)
        elif way == "skip-in-api":
            body = worker.api.post(f"/api/assignments/{assignment.pk}/skip/").json()
            following = Assignment.objects.select_related("task").get(pk=body["next"]["id"])
        elif way == "return":
            forms.do_return(assignment)
            following = forms.do_accept_next(worker.user, batch)
        else:  # expire
            forms.do_expire(assignment.pk, assignment.expires_at + dt.timedelta(seconds=1))
            following = forms.do_accept_next(worker.user, batch)
        assert following.task.is_gold, f"{worker.user.username} dodged a gold task by {way}"
        assert following.task_id != assignment.task_id
        return following

    take.__name__ = f"dodge_by_{way}"
    return take


PATHS = [
    accept_on_page,
    accept_in_api,
    pick_on_preview_page,
    pick_in_api,
    dodge("skip"),
    dodge("skip-in-api"),
    dodge("return"),
    dodge("expire"),
]


def test_new_workers_get_the_rate_of_gold_on_every_path_at_positions_of_their_own(alpha):
    """Three workers per path (24), a window of twenty tasks each: 480 accepts and submissions, the most this
    suite affords in one test on a shared two-core machine (about a minute idle)."""
    batch = gold_batch(alpha)
    workers = [Worker(make_user(f"w{i:02d}", alpha, Role.ANNOTATOR)) for i in range(3 * len(PATHS))]
    kinds, orders = {}, {}
    for i, worker in enumerate(workers):
        take, name = PATHS[i % len(PATHS)], worker.user.username
        kinds[name], orders[name] = [], []
        for _ in range(WINDOW):
            assignment = take(worker, batch)
            kinds[name].append(assignment.task.is_gold)
            orders[name].append(assignment.task.index)
            forms.do_submit(assignment.pk, answer(assignment))
    for name, served in kinds.items():
        assert served.count(True) == GOLD_PER_WINDOW, (name, served)  # the rate, exactly, in the window
    positions = {name: frozenset(i for i, gold in enumerate(served) if gold) for name, served in kinds.items()}
    assert len(set(positions.values())) >= 20  # each worker's own positions (C(20, 5) = 15,504 possible)
    firsts = [served[0] for served in kinds.values()]
    assert firsts.count(True) < len(firsts)  # the first task is not always gold
    everyones = [position for position in range(WINDOW) if all(served[position] for served in kinds.values())]
    assert everyones == []  # no position is gold for everyone
    somebodys = {position for served in positions.values() for position in served}
    assert len(somebodys) >= WINDOW - 2  # gold turns up all over the window
    # not in index order: each worker's tasks come in an order of their own, the regular ones too
    assert len({tuple(order) for order in orders.values()}) == len(orders)
    in_index_order = [name for name, order in orders.items() if all(a < b for a, b in pairwise(order))]
    assert in_index_order == []
    assert len({order[0] for order in orders.values()}) >= 12
    # each worker's submitted work in the batch: the twenty tasks, five of them gold
    for worker in workers:
        submitted = Assignment.objects.filter(worker=worker.user, task__batch=batch, status=AssignmentStatus.SUBMITTED)
        assert submitted.count() == WINDOW
        assert submitted.filter(task__is_gold=True).count() == GOLD_PER_WINDOW


def test_a_worker_who_skips_every_gold_task_keeps_getting_gold(alpha, owner):
    batch = gold_batch(alpha, gold=4, regular=40, per_task=1)
    assignment = forms.do_accept_next(owner, batch)
    while not assignment.task.is_gold:  # up to the worker's first gold position
        forms.do_submit(assignment.pk, answer(assignment))
        assignment = forms.do_accept_next(owner, batch)
    regular_before = Assignment.objects.filter(worker=owner, task__is_gold=False).count()
    seen = set()
    for _ in range(10):  # skip, skip, ...: every gold task once, then the skipped ones again (they come last)
        assert assignment.task.is_gold
        seen.add(assignment.task_id)
        assignment = forms.do_skip(assignment)
    assert len(seen) == 4
    forms.do_return(assignment)
    again = forms.do_accept_next(owner, batch)
    assert again.task.is_gold
    forms.do_expire(again.pk, again.expires_at + dt.timedelta(seconds=1))
    assert forms.do_accept_next(owner, batch).task.is_gold
    assert Assignment.objects.filter(worker=owner, task__is_gold=False).count() == regular_before


def test_when_no_task_of_the_due_kind_is_left_the_other_kind_comes(alpha, owner, teammate):
    batch = gold_batch(alpha, gold=2, regular=6, per_task=1, rate=0.5)
    kinds = []
    while (assignment := forms.do_accept_next(owner, batch)) is not None:
        kinds.append(assignment.task.is_gold)
        forms.do_submit(assignment.pk, answer(assignment))
    assert sorted(kinds) == [False] * 6 + [True] * 2  # every task, gold while it lasted
    assert forms.do_accept_next(teammate, batch) is None


def test_a_batch_without_gold_keeps_index_order_and_accept_by_id(alpha, owner, teammate):
    batch = make_batch(alpha, csv_text=csv_of(0, 6), name="plain", assignments_per_task=2)
    assert forms.do_accept_next(owner, batch).task.index == 0
    third = batch.tasks.get(index=3)
    response = signed_in(teammate).post(f"/work/tasks/{third.pk}/accept/")
    assert response.status_code == 302
    assert active_of(teammate, batch).task_id == third.pk  # the previewed task itself
    page = signed_in(teammate).get(f"/work/tasks/{third.pk}/preview/").content.decode()
    assert 'id="queue-picks"' not in page
    # a gold rate with no gold task marked yet serves no gold: still index order
    quality.do_update_quality_settings(batch, {"gold_rate": 0.5})
    forms.do_submit(active_of(owner, batch).pk, {"short": "x"})
    assert forms.do_accept_next(owner, batch).task.index == 1


def test_the_preview_of_the_next_task_is_the_task_accepting_gives(alpha, owner):
    batch = gold_batch(alpha, per_task=2)
    client = signed_in(owner)
    for _ in range(6):
        preview = client.get(f"/work/batches/{batch.pk}/preview/")
        previewed = int(preview["Location"].split("/")[-3])
        accepted = client.post(f"/work/tasks/{previewed}/accept/")
        assignment = active_of(owner, batch)
        assert assignment.task_id == previewed
        assert accepted["Location"] == f"/work/assignments/{assignment.pk}/"
        forms.do_submit(assignment.pk, answer(assignment))


def test_a_big_batch_reads_its_keyed_order_from_the_front_and_its_last_tasks_are_found(alpha, owner, teammate):
    small = gold_batch(alpha, gold=5, regular=15, per_task=1, name="small")
    big = gold_batch(alpha, gold=5, regular=3000, per_task=1, name="big")
    counts = []
    for batch in (small, big):
        with CaptureQueriesContext(connection) as captured:
            first = forms.do_accept_next(owner, batch)
        counts.append(len(captured))
        forms.do_submit(first.pk, answer(first))
    assert counts[0] == counts[1]  # a fresh worker's accept costs the same in 3,000 tasks as in 20
    # all but three regular tasks done: past the probes, the few left are still found, in the worker's order
    # (three the owner did not take: per_task is 1, so the owner's own task is done already)
    left = list(big.tasks.filter(is_gold=False, taken=0).order_by("?").values_list("pk", flat=True)[:3])
    big.tasks.filter(is_gold=False).exclude(pk__in=left).update(completed=True)
    quality.do_update_quality_settings(big, {"gold_rate": 0.05})
    got = set()
    while (assignment := forms.do_accept_next(teammate, big)) is not None:
        got.add(assignment.task_id)
        forms.do_submit(assignment.pk, answer(assignment))
    assert set(left) <= got
    assert not big.tasks.filter(completed=False).exists()


def test_the_batch_page_preview_works_for_every_role_that_sees_it(alpha, owner, reviewer, researcher):
    boss = make_user("boss", alpha, Role.ADMIN)
    batch = gold_batch(alpha, per_task=2)
    for user in (reviewer, researcher, boss):
        page = lxml.html.document_fromstring(signed_in(user).get(f"/work/batches/{batch.pk}/").content.decode())
        links = [a.get("href") for a in page.xpath('//a[@id="preview-first"]')]
        assert len(links) == 1, user.username
        preview = signed_in(user).get(links[0])
        assert preview.status_code == 200, user.username
        shown = lxml.html.document_fromstring(preview.content.decode())
        assert bool(shown.xpath('//*[@id="accept"]')) == (user == boss), user.username  # admins also work
    assert signed_in(owner).get(f"/work/batches/{batch.pk}/").status_code == 403


# --- The schedule and the order themselves ------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.01, 0.05, 0.1, 0.25, 1 / 3, 0.5, 0.9, 1.0])
def test_every_window_holds_round_rate_times_its_size_at_positions_that_vary(rate):
    size, count = goldschedule.window_size(rate), goldschedule.gold_count(rate)
    assert size >= 20
    assert size * rate >= 1
    assert abs(count - rate * size) <= 0.5
    layouts = set()
    for worker in range(30):
        key = f"batch-1:worker-{worker}".encode()
        for window in range(3):
            layout = [goldschedule.is_gold_position(key, window * size + i, rate) for i in range(size)]
            assert layout.count(True) == count
            layouts.add(tuple(layout))
    if 0 < count < size:  # 90 windows (30 workers × 3): mostly different
        assert len(layouts) >= min(45, math.comb(size, count) // 2)


def test_the_keyed_order_is_a_permutation_with_its_inverse_and_depends_on_the_key():
    for n in (1, 2, 3, 20, 257, 1000):
        order = goldschedule.KeyedOrder(b"key", n)
        served = [order.at(place) for place in range(n)]
        assert sorted(served) == list(range(n))
        assert all(order.place(order.at(place)) == place for place in range(n))
    first = [goldschedule.KeyedOrder(b"one", 1000).at(p) for p in range(1000)]
    second = [goldschedule.KeyedOrder(b"two", 1000).at(p) for p in range(1000)]
    assert first != second
    assert first != sorted(first)
    assert goldschedule.KeyedOrder(b"one", 1000).at(5) == first[5]  # reproducible


def test_the_schedule_is_keyed_by_the_platforms_secret_per_batch_and_worker(alpha, owner, teammate, settings):
    batch = gold_batch(alpha, per_task=2)
    other = gold_batch(alpha, per_task=2, name="other")
    mine = forms.gold.schedule_key(batch, owner)
    assert forms.gold.schedule_key(batch, owner) == mine  # reproducible
    assert len({mine, forms.gold.schedule_key(batch, teammate), forms.gold.schedule_key(other, owner)}) == 3
    settings.SECRET_KEY = "another-secret-" + "x" * 40
    assert forms.gold.schedule_key(batch, owner) != mine
