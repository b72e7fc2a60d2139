"""A project's split configuration and its report, shared by the API and the splits page.

The rules themselves are pure (``annotation/lib/splits.py``); this module reads the demos and checks a new
configuration before it is stored.
"""

from django.db import transaction

from ...lib import splits as split_rules
from ...models import Demonstration, DemoStatus, Role, SplitConfig
from ..errors import Forbidden, ValidationFailed

DEFAULT_STATUSES = (DemoStatus.VALIDATED,)
FRACTIONS = ("valid_fraction", "test_iid_fraction", "test_task_fraction")
HELD_OUT_LISTS = ("held_out_websites", "held_out_subcategories", "held_out_regions", "held_out_domains")
SEED_RANGE = (-(2**31), 2**31 - 1)  # the column's (a 32-bit integer): a larger seed must be refused, not wrapped
HELD_OUT_MAX_ENTRIES, HELD_OUT_MAX_CHARS = 1000, 200


def facts(demo: Demonstration) -> split_rules.DemoFacts:
    return split_rules.DemoFacts(
        name=demo.name,
        websites=tuple(demo.websites or ()),
        category=demo.category,
        subcategory=demo.subcategory,
        region=demo.region,
        instructor_sees_screen=demo.instructor_sees_screen,
    )


def selected_demos(project, statuses=DEFAULT_STATUSES):
    """The project's demonstrations with these statuses, ordered by name."""
    return (
        Demonstration.objects.filter(project=project, status__in=list(statuses))
        .select_related("project", "navigator", "instructor", "review", "assignment__task__proposal__website")
        .order_by("name")
    )


def split_of(project, scheme: str):
    """A function demo → split name under the project's current split configuration."""
    rules, assign = SplitConfig.for_project(project).rules(), split_rules.ASSIGN[scheme]
    return lambda demo: assign(facts(demo), rules)


def split_reports(project, statuses=DEFAULT_STATUSES) -> dict:
    """``{"weblinx": report, "mind2web": report}``: per-split counts and the leakage report of each scheme."""
    rules = SplitConfig.for_project(project).rules()
    demo_facts = [facts(demo) for demo in selected_demos(project, statuses)]
    return {scheme: split_rules.leakage_report(demo_facts, rules, scheme) for scheme in split_rules.SPLITS}


def split_config_errors(data: dict, instance=None) -> dict:
    """``{field: message}`` for a configuration change (``data`` may be partial; ``instance`` gives the rest)."""
    if "seed" in data:
        seed = data["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
            return {"seed": f"expected a whole number from {SEED_RANGE[0]} to {SEED_RANGE[1]}"}
    for field in FRACTIONS:
        value = data.get(field, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            return {field: "expected a fraction between 0 and 1"}
    valid = data.get("valid_fraction", getattr(instance, "valid_fraction", 0))
    test_iid = data.get("test_iid_fraction", getattr(instance, "test_iid_fraction", 0))
    if valid + test_iid > 1:
        return {"test_iid_fraction": "valid_fraction + test_iid_fraction exceed 1"}
    for field in HELD_OUT_LISTS:
        value = data.get(field)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return {field: "expected a list of strings"}
        if value is not None and len(value) > HELD_OUT_MAX_ENTRIES:
            return {field: f"at most {HELD_OUT_MAX_ENTRIES} entries"}
        if value is not None and any(len(v) > HELD_OUT_MAX_CHARS for v in value):
            return {field: f"each entry at most {HELD_OUT_MAX_CHARS} characters"}
    return {}


def check_split_config_changeable(user, project) -> None:
    """Only the project's admins change its split configuration (403 for its other members)."""
    if not project.has_role(user, (Role.ADMIN,)):
        raise Forbidden("only project admins change the split configuration")


def do_update_split_config(project, data: dict) -> SplitConfig:
    """Store a checked configuration, complete (the splits page) or partial (the API's PATCH: the rest is kept). The
    row is locked while the change is checked against it and applied: two changes at once both land, one after the
    other."""
    with transaction.atomic():
        config = SplitConfig.objects.select_for_update().get(pk=SplitConfig.for_project(project).pk)
        errors = split_config_errors(data, config)
        if errors:
            raise ValidationFailed(
                "; ".join(f"{field}: {message}" for field, message in errors.items()),
                [{"field": field, "message": message} for field, message in errors.items()],
            )
        changed = [field for field in ("seed", *FRACTIONS, *HELD_OUT_LISTS) if field in data]
        for field in changed:
            setattr(config, field, data[field])
        config.save(update_fields=changed or None)
    return config
