"""Every write goes through an action: the pages (``annotation/views/``), the API (``api/``) and the management
commands (``workers/management/``) call a ``do_*`` of ``annotation.actions`` and never write to the database
themselves, so the same rules hold on every surface.

Found by reading the source (AST): a call of ``.save(``, ``.delete(``, ``.create(``, ``get_or_create``,
``update_or_create``, ``bulk_create``, ``bulk_update`` (``form.save`` and ``serializer.save`` among them), and
``.update(`` / ``.set(`` / ``.add(`` / ``.remove(`` / ``.clear(`` on anything but a plain name (a queryset such as
``X.objects.filter(...).update(...)``, a related manager such as ``batch.workers.set(...)``; ``context.update(...)``
on a dict, ``seen.add(...)`` on a set are not writes). ``ALLOWED`` names the few calls that must stay, with why."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SURFACES = ("annotation/views", "api", "workers/management")
ALWAYS = {"save", "delete", "create", "get_or_create", "update_or_create", "bulk_create", "bulk_update"}
ON_OBJECTS = {"update", "set", "add", "remove", "clear"}

# "path:function name:method" → why it stays (none today: Django's own auth views save inside Django).
ALLOWED: dict[str, str] = {}


def writes(path: Path, root: Path = ROOT) -> list[str]:
    """``path:function:method`` of each write in the module (``<module>`` outside any function)."""
    found = []

    def visit(node, function: str) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, receiver = node.func.attr, node.func.value
            if method in ALWAYS or (method in ON_OBJECTS and not isinstance(receiver, ast.Name)):
                found.append(f"{path.relative_to(root)}:{function}:{method}")
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(path.read_text(), str(path)), "<module>")
    return found


def test_pages_api_and_commands_write_only_through_actions():
    found = sorted({site for surface in SURFACES for path in (ROOT / surface).rglob("*.py") for site in writes(path)})
    assert [site for site in found if site not in ALLOWED] == [], "write through a do_* of annotation.actions"


def test_the_lint_sees_a_write(tmp_path):
    source = tmp_path / "view.py"
    source.write_text(
        "def view(request, form, batch, context, seen):\n"
        "    form.save()\n"
        "    Batch.objects.filter(pk=1).update(name='x')\n"
        "    batch.workers.set([])\n"
        "    Token.objects.create(user=None)\n"
        "    context.update(a=1)\n"
        "    seen.add(1)\n"
    )
    expected = ["view.py:view:save", "view.py:view:update", "view.py:view:set", "view.py:view:create"]
    assert writes(source, tmp_path) == expected
