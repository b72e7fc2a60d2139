"""Split assignment: out-of-domain rules, the seeded in-domain draw, stability, and the leakage report."""

import dataclasses

from annotation.lib.splits import (
    MIND2WEB_SPLITS,
    WEBLINX_SPLITS,
    DemoFacts,
    SplitRules,
    assign,
    leakage_report,
    mind2web_split,
    weblinx_split,
)

RULES = SplitRules(
    seed=3,
    held_out_websites=frozenset({"www.held-web.com"}),
    held_out_subcategories=frozenset({"Held cat"}),
    held_out_regions=frozenset({"Oceania"}),
    held_out_domains=frozenset({"Held domain"}),
)


def demo(name, **facts):
    base = {
        "websites": ("www.seen.com",),
        "category": "Shopping",
        "subcategory": "Groceries",
        "region": "Europe",
        "instructor_sees_screen": True,
    }
    return DemoFacts(name=name, **{**base, **facts})


def many(count, prefix="d"):
    return [demo(f"{prefix}{i:04d}") for i in range(count)]


def test_each_out_of_domain_rule_sends_a_demo_to_its_split():
    assert weblinx_split(demo("a", instructor_sees_screen=False), RULES) == "test_vis"
    assert weblinx_split(demo("b", subcategory="Held cat"), RULES) == "test_cat"
    assert weblinx_split(demo("c", websites=("www.seen.com", "www.held-web.com")), RULES) == "test_web"
    assert weblinx_split(demo("d", region="Oceania"), RULES) == "test_geo"


def test_vis_comes_before_the_other_held_out_rules():
    both = demo("e", instructor_sees_screen=False, subcategory="Held cat", region="Oceania")
    assert weblinx_split(both, RULES) == "test_vis"


def test_in_domain_fractions_follow_the_configuration():
    splits = assign(many(2000), RULES)
    assert 150 < len(splits["valid"]) < 250
    assert 150 < len(splits["test_iid"]) < 250
    assert len(splits["train"]) == 2000 - len(splits["valid"]) - len(splits["test_iid"])


def test_every_split_key_is_present_even_when_empty():
    assert tuple(assign([], RULES)) == WEBLINX_SPLITS
    assert tuple(assign([], RULES, "mind2web")) == MIND2WEB_SPLITS


def test_assignment_is_deterministic_and_depends_on_the_seed():
    demos = many(300)
    assert assign(demos, RULES) == assign(list(reversed(demos)), RULES)
    assert assign(demos, RULES) != assign(demos, dataclasses.replace(RULES, seed=4))


def test_adding_demos_never_moves_an_existing_demo():
    before = assign(many(200), RULES)
    after = assign(many(200) + many(500, prefix="new") + [demo("z", region="Oceania")], RULES)
    for split, names in before.items():
        assert set(names) <= set(after[split]), split


def test_mind2web_rules_hold_out_domains_then_websites_then_draw_tasks():
    assert mind2web_split(demo("a", category="Held domain"), RULES) == "test_domain"
    assert mind2web_split(demo("b", websites=("www.held-web.com",)), RULES) == "test_website"
    splits = assign(many(2000), RULES, "mind2web")
    assert 300 < len(splits["test_task"]) < 500
    assert not splits["test_domain"]
    assert not splits["test_website"]


def test_leakage_report_states_per_split_that_train_has_no_held_out_value():
    demos = many(50) + [
        demo("x", subcategory="Held cat"),
        demo("y", websites=("www.held-web.com",)),
        demo("w", region="Oceania"),
        demo("v", instructor_sees_screen=False),
    ]

    report = leakage_report(demos, RULES)

    assert report["ok"] is True
    assert report["counts"]["test_cat"] == report["counts"]["test_web"] == report["counts"]["test_geo"] == 1
    assert sum(report["counts"].values()) == len(demos)
    statements = {check["split"]: check["statement"] for check in report["checks"]}
    assert statements["test_web"] == "no held-out website of test_web occurs in train"
    assert statements["test_geo"] == "no held-out region of test_geo occurs in train"
    assert set(statements) == {"test_cat", "test_web", "test_geo", "test_vis"}


def test_holding_out_a_website_later_moves_its_demos_out_of_train_and_the_report_lists_it():
    demos = many(30) + [demo("other", websites=("www.other.com",))]
    rules = dataclasses.replace(RULES, held_out_websites=frozenset({"www.seen.com"}))

    report = leakage_report(demos, rules)

    check = next(c for c in report["checks"] if c["split"] == "test_web")
    assert report["counts"]["test_web"] == 30
    assert check["values"] == ["www.seen.com"]
    assert check["in_train"] == []
    assert report["ok"] is True
