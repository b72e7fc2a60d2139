"""Shared data of the Mind2Web workflow tests: a website with seed tasks, and helpers that walk a proposal through
the API (start a round, submit, review)."""

from annotation.models import SeedTask, Website

SEEDS = [
    "Find a table for two at an Italian restaurant in Boston tonight",
    "Check for pickup restaurants available in Boston for tomorrow",
    "Browse wine tastings in Napa for this weekend",
    "Show the gift cards and buy one worth 50 dollars",
    "Find a sushi place in Seattle with outdoor seating",
    "List the events in Chicago next Friday under 40 dollars",
    "Book a cooking class in New York for four people",
    "Find the cancellation policy of a reservation",
    "Search for brunch spots in Austin open on Sunday",
    "Add a restaurant in Denver to my favourites",
    "Compare the prices of two tasting menus in San Francisco",
    "Find the help page about changing a booking",
]


def website(project, name="exploretock", target=20, seeds=SEEDS) -> Website:
    site = Website.objects.create(
        project=project,
        name=name,
        url=f"https://www.{name}.com/",
        domain="Travel",
        subdomain="Restaurant",
        target_tasks=target,
    )
    SeedTask.objects.bulk_create([SeedTask(website=site, text=text) for text in seeds])
    return site


def start_round(client, site):
    return client.post("/api/proposal-rounds/", {"website": site.pk}, format="json")


def propose(client, site, tasks) -> dict:
    """Start a round on ``site`` and submit ``tasks``; the submitted round."""
    started = start_round(client, site)
    assert started.status_code == 201, started.content
    response = client.post(f"/api/proposal-rounds/{started.json()['id']}/submit/", {"tasks": tasks}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def review(client, proposal_id, decision, text=None):
    body = {"decision": decision, **({"text": text} if text is not None else {})}
    return client.post(f"/api/proposals/{proposal_id}/screen/", body, format="json")
