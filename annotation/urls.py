"""Pages of the web app."""

from django.urls import path

from . import review_views, session_views, views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("review/", review_views.review_list, name="review-list"),
    path("review/thumbs/<str:sha256>", review_views.review_thumbnail, name="review-thumbnail"),
    path("review/<str:name>/", review_views.review_demo, name="review-demo"),
    path("review/<str:name>/edit", review_views.review_edit, name="review-edit"),
    path("review/<str:name>/revision", review_views.review_revision, name="review-revision"),
    path("review/<str:name>/turns/<int:turn_id>/page", review_views.review_turn_page, name="review-turn-page"),
    path("sessions/join/<str:code>", session_views.join, name="session-join"),
    path("sessions/<slug:name>/instruct", session_views.instruct, name="session-instruct"),
    path("sessions/<slug:name>/navigate", session_views.navigate, name="session-navigate"),
    path("sessions/<slug:name>/screenshots/<str:sha256>", session_views.screenshot, name="session-screenshot"),
]
