"""Review: the list, the queue's next demo, bulk actions, one demo's page and its JSON endpoints, thumbnails."""

from django.urls import path

from ..views.review import pages, problems

urlpatterns = [
    path("review/", pages.review_list, name="review-list"),
    path("review/thumbs/<str:sha256>", pages.review_thumbnail, name="review-thumbnail"),
    path("review/next", pages.review_next, name="review-next"),
    path("review/bulk", pages.review_bulk, name="review-bulk"),
    path("review/live", pages.review_list_live, name="review-list-live"),
    path("review/<str:name>/", pages.review_demo, name="review-demo"),
    path("review/<str:name>/edit", pages.review_edit, name="review-edit"),
    path("review/<str:name>/problems", problems.review_problems, name="review-problems"),
    path("review/<str:name>/revision", pages.review_revision, name="review-revision"),
    path("review/<str:name>/live", pages.review_live, name="review-live"),
    path("review/<str:name>/replay", pages.review_replay, name="review-replay"),
    path("projects/<slug:name>/problem-kinds", problems.review_problem_kinds, name="review-problem-kinds"),
    path("review/<str:name>/turns/<int:turn_id>/page", pages.review_turn_page, name="review-turn-page"),
    path("review/<str:name>/turns/<int:turn_id>/elements", pages.review_turn_elements, name="review-turn-elements"),
]
