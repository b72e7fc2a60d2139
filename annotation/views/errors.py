"""The app's 403, 404 and 500 pages (``handler403/404/500`` in ``config/urls.py``), in the app's look. Paths under
``/api/`` keep the API's JSON error shape."""

from django.http import HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader


def wants_json(request) -> bool:
    return request.path.startswith("/api/")


def error_page(request, status: int, title: str, detail: str):
    if wants_json(request):
        code = {403: "forbidden", 404: "not_found"}.get(status, "error")
        return JsonResponse({"detail": detail, "code": code, "errors": []}, status=status)
    return render(request, "errors/error.html", {"code": status, "title": title, "detail": detail}, status=status)


def permission_denied(request, exception=None):
    detail = str(exception) if exception and str(exception) else "Your role in this project does not allow this."
    return error_page(request, 403, "Not allowed", detail)


def page_not_found(request, exception=None):
    return error_page(request, 404, "Page not found", f"There is nothing at {request.path} that you can open.")


def server_error(request):
    """Rendered without the request's context: the error may come from the database or a context processor."""
    if wants_json(request):
        return JsonResponse({"detail": "internal server error", "code": "server_error", "errors": []}, status=500)
    return HttpResponseServerError(loader.get_template("errors/500.html").render())
