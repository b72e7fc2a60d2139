"""Cohen's κ between two raters over the same items (scikit-learn's ``cohen_kappa_score``), undefined where it
says nothing: fewer than two items, or a single label among all the ratings (no variance: κ is 0/0 there)."""

import math

FEWER_THAN_TWO = "fewer than 2 items"
NO_VARIANCE = "no variance: every rating has the same label"


def cohen_kappa(first: list, second: list) -> dict:
    """``{"kappa": float or None, "items": n, "observed": share of items both rated alike or None, "undefined":
    None or why}`` for the two raters' labels (``first[i]`` and ``second[i]`` rate item i)."""
    if len(first) != len(second):
        raise ValueError("both raters must rate the same items")
    items = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / items if items else None
    if items < 2:
        return {"kappa": None, "items": items, "observed": observed, "undefined": FEWER_THAN_TWO}
    if len({*first, *second}) < 2:
        return {"kappa": None, "items": items, "observed": observed, "undefined": NO_VARIANCE}
    from sklearn.metrics import cohen_kappa_score  # here: scikit-learn takes a second to import, pages need it rarely

    kappa = float(cohen_kappa_score(first, second))
    if math.isnan(kappa):  # pragma: no cover - excluded above; kept so a NaN never reaches JSON
        return {"kappa": None, "items": items, "observed": observed, "undefined": NO_VARIANCE}
    return {"kappa": round(kappa, 6), "items": items, "observed": round(observed, 6), "undefined": None}
