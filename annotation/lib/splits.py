"""Benchmark split assignment (pure): which split a demonstration belongs to, and the leakage report.

A demo's split is a function of its own facts (websites, subcategory, region, whether the instructor saw the
screen, name) and the project's rules only, so adding demos never moves an existing one. Out-of-domain rules
come first, in this order; the in-domain draw is a hash of the seed and the demo name, uniform in [0, 1). A demo
with a fixed split (an imported release's split file, ``SplitRules.fixed``) keeps it before any rule.

WebLINX: test_vis (instructor could not see the screen), test_cat (held-out subcategory), test_web (a held-out
website), test_geo (held-out region), then valid / test_iid / train by the draw.
Mind2Web: test_domain (held-out domain = category), test_website (a held-out website), then test_task / train.
"""

import hashlib
from dataclasses import dataclass, field

WEBLINX_SPLITS = ("train", "valid", "test_iid", "test_web", "test_cat", "test_geo", "test_vis")
MIND2WEB_SPLITS = ("train", "test_task", "test_website", "test_domain")
SPLITS = {"weblinx": WEBLINX_SPLITS, "mind2web": MIND2WEB_SPLITS}


@dataclass(frozen=True)
class SplitRules:
    """A project's split configuration (``SplitConfig.rules()``)."""

    seed: int = 0
    valid_fraction: float = 0.1
    test_iid_fraction: float = 0.1
    held_out_websites: frozenset = field(default_factory=frozenset)
    held_out_subcategories: frozenset = field(default_factory=frozenset)
    held_out_regions: frozenset = field(default_factory=frozenset)
    held_out_domains: frozenset = field(default_factory=frozenset)
    test_task_fraction: float = 0.2
    fixed: dict = field(default_factory=dict)  # {scheme: {demo name: split}}: given splits (an imported release's)


@dataclass(frozen=True)
class DemoFacts:
    """What split assignment looks at."""

    name: str
    websites: tuple = ()
    category: str = ""
    subcategory: str = ""
    region: str = ""
    instructor_sees_screen: bool = True


def draw(seed: int, name: str) -> float:
    """A stable pseudo-random number in [0, 1) for this demo under this seed."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def weblinx_split(demo: DemoFacts, rules: SplitRules) -> str:
    if fixed := rules.fixed.get("weblinx", {}).get(demo.name):
        return fixed
    if not demo.instructor_sees_screen:
        return "test_vis"
    if demo.subcategory in rules.held_out_subcategories:
        return "test_cat"
    if rules.held_out_websites.intersection(demo.websites):
        return "test_web"
    if demo.region in rules.held_out_regions:
        return "test_geo"
    value = draw(rules.seed, demo.name)
    if value < rules.valid_fraction:
        return "valid"
    if value < rules.valid_fraction + rules.test_iid_fraction:
        return "test_iid"
    return "train"


def mind2web_split(demo: DemoFacts, rules: SplitRules) -> str:
    if fixed := rules.fixed.get("mind2web", {}).get(demo.name):
        return fixed
    if demo.category in rules.held_out_domains:
        return "test_domain"
    if rules.held_out_websites.intersection(demo.websites):
        return "test_website"
    return "test_task" if draw(rules.seed, demo.name) < rules.test_task_fraction else "train"


ASSIGN = {"weblinx": weblinx_split, "mind2web": mind2web_split}


def assign(demos, rules: SplitRules, scheme: str = "weblinx") -> dict[str, list[str]]:
    """``{split: [demo names]}`` with every split of the scheme present (possibly empty), names sorted."""
    splits = {name: [] for name in SPLITS[scheme]}
    for demo in demos:
        splits[ASSIGN[scheme](demo, rules)].append(demo.name)
    return {name: sorted(names) for name, names in splits.items()}


# What each out-of-domain split holds out, as (split, what, fact of a demo, held-out values of the rules).
HELD_OUT = {
    "weblinx": [
        ("test_cat", "subcategory", lambda d: {d.subcategory}, lambda r: r.held_out_subcategories),
        ("test_web", "website", lambda d: set(d.websites), lambda r: r.held_out_websites),
        ("test_geo", "region", lambda d: {d.region}, lambda r: r.held_out_regions),
    ],
    "mind2web": [
        ("test_domain", "domain", lambda d: {d.category}, lambda r: r.held_out_domains),
        ("test_website", "website", lambda d: set(d.websites), lambda r: r.held_out_websites),
    ],
}


def leakage_report(demos, rules: SplitRules, scheme: str = "weblinx") -> dict:
    """Per out-of-domain split: its held-out values, and which of them (none, if all is well) occur in train."""
    demos = list(demos)
    by_name = {demo.name: demo for demo in demos}
    splits = assign(demos, rules, scheme)
    train = [by_name[name] for name in splits["train"]]
    checks = []
    for split, what, facts, held in HELD_OUT[scheme]:
        held_out = set(held(rules)) | {v for name in splits[split] for v in facts(by_name[name]) if v in held(rules)}
        in_train = sorted({value for demo in train for value in facts(demo)} & held_out)
        checks.append(
            {
                "split": split,
                "held_out": what,
                "values": sorted(held_out),
                "in_train": in_train,
                "ok": not in_train,
                "statement": f"no held-out {what} of {split} occurs in train"
                if not in_train
                else f"held-out {what}(s) {', '.join(in_train)} of {split} occur in train",
            }
        )
    if scheme == "weblinx":
        seen = any(not by_name[name].instructor_sees_screen for name in splits["train"])
        checks.append(
            {
                "split": "test_vis",
                "held_out": "instructor_sees_screen",
                "values": [False],
                "in_train": [False] if seen else [],
                "ok": not seen,
                "statement": "no demo of train had an instructor without sight of the screen"
                if not seen
                else "train has demos whose instructor could not see the screen",
            }
        )
    counts = {name: len(names) for name, names in splits.items()}
    return {"scheme": scheme, "counts": counts, "checks": checks, "ok": all(c["ok"] for c in checks)}
