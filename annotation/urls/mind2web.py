"""Mind2Web collection: websites and seed tasks, proposing, the screening of proposals."""

from django.urls import path

from ..views import mind2web
from ..views.moved import moved

urlpatterns = [
    path("mind2web/", mind2web.index, name="mind2web-index"),
    path("mind2web/projects/<slug:project>/", mind2web.project_page, name="mind2web-project"),
    path("mind2web/projects/<slug:project>/websites/add", mind2web.website_add, name="mind2web-website-add"),
    path(
        "mind2web/projects/<slug:project>/websites/import",
        mind2web.website_import,
        name="mind2web-website-import",
    ),
    path("mind2web/projects/<slug:project>/screening/", mind2web.screening_queue, name="mind2web-screening"),
    path("mind2web/websites/<int:website_id>/seeds", mind2web.seeds_import, name="mind2web-seeds"),
    path("mind2web/websites/<int:website_id>/propose", mind2web.round_start, name="mind2web-propose"),
    path("mind2web/rounds/<int:round_id>/", mind2web.round_page, name="mind2web-round"),
    path("mind2web/proposals/<int:proposal_id>/screen", mind2web.proposal_screen, name="mind2web-proposal-screen"),
    # Old paths of renamed pages (one release): 308 to the new path, method and body kept.
    moved("mind2web/projects/<slug:project>/review/", "mind2web-screening"),
    moved("mind2web/proposals/<int:proposal_id>/review", "mind2web-proposal-screen"),
]
