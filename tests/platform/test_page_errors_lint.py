"""The pages show an action's refusal one way: ``annotation/views/page_errors.py`` is the only module under
``annotation/views`` that catches an ``ActionError`` (or a subclass, or anything that would also catch one: a bare
``except``, ``Exception``); every other view says what a refusal becomes with its decorators and context managers.

One exception, named here: ``live_socket.py``, the live session's WebSocket consumer. It answers on a socket, not with
a page or a response: a refused message is an ``error`` frame on the open socket, a refused join closes it with its own
close code, and an ended access sends the socket its ``lost`` frame. None of ``page_errors``' answers (pages, messages,
forms, JSON responses) fits, so it keeps that mapping beside its protocol."""

import ast
import builtins
import importlib
from pathlib import Path

from annotation.actions import ActionError

VIEWS = Path(__file__).resolve().parents[2] / "annotation" / "views"
ALLOWED = {"page_errors.py", "live_socket.py"}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(VIEWS.parent.parent).with_suffix("").parts)


def resolve(node, namespace):
    """The object an except clause's expression names, looked up in the module's namespace (then the builtins)."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id, getattr(builtins, node.id, None))
    if isinstance(node, ast.Attribute):
        owner = resolve(node.value, namespace)
        return getattr(owner, node.attr, None)
    return None


def catches_refusals(handler: ast.ExceptHandler, namespace) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for kind in kinds:
        caught = resolve(kind, namespace)
        assert isinstance(caught, type), f"cannot tell what {ast.unparse(kind)} is"
        if issubclass(ActionError, caught) or issubclass(caught, ActionError):
            return True
    return False


def offending_sites() -> list[str]:
    found = []
    for path in sorted(VIEWS.rglob("*.py")):
        if path.name in ALLOWED and path.parent == VIEWS:
            continue
        module = importlib.import_module(module_name(path))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ExceptHandler) and catches_refusals(node, vars(module)):
                found.append(f"{path.relative_to(VIEWS.parent.parent)}:{node.lineno}")
    return found


def test_only_page_errors_catches_action_errors_in_views():
    assert offending_sites() == [], (
        "show a refusal with annotation/views/page_errors.py (action_errors, refusals_as_pages, refusals_as_404, "
        "json_action_errors, refusals_on_form, refusals_as_messages, refusal_kept) instead of catching it"
    )


def test_the_lint_sees_a_site():
    """The check finds what it forbids: an ``except`` of ActionError, of a subclass, of a tuple, bare, Exception."""
    namespace = {"ActionError": ActionError, "errors": importlib.import_module("annotation.actions.errors")}
    source = (
        "try:\n    pass\nexcept ActionError:\n    pass\n"
        "try:\n    pass\nexcept (ValueError, errors.Conflict):\n    pass\n"
        "try:\n    pass\nexcept:\n    pass\n"
        "try:\n    pass\nexcept Exception:\n    pass\n"
        "try:\n    pass\nexcept ValueError:\n    pass\n"
    )
    handlers = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ExceptHandler)]
    assert [catches_refusals(handler, namespace) for handler in handlers] == [True, True, True, True, False]
